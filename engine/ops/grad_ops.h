// Backward ops the engine has no ONNX op for, in the ai.modescope domain:
//   MaxPoolGrad(X, dY) -> dX       (pool attributes as on the MaxPool; dY flows to the first max)
//   AveragePoolGrad(X, dY) -> dX   (as on the AveragePool, count_include_pad honoured)
//   ConvGradWeight(X, dY) -> dW    (the Conv's attributes with explicit pads; dW [M, C/group, k...])
// Schemas here (registered with the op registry), CPU kernels in backends/cpu/pool_grad.cpp.
#pragma once

#include "engine/ops/schema.h"

namespace ms::autodiff {

inline constexpr const char* kGradDomain = "ai.modescope";

void register_grad_ops(ops::Registry& r);

}  // namespace ms::autodiff

namespace ms::runtime {
class KernelRegistry;
}

namespace ms::cpu {
// CPU kernels of the ops above (backends/cpu/pool_grad.cpp, conv_grad.cpp), registered by
// CpuBackend::kernels().
void register_grad_kernels(runtime::KernelRegistry& r);
void register_conv_grad_kernels(runtime::KernelRegistry& r);  // conv_grad.cpp, called by the above
}  // namespace ms::cpu

namespace ms::autodiff {}  // namespace ms::autodiff
