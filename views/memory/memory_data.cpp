#include "views/memory/memory_data.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <map>
#include <unordered_map>

namespace ms::views {

namespace {

// Step curve of live bytes from block intervals [a, b).
template <class Start, class End>
std::vector<std::pair<double, uint64_t>> live_curve(const std::vector<MemBlock>& blocks, Start start, End end) {
  std::map<double, int64_t> delta;
  for (const auto& b : blocks) {
    delta[start(b)] += static_cast<int64_t>(b.bytes);
    delta[end(b)] -= static_cast<int64_t>(b.bytes);
  }
  std::vector<std::pair<double, uint64_t>> curve;
  int64_t live = 0;
  for (const auto& [x, d] : delta) {
    live += d;
    curve.emplace_back(x, static_cast<uint64_t>(std::max<int64_t>(0, live)));
  }
  return curve;
}

// Live-bytes step curve, peak, reuse counts and fragmentation from the blocks.
void finish_panel(MemPanel& p) {
  std::map<uint64_t, int> reuse;
  for (const auto& b : p.blocks) ++reuse[b.y];
  p.live = live_curve(
      p.blocks, [](const MemBlock& b) { return b.x0; }, [](const MemBlock& b) { return b.x1; });
  if (p.timed)
    p.live_t = live_curve(
        p.blocks, [](const MemBlock& b) { return b.t0; }, [](const MemBlock& b) { return b.t1; });
  for (const auto& [x, v] : p.live)
    if (v > p.peak_bytes) {
      p.peak_bytes = v;
      p.peak_x = x;
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
  // The iteration's clock: from its first op (or allocation) to its last op end (or free).
  int64_t t_begin = starts.empty() ? INT64_MAX : starts.front(), t_end = INT64_MIN;
  for (const auto& e : t.events)
    if (e.kind == prof::EventKind::Op && e.iteration == iter) t_end = std::max(t_end, e.end_ns());
  for (const auto& b : t.blocks)
    if (b.iteration == iter) {
      t_begin = std::min(t_begin, b.alloc_ns);
      t_end = std::max({t_end, b.alloc_ns, b.free_ns});
    }
  const double us_max = std::max(1e-3, static_cast<double>(t_end - t_begin) / 1e3);
  auto us_of = [&](int64_t ns) { return static_cast<double>(ns - t_begin) / 1e3; };
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
    if (!extents.empty() && r.first < extents.back().second)
      extents.back().second = std::max(extents.back().second, r.second);
    else
      extents.push_back(r);
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
    if (b->arena)
      m.y = b->address;
    else {
      auto it = std::upper_bound(extents.begin(), extents.end(), std::make_pair(b->address, UINT64_MAX)) - 1;
      const size_t i = static_cast<size_t>(it - extents.begin());
      m.y = base[i] + (b->address - extents[i].first);
    }
    m.x0 = std::max(0.0, x_of(b->alloc_ns) - 1);
    m.x1 = b->free_ns < 0 ? p.x_max : std::max(m.x0 + 1, x_of(b->free_ns));
    m.t0 = us_of(b->alloc_ns);
    m.t1 = b->free_ns < 0 ? us_max : std::max(m.t0 + us_max * 1e-4, us_of(b->free_ns));
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
  p.timed = true;
  p.t_max = us_max;
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
  // Step s runs at the s-th op start of the Graph run's first iteration: the plan on the µs axis.
  std::vector<double> step_us;
  if (names) {
    int iter = INT32_MAX;
    for (const auto& e : names->events)
      if (e.kind == prof::EventKind::Op) iter = std::min(iter, e.iteration);
    std::vector<std::pair<int64_t, int64_t>> ops;  // (start, end)
    for (const auto& e : names->events)
      if (e.kind == prof::EventKind::Op && e.iteration == iter) ops.emplace_back(e.ts_ns, e.end_ns());
    std::sort(ops.begin(), ops.end());
    if (static_cast<int>(ops.size()) >= steps) {
      int64_t end = ops.front().first;
      for (const auto& o : ops) end = std::max(end, o.second);
      for (int s = 0; s < steps; ++s)
        step_us.push_back(static_cast<double>(ops[static_cast<size_t>(s)].first - ops.front().first) / 1e3);
      step_us.push_back(static_cast<double>(end - ops.front().first) / 1e3);
    }
  }
  auto us_at = [&](double step) {
    const size_t s = static_cast<size_t>(std::clamp(step, 0.0, static_cast<double>(step_us.size() - 1)));
    return step_us[s];
  };
  for (const auto& s : plan.slots) {
    MemBlock m;
    m.x0 = s.first_step;
    m.x1 = std::max(s.first_step + 1, s.last_step + 1);
    m.y = s.offset;
    m.bytes = s.bytes;
    m.node = s.producer.value;
    m.value = s.value;
    if (!step_us.empty()) {
      m.t0 = us_at(m.x0);
      m.t1 = std::max(us_at(m.x1), m.t0 + 1e-3);
    }
    if (auto it = by_id.find(m.node); it != by_id.end()) {
      m.op = it->second->op;
      m.node_name = it->second->name;
      m.origins = it->second->origins;
    }
    p.blocks.push_back(std::move(m));
  }
  p.lower_bound = plan.lower_bound;
  p.timed = !step_us.empty();
  p.t_max = p.timed ? std::max(step_us.back(), 1e-3) : 0;
  finish_panel(p);
  p.size_bytes = std::max<uint64_t>(p.size_bytes, plan.arena_bytes);
  p.fragmentation =
      p.size_bytes ? std::max(0.0, 1.0 - static_cast<double>(p.peak_bytes) / static_cast<double>(p.size_bytes)) : 0;
  return p;
}

}  // namespace ms::views
