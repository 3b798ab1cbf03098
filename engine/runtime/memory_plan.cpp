// Static memory plan: liveness of every statically shaped intermediate, then offsets in one arena
// by greedy placement, largest first, into the lowest gap that no time-overlapping block uses.
#include "engine/runtime/memory_plan.h"

#include <algorithm>

namespace ms::runtime {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

MemoryPlan plan_memory(std::vector<MemorySlot> slots, uint64_t alignment) {
  MemoryPlan plan;
  // Lower bound: max over steps of bytes live at that step.
  int last_step = 0;
  for (const auto& s : slots) last_step = std::max(last_step, s.last_step);
  std::vector<uint64_t> live(static_cast<size_t>(last_step) + 2, 0);
  for (const auto& s : slots)
    for (int t = s.first_step; t <= s.last_step; ++t) live[static_cast<size_t>(t)] += align_up(s.bytes, alignment);
  for (uint64_t l : live) plan.lower_bound = std::max(plan.lower_bound, l);

  std::vector<size_t> order(slots.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (slots[a].bytes != slots[b].bytes) return slots[a].bytes > slots[b].bytes;
    return slots[a].first_step < slots[b].first_step;
  });
  std::vector<size_t> placed;
  for (size_t idx : order) {
    MemorySlot& s = slots[idx];
    const uint64_t size = align_up(std::max<uint64_t>(s.bytes, 1), alignment);
    // Blocks overlapping in time, sorted by offset; first gap that fits.
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t p : placed) {
      const MemorySlot& o = slots[p];
      if (o.last_step < s.first_step || s.last_step < o.first_step) continue;
      busy.emplace_back(o.offset, o.offset + align_up(std::max<uint64_t>(o.bytes, 1), alignment));
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + size <= b) break;
      offset = std::max(offset, e);
    }
    s.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
    placed.push_back(idx);
  }
  plan.slots = std::move(slots);
  return plan;
}

}  // namespace ms::runtime
