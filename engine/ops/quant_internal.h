// Private to the quantization schema files (ops/quant*.cpp).
#pragma once

#include "engine/ops/nn_internal.h"

namespace ms::ops::quant {

// quant_int.cpp: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
void register_quant_int_ops(Registry& r);

}  // namespace ms::ops::quant
