// The elementwise family: unary, activations, binary with broadcasting, variadic, Where, Cast.
// Each part lives in its own file (elementwise_*.cpp); this is the single entry point.
#include "engine/ops/elementwise_internal.h"
#include "engine/ops/families.h"

namespace ms::ops {
void register_elementwise_ops(Registry& r) {
  elementwise::register_unary_ops(r);
  elementwise::register_activation_ops(r);
  elementwise::register_binary_ops(r);
  elementwise::register_variadic_ops(r);
  elementwise::register_cast_ops(r);
}
}  // namespace ms::ops
