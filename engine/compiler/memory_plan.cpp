// Static memory plan: blocks from liveness (a value, or a chain of values written in place over
// each other), then offsets in one arena: blocks in some order, each into the best-fitting gap
// (smallest gap that holds it) among blocks overlapping it in time. The lower bound is the most bytes
// ever live at one step; greedy by decreasing size usually lands within a few percent of it, and
// other orders and a local search over the order close most of the rest.
#include "engine/compiler/memory_plan.h"

#include "engine/compiler/work.h"

#include <algorithm>
#include <random>
#include <set>

namespace ms::compiler {

std::vector<size_t> inplace_inputs(const ir::Node& n) {
  static const std::set<std::string> unary = {
      "Relu",     "LeakyRelu", "Sigmoid", "Tanh", "Elu",        "Selu", "Clip",        "Exp",
      "Log",      "Neg",       "Abs",     "Sqrt", "Reciprocal", "Erf",  "HardSigmoid", "HardSwish",
      "Softplus", "Softsign",  "Floor",   "Ceil", "Round",      "Sin",  "Cos",         "ThresholdedRelu",
      "Celu",     "Gelu",      "Mish",    "Sign"};
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu"};
  if (n.domain.empty()) {
    if (unary.count(n.op_type)) return {0};
    if (binary.count(n.op_type)) return {0, 1};
    return {};
  }
  if (n.domain == "ai.modescope") {
    // Output 0 over input 0 (with a reduction alone, output 0 is smaller and the shape check refuses).
    if (n.op_type == "FusedElementwise") return {0};
    // The residual of a FusedConv is summed by a oneDNN post-op into the output (blocked or plain
    // layout): in place saves a copy. The kernel's fallbacks copy a residual that shares the output.
    if (n.op_type == "FusedConv") return {3};
  }
  return {};
}

MemoryPlan plan_memory(std::vector<MemorySlot> slots, const std::vector<std::pair<size_t, size_t>>& inplace,
                       uint64_t alignment) {
  compiler::WorkCounters& work = compiler::work();
  MemoryPlan plan;
  const size_t n = slots.size();
  auto size_of = [&](size_t i) { return align_up(std::max<uint64_t>(slots[i].bytes, 1), alignment); };
  for (size_t i = 0; i < n; ++i) plan.naive_bytes += size_of(i);

  // Blocks: each slot starts alone; an in-place pair appends b to a's block when a ends it.
  std::vector<size_t> block(n);
  for (size_t i = 0; i < n; ++i) block[i] = i;
  std::vector<size_t> tail(n);  // per block root: its last slot
  for (size_t i = 0; i < n; ++i) tail[i] = i;
  std::vector<char> taken(n, 0);  // b already joined some block
  // Slots inside another one (a Concat's inputs written straight into its output): the outermost
  // one's block, at the summed offset. They take no part in in-place chains.
  std::vector<int> outer(n, -1);
  std::vector<uint64_t> rel(n, 0);
  for (size_t i = 0; i < n; ++i) {
    int o = slots[i].within;
    uint64_t off = slots[i].within_offset;
    for (int guard = 0; o >= 0 && static_cast<size_t>(o) < n && guard < 64; ++guard) {
      outer[i] = o;
      rel[i] = off;
      off += slots[static_cast<size_t>(o)].within_offset;
      o = slots[static_cast<size_t>(o)].within;
    }
  }
  for (const auto& [a, b] : inplace) {
    if (a >= n || b >= n || a == b || taken[b] || block[b] != b || tail[b] != b) continue;
    if (outer[a] >= 0 || outer[b] >= 0) continue;
    const size_t root = block[a];
    if (tail[root] != a || size_of(a) != size_of(b) || slots[a].last_step != slots[b].first_step) continue;
    block[b] = root;
    tail[root] = b;
    taken[b] = 1;
    slots[b].reuses = slots[a].value;
  }
  struct Block {
    uint64_t size = 0;
    int first = 0, last = 0;
    uint64_t offset = 0;
    bool used = false;
  };
  for (size_t i = 0; i < n; ++i)
    if (outer[i] >= 0) block[i] = block[static_cast<size_t>(outer[i])];
  std::vector<Block> blocks(n);
  for (size_t i = 0; i < n; ++i) {
    Block& bl = blocks[block[i]];
    if (!bl.used) {
      bl.used = true;
      bl.first = slots[i].first_step;
      bl.last = slots[i].last_step;
    }
    bl.size = std::max(bl.size, rel[i] + size_of(i));
    bl.first = std::min(bl.first, slots[i].first_step);
    bl.last = std::max(bl.last, slots[i].last_step);
  }
  std::vector<size_t> roots;
  for (size_t i = 0; i < n; ++i)
    if (blocks[i].used) roots.push_back(i);

  // Lower bound: max over steps of the bytes of blocks live at that step.
  int last_step = 0;
  for (size_t r : roots) last_step = std::max(last_step, blocks[r].last);
  std::vector<uint64_t> live(static_cast<size_t>(last_step) + 2, 0);
  {
    // Bytes starting and ending at each step, summed along the steps (a difference array).
    std::vector<uint64_t> ends(live.size() + 1, 0);
    for (size_t r : roots) {
      live[static_cast<size_t>(blocks[r].first)] += blocks[r].size;
      ends[static_cast<size_t>(blocks[r].last) + 1] += blocks[r].size;
    }
    uint64_t running = 0;
    for (size_t t = 0; t < live.size(); ++t) {
      running = running + live[t] - ends[t];
      live[t] = running;
    }
  }
  work.planner_steps += roots.size() + live.size();
  for (uint64_t l : live) plan.lower_bound = std::max(plan.lower_bound, l);
  live.resize(static_cast<size_t>(last_step) + 1);
  plan.live = std::move(live);

  // Placement in one order: each block into the best-fitting gap among the blocks already placed
  // that overlap it in time (the smallest gap that holds it), else above them. Returns the arena,
  // or UINT64_MAX as soon as it would exceed `limit`. The placed blocks overlapping [first, last]
  // come from an index rather than a test of every placed block: those that started at or before
  // `first` and are still live then (a segment tree over the steps, stabbed at `first`) and those
  // that start within (first, last] (placed blocks by first step). A placement costs
  // O(blocks x log steps + overlapping pairs), not O(blocks^2).
  const size_t steps = static_cast<size_t>(last_step) + 1;
  size_t leaves = 1;
  while (leaves < steps) leaves *= 2;
  std::vector<std::vector<size_t>> cover(2 * leaves);  // tree node -> blocks covering its whole range
  std::vector<size_t> touched;                         // tree nodes with blocks (cleared per placement)
  std::vector<std::vector<size_t>> starting(steps);    // step -> placed blocks that start there
  std::set<int> start_steps;                           // steps with a placed block starting there
  auto cover_range = [&](size_t r) {
    size_t lo = static_cast<size_t>(blocks[r].first) + leaves, hi = static_cast<size_t>(blocks[r].last) + leaves + 1;
    for (; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) {
        if (cover[lo].empty()) touched.push_back(lo);
        cover[lo++].push_back(r);
      }
      if (hi & 1) {
        if (cover[--hi].empty()) touched.push_back(hi);
        cover[hi].push_back(r);
      }
    }
  };
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  uint64_t pairs = 0;  // overlapping pairs met in the last placement
  auto place = [&](const std::vector<size_t>& order, uint64_t limit) {
    for (size_t t : touched) cover[t].clear();
    touched.clear();
    for (int st : start_steps) starting[static_cast<size_t>(st)].clear();
    start_steps.clear();
    pairs = 0;
    uint64_t arena = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      Block& bl = blocks[order[k]];
      busy.clear();
      for (size_t node = static_cast<size_t>(bl.first) + leaves; node >= 1; node /= 2)
        for (size_t q : cover[node]) busy.emplace_back(blocks[q].offset, blocks[q].offset + blocks[q].size);
      for (auto it = start_steps.upper_bound(bl.first); it != start_steps.end() && *it <= bl.last; ++it)
        for (size_t q : starting[static_cast<size_t>(*it)])
          busy.emplace_back(blocks[q].offset, blocks[q].offset + blocks[q].size);
      pairs += busy.size();
      std::sort(busy.begin(), busy.end());
      uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
      for (const auto& [b, e] : busy) {
        if (b > cursor && b - cursor >= bl.size && b - cursor < best_gap) {
          best = cursor;
          best_gap = b - cursor;
        }
        cursor = std::max(cursor, e);
      }
      bl.offset = best != UINT64_MAX ? best : cursor;
      arena = std::max(arena, bl.offset + bl.size);
      cover_range(order[k]);
      if (starting[static_cast<size_t>(bl.first)].empty()) start_steps.insert(bl.first);
      starting[static_cast<size_t>(bl.first)].push_back(order[k]);
      if (arena > limit) {
        work.planner_steps += k + 1 + pairs;
        return UINT64_MAX;
      }
    }
    work.planner_steps += order.size() + pairs;
    return arena;
  };
  // Greedy by size (ties: longer lifetime, then earlier) is the usual best; large transient blocks
  // (kernel scratch) can leave it above the lower bound, where placing by size x lifetime or in
  // time order may do better. Each order is tried and the smallest arena kept (the first of equal
  // ones).
  auto dur = [&](size_t r) { return static_cast<uint64_t>(blocks[r].last - blocks[r].first + 1); };
  std::vector<std::vector<size_t>> orders(3, roots);
  std::stable_sort(orders[0].begin(), orders[0].end(), [&](size_t a, size_t b) {
    if (blocks[a].size != blocks[b].size) return blocks[a].size > blocks[b].size;
    if (dur(a) != dur(b)) return dur(a) > dur(b);
    return blocks[a].first < blocks[b].first;
  });
  std::stable_sort(orders[1].begin(), orders[1].end(), [&](size_t a, size_t b) {
    const uint64_t ka = blocks[a].size * dur(a), kb = blocks[b].size * dur(b);
    if (ka != kb) return ka > kb;
    return blocks[a].size > blocks[b].size;
  });
  std::stable_sort(orders[2].begin(), orders[2].end(), [&](size_t a, size_t b) {
    if (blocks[a].first != blocks[b].first) return blocks[a].first < blocks[b].first;
    return blocks[a].size > blocks[b].size;
  });
  std::vector<size_t> order = orders[0];
  uint64_t arena = UINT64_MAX;
  bool placed = false;         // the blocks' offsets are those of `order` (no placement needed at the end)
  uint64_t per_placement = 0;  // overlapping pairs of a whole placement (the same for any order)
  for (auto& o : orders) {
    const uint64_t a = place(o, UINT64_MAX);
    per_placement = pairs;
    placed = a < arena;
    if (placed) {
      arena = a;
      order = o;
    }
    if (arena <= plan.lower_bound) break;
  }
  // Still above the lower bound: a local search from the best order. One block moves to another
  // place in the order (a seeded generator, so a graph always gets the same plan); the move stays
  // when the arena does not grow. Until the lower bound or about 4e7 overlap tests (a few ms):
  // resnet50 at batch 8 with Winograd's scratch goes from 42.9 MiB to its lower bound, 40.4 MiB.
  // A try costs about what a whole placement did (blocks + overlapping pairs), so the search is
  // bounded by the budget whatever the graph's size (and a larger graph gets fewer tries).
  if (arena > plan.lower_bound && order.size() > 2) {
    std::mt19937 rng(20261201);
    const uint64_t per = static_cast<uint64_t>(order.size()) + per_placement;
    const uint64_t tries = std::min<uint64_t>(8000, 40'000'000 / per);
    std::vector<size_t> cand;
    for (uint64_t t = 0; t < tries && arena > plan.lower_bound; ++t) {
      const size_t i = rng() % order.size(), j = rng() % order.size();
      if (i == j) continue;
      cand = order;
      const size_t moved = cand[i];
      cand.erase(cand.begin() + static_cast<std::ptrdiff_t>(i));
      cand.insert(cand.begin() + static_cast<std::ptrdiff_t>(j), moved);
      const uint64_t a = place(cand, arena);
      placed = a <= arena;
      if (placed) {
        arena = a;
        order.swap(cand);
      }
    }
  }
  if (!placed) place(order, UINT64_MAX);
  plan.arena_bytes = arena;
  for (size_t i = 0; i < n; ++i) slots[i].offset = blocks[block[i]].offset + rel[i];
  plan.slots = std::move(slots);
  return plan;
}

}  // namespace ms::compiler
