#include "engine/runtime/executable.h"

namespace ms::runtime {

bool BranchPlan::before(int x, int y) const {
  if (x == y || y < 0 || x < 0) return false;
  if (pred.empty()) return x < y;  // one thread: program order
  return (pred[static_cast<size_t>(y)][static_cast<size_t>(x) / 64] >> (x % 64)) & 1u;
}

}  // namespace ms::runtime
