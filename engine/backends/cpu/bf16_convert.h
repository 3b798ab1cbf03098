// Rows of bf16 widened to f32 and f32 rounded to bf16 (nearest even, NaN kept), vectorized for the
// CPU's widest instruction set: the kernels of a bf16 Graph that compute in f32 inside (layer norm,
// attention, the fused matmuls' fallback) read and write their operands through these, and Cast
// between the two types runs them.
#pragma once

#include <cstdint>

#include "engine/core/dtype.h"
#include "engine/core/tensor.h"

namespace ms::cpu {

void widen_bf16(const bf16* src, float* dst, int64_t n);
void round_to_bf16(const float* src, bf16* dst, int64_t n);

// A bf16 tensor widened into a new f32 tensor; an f32 one as it is (shared, not copied).
Tensor f32_of(const Tensor& t);

}  // namespace ms::cpu
