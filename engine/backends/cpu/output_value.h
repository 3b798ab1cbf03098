// How a CPU kernel that passes values through (Identity, If, Loop, the sequence and optional ops)
// puts one into an output.
#pragma once

#include "engine/runtime/kernel.h"

namespace ms::cpu {

// Puts `v` into output i: a tensor is copied into a preallocated (planned) output of the same dtype
// and element count; otherwise `v` itself (a tensor, sequence or optional) is handed over.
Status put_output_value(runtime::KernelContext& ctx, size_t i, const Tensor& v);

}  // namespace ms::cpu
