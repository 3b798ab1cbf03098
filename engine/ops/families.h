// One registration function per op family (one file or a few per family under ops/).
#pragma once

#include "engine/ops/schema.h"

namespace ms::ops {
void register_elementwise_ops(Registry& r);  // ops/elementwise.cpp: unary, binary, variadic, logic, Cast, Where
void register_nn_ops(Registry& r);           // ops/nn.cpp: Conv, pools, norms, Gemm, MatMul, Softmax, Dropout
void register_tensor_ops(Registry& r);       // ops/tensor.cpp: Reshape, Transpose, Concat, Slice, Gather, ...
void register_reduce_ops(Registry& r);       // ops/reduce.cpp: Reduce*, ArgMax/ArgMin, CumSum, ...
void register_control_ops(Registry& r);      // ops/control.cpp: If, Loop, Constant, Identity
void register_modescope_ops(Registry& r);    // ops/print.cpp: Print (domain ai.modescope)
void register_fused_ops(Registry& r);        // ops/fused.cpp: the graph compiler's fused ops (ai.modescope)
}  // namespace ms::ops
