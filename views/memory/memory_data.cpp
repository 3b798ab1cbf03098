#include "views/memory/memory_data.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

namespace ms::views {

std::string format_bytes(double b) {
  char buf[32];
  const char* unit[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) {
    b /= 1024;
    ++u;
  }
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : (b < 10 ? "%.2f %s" : "%.1f %s"), b, unit[u]);
  return buf;
}

namespace {

// Live-bytes step curve, peak, reuse counts and fragmentation from the blocks.
void finish_panel(MemPanel& p) {
  std::map<double, int64_t> delta;
  std::map<uint64_t, int> reuse;
  for (const auto& b : p.blocks) {
    delta[b.x0] += static_cast<int64_t>(b.bytes);
    delta[b.x1] -= static_cast<int64_t>(b.bytes);
    ++reuse[b.y];
  }
  int64_t live = 0;
  p.live.clear();
  for (const auto& [x, d] : delta) {
    live += d;
    p.live.emplace_back(x, static_cast<uint64_t>(std::max<int64_t>(0, live)));
    if (static_cast<uint64_t>(live) > p.peak_bytes && live > 0) {
      p.peak_bytes = static_cast<uint64_t>(live);
      p.peak_x = x;
    }
  }
  for (auto& b : p.blocks) b.reuse = reuse[b.y];
  p.mean_reuse = reuse.empty() ? 0 : static_cast<double>(p.blocks.size()) / static_cast<double>(reuse.size());
  if (p.lower_bound == 0) p.lower_bound = p.peak_bytes;
  for (const auto& b : p.blocks) p.size_bytes = std::max(p.size_bytes, b.y + b.bytes);
  p.fragmentation = p.size_bytes ? 1.0 - static_cast<double>(p.peak_bytes) / static_cast<double>(p.size_bytes) : 0;
  if (p.fragmentation < 0) p.fragmentation = 0;
}

}  // namespace

MemPanel memory_panel_from_trace(const prof::Trace& t, const std::string& title) {
  MemPanel p;
  p.title = title;
  if (t.blocks.empty()) return p;
  int iter = t.blocks.front().iteration;
  for (const auto& b : t.blocks) iter = std::min(iter, b.iteration);
  // Op starts of that iteration (host ops; kernels would count twice).
  std::vector<int64_t> starts;
  for (const auto& e : t.events)
    if (e.kind == prof::EventKind::Op && e.iteration == iter) starts.push_back(e.ts_ns);
  std::sort(starts.begin(), starts.end());
  auto x_of = [&](int64_t ns) {
    return static_cast<double>(std::upper_bound(starts.begin(), starts.end(), ns) - starts.begin());
  };
  p.x_max = std::max<double>(1, static_cast<double>(starts.size()));
  std::unordered_map<uint64_t, const prof::NodeInfo*> by_id;
  for (const auto& n : t.nodes) by_id[n.id] = &n;

  std::vector<const prof::MemoryBlock*> blocks;
  uint64_t arena_end = 0;
  for (const auto& b : t.blocks)
    if (b.iteration == iter) {
      blocks.push_back(&b);
      if (b.arena) arena_end = std::max(arena_end, b.address + b.bytes);
    }
  p.arena = arena_end > 0;
  arena_end = std::max<uint64_t>(arena_end, static_cast<uint64_t>(t.meta_number("arena_bytes", 0)));
  // Allocator addresses are scattered over the address space: overlapping ranges form extents that
  // are stacked (above the arena) so reuse of an address stays visible without the gaps.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto* b : blocks)
    if (!b->arena) ranges.emplace_back(b->address, b->address + std::max<uint64_t>(1, b->bytes));
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint64_t, uint64_t>> extents;  // (start, end)
  for (const auto& r : ranges) {
    if (!extents.empty() && r.first < extents.back().second) extents.back().second = std::max(extents.back().second, r.second);
    else extents.push_back(r);
  }
  std::vector<uint64_t> base(extents.size());
  uint64_t y = arena_end;
  for (size_t i = 0; i < extents.size(); ++i) {
    base[i] = y;
    y += extents[i].second - extents[i].first;
  }
  for (const auto* b : blocks) {
    MemBlock m;
    m.bytes = b->bytes;
    if (b->arena) m.y = b->address;
    else {
      auto it = std::upper_bound(extents.begin(), extents.end(), std::make_pair(b->address, UINT64_MAX)) - 1;
      const size_t i = static_cast<size_t>(it - extents.begin());
      m.y = base[i] + (b->address - extents[i].first);
    }
    m.x0 = std::max(0.0, x_of(b->alloc_ns) - 1);
    m.x1 = b->free_ns < 0 ? p.x_max : std::max(m.x0 + 1, x_of(b->free_ns));
    m.node = b->producer;
    m.value = std::string(t.str(b->value));
    if (auto it = by_id.find(b->producer); it != by_id.end()) {
      m.op = it->second->op;
      m.node_name = it->second->name;
      m.origins = it->second->origins;
    }
    if (m.value.empty()) m.value = "(scratch)";
    p.blocks.push_back(std::move(m));
  }
  finish_panel(p);
  p.size_bytes = std::max(p.size_bytes, y);
  return p;
}

MemPanel memory_panel_from_plan(const runtime::MemoryPlan& plan, const prof::Trace* names, const std::string& title) {
  MemPanel p;
  p.title = title;
  p.arena = true;
  std::unordered_map<uint64_t, const prof::NodeInfo*> by_id;
  if (names)
    for (const auto& n : names->nodes) by_id[n.id] = &n;
  int steps = 1;
  for (const auto& s : plan.slots) steps = std::max(steps, s.last_step + 1);
  p.x_max = steps;
  for (const auto& s : plan.slots) {
    MemBlock m;
    m.x0 = s.first_step;
    m.x1 = std::max(s.first_step + 1, s.last_step + 1);
    m.y = s.offset;
    m.bytes = s.bytes;
    m.node = s.producer.value;
    m.value = s.value;
    if (auto it = by_id.find(m.node); it != by_id.end()) {
      m.op = it->second->op;
      m.node_name = it->second->name;
      m.origins = it->second->origins;
    }
    p.blocks.push_back(std::move(m));
  }
  p.lower_bound = plan.lower_bound;
  finish_panel(p);
  p.size_bytes = std::max<uint64_t>(p.size_bytes, plan.arena_bytes);
  p.fragmentation = p.size_bytes ? std::max(0.0, 1.0 - static_cast<double>(p.peak_bytes) / static_cast<double>(p.size_bytes)) : 0;
  return p;
}

}  // namespace ms::views
