#include "profiler/analysis/memory_analysis.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace ms::prof {

MemoryAnalysis analyze_memory(const Trace& t, size_t top) {
  MemoryAnalysis m;
  m.blocks = static_cast<int64_t>(t.blocks.size());
  // Sweep: frees before allocs at the same instant (a block handed back and reused at once).
  std::vector<std::pair<int64_t, int64_t>> deltas;  // (time, +/-bytes)
  deltas.reserve(t.blocks.size() * 2);
  for (const auto& b : t.blocks) {
    deltas.emplace_back(b.alloc_ns, static_cast<int64_t>(b.bytes));
    if (b.free_ns >= 0) deltas.emplace_back(b.free_ns, -static_cast<int64_t>(b.bytes));
  }
  std::sort(deltas.begin(), deltas.end());
  int64_t live = 0;
  for (size_t i = 0; i < deltas.size(); ++i) {
    live += deltas[i].second;
    if (i + 1 < deltas.size() && deltas[i + 1].first == deltas[i].first) continue;
    if (live > static_cast<int64_t>(m.peak_live_bytes)) {
      m.peak_live_bytes = static_cast<uint64_t>(live);
      m.peak_ns = deltas[i].first;
    }
  }
  m.lower_bound_bytes = m.peak_live_bytes;
  m.planned_lower_bound = static_cast<uint64_t>(t.meta_number("planned_lower_bound", 0));
  m.arena_bytes = static_cast<uint64_t>(t.meta_number("arena_bytes", 0));

  // Regions: one per (arena?, address); allocator blocks at one address are one cached block reused.
  std::map<std::pair<bool, uint64_t>, RegionReuse> regions;
  uint64_t arena_extent = 0;
  for (const auto& b : t.blocks) {
    RegionReuse& r = regions[{b.arena, b.address}];
    r.address = b.address;
    r.arena = b.arena;
    r.bytes = std::max(r.bytes, b.bytes);
    ++r.uses;
    if (b.arena) arena_extent = std::max(arena_extent, b.address + b.bytes);
  }
  uint64_t heap = 0;
  for (const auto& [key, r] : regions)
    if (!r.arena) heap += r.bytes;
  m.footprint_bytes = std::max(m.arena_bytes, arena_extent) + heap;
  m.fragmentation = m.footprint_bytes > 0
                        ? static_cast<double>(m.footprint_bytes - std::min(m.footprint_bytes, m.peak_live_bytes)) /
                              static_cast<double>(m.footprint_bytes)
                        : 0;
  m.regions = static_cast<int64_t>(regions.size());
  m.mean_reuse = regions.empty() ? 0 : static_cast<double>(m.blocks) / static_cast<double>(regions.size());
  for (const auto& [key, r] : regions) m.top_regions.push_back(r);
  std::stable_sort(m.top_regions.begin(), m.top_regions.end(), [](const RegionReuse& a, const RegionReuse& b) {
    return a.uses != b.uses ? a.uses > b.uses : a.bytes > b.bytes;
  });
  if (m.top_regions.size() > 20) m.top_regions.resize(20);

  std::unordered_map<uint64_t, const NodeInfo*> by_id;
  for (const auto& n : t.nodes) by_id.emplace(n.id, &n);
  for (const auto& b : t.blocks) {
    const bool live_at_peak = b.alloc_ns <= m.peak_ns && (b.free_ns < 0 || b.free_ns > m.peak_ns);
    if (!live_at_peak || m.peak_live_bytes == 0) continue;
    PeakContributor c;
    c.value = b.value ? std::string(t.str(b.value)) : "(scratch)";  // kernel workspace has no value
    c.producer = b.producer;
    c.bytes = b.bytes;
    auto it = by_id.find(b.producer);
    if (it != by_id.end()) {
      c.producer_name = it->second->name;
      c.op = it->second->op;
    }
    m.top_at_peak.push_back(std::move(c));
  }
  std::stable_sort(m.top_at_peak.begin(), m.top_at_peak.end(),
                   [](const PeakContributor& a, const PeakContributor& b) { return a.bytes > b.bytes; });
  if (m.top_at_peak.size() > top) m.top_at_peak.resize(top);
  return m;
}

}  // namespace ms::prof
