// Schemas: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger.
#include "engine/ops/families.h"

namespace ms::ops {

void register_quant_ops(Registry& r) { (void)r; }

}  // namespace ms::ops
