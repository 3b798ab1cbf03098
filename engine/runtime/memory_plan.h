#pragma once

#include <vector>

#include "engine/runtime/executor.h"

namespace ms::runtime {
uint64_t align_up(uint64_t v, uint64_t a);
// Assigns offsets to `slots` (value, bytes, first/last step filled in); returns the plan.
MemoryPlan plan_memory(std::vector<MemorySlot> slots, uint64_t alignment = 64);
}  // namespace ms::runtime
