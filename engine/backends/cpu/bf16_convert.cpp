#include "engine/backends/cpu/bf16_convert.h"

#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu {

MS_SIMD_CLONES void widen_bf16(const bf16* __restrict src, float* __restrict dst, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = elementwise::bf16_to_f32(src[i]);
}

MS_SIMD_CLONES void round_to_bf16(const float* __restrict src, bf16* __restrict dst, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = elementwise::f32_to_bf16(src[i]);
}

Tensor f32_of(const Tensor& t) {
  if (t.dtype() == DType::F32) return t;
  Tensor out = Tensor::empty(DType::F32, t.shape());
  widen_bf16(t.data<bf16>(), out.data<float>(), t.numel());
  return out;
}

}  // namespace ms::cpu
