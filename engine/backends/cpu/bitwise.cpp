// CPU kernels: BitwiseAnd/Or/Xor/Not, BitCast.
#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu {

void register_bitwise_kernels(runtime::KernelRegistry& r) { (void)r; }

}  // namespace ms::cpu
