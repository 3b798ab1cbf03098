// The loop of a table op (ops/elementwise_math.h) over f32, shared by the eager kernels and the
// fused loop. Always inlined, so it is built for the AVX-512/AVX2 clone of whatever calls it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/backends/cpu/simd_math.h"
#include "engine/ops/elementwise_math.h"

namespace ms::cpu {

// y[i] = op(x[i], a, b); x may be y. One `omp simd` loop, or for ops written as core + finish (a
// library call, then selects: ew::has_core) two of them per block of 1024, since GCC vectorizes a
// loop with a call or with a condition, not with both.
template <ew::Op kOp>
[[gnu::always_inline]] inline void table_unary_f32(const float* x, float* y, int64_t n, float a, float b) {
  if constexpr (ew::has_core(kOp)) {
    constexpr int64_t kBlock = 1024;
    float c[kBlock];
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      const float* xs = x + s;
      float* ys = y + s;
      if constexpr (kOp == ew::Op::Gelu) {  // one form per loop, not a choice per element
        if (a != 0.f) {
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) c[i] = ew::gelu_tanh_core(xs[i]);
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) ys[i] = ew::gelu_tanh_finish(xs[i], c[i]);
        } else {
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) c[i] = ew::gelu_erf_core(xs[i]);
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) ys[i] = ew::gelu_erf_finish(xs[i], c[i]);
        }
      } else {
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) c[i] = ew::apply_core(kOp, xs[i], a, b);
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) ys[i] = ew::apply_finish(kOp, xs[i], c[i], a, b);
      }
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = ew::apply_unary(kOp, x[i], a, b);
  }
}

}  // namespace ms::cpu
