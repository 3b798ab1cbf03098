#include "engine/ops/families.h"

namespace ms::ops {
void register_control_ops(Registry& r) { (void)r; }
}  // namespace ms::ops
