// Allocation fault injection (alloc_error.h): a countdown shared by every allocating thread.
#include <atomic>

#include "engine/core/alloc_error.h"

namespace ms {
namespace {
std::atomic<int64_t> g_countdown{0};
std::atomic<bool> g_fired{false};
}  // namespace

void arm_allocation_fault(int64_t nth) {
  g_fired.store(false);
  g_countdown.store(nth > 0 ? nth : 0);
}

bool allocation_fault_fired() { return g_fired.load(); }

bool take_allocation_fault() {
  if (g_countdown.load(std::memory_order_relaxed) <= 0) return false;
  if (g_countdown.fetch_sub(1) != 1) return false;
  g_fired.store(true);
  return true;
}

}  // namespace ms
