// Checks on memory plans shared by the planner tests.
#pragma once

#include <gtest/gtest.h>

#include "engine/runtime/executor.h"

namespace ms::testing {

// No two slots live at one step share a byte (plans without slots nested `within` another).
inline void expect_no_overlap(const runtime::MemoryPlan& p) {
  for (size_t i = 0; i < p.slots.size(); ++i)
    for (size_t j = i + 1; j < p.slots.size(); ++j) {
      const auto& x = p.slots[i];
      const auto& y = p.slots[j];
      const bool time_overlap = !(x.last_step < y.first_step || y.last_step < x.first_step);
      const bool mem_overlap = x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
      EXPECT_FALSE(time_overlap && mem_overlap) << x.value << " and " << y.value;
    }
}

}  // namespace ms::testing
