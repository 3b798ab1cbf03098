// CPU elementwise kernels: the single entry point; each part lives in elementwise_*.cpp.
#include "engine/backends/cpu/elementwise_internal.h"

namespace ms::cpu {
void register_elementwise_kernels(runtime::KernelRegistry& r) {
  elementwise::register_unary_kernels(r);
  elementwise::register_activation_kernels(r);
  elementwise::register_arith_kernels(r);
  elementwise::register_compare_kernels(r);
  elementwise::register_variadic_kernels(r);
  elementwise::register_cast_kernels(r);
}
}  // namespace ms::cpu
