// The loop of a table op (ops/elementwise_math.h) over f32, shared by the eager kernels and the
// fused loop. Always inlined, so it is built for the AVX-512/AVX2 clone of whatever calls it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/backends/cpu/simd_exp.h"
#include "engine/backends/cpu/simd_math.h"
#include "engine/ops/elementwise_math.h"

namespace ms::cpu {

// Runs body(xs, ys, c, m) over blocks of 1024 values of x and y, with c a block of scratch floats.
template <class Body>
[[gnu::always_inline]] inline void table_blocks(const float* x, float* y, int64_t n, Body&& body) {
  constexpr int64_t kBlock = 1024;
  float c[kBlock];
  for (int64_t s = 0; s < n; s += kBlock) body(x + s, y + s, c, std::min(kBlock, n - s));
}

// y[i] = op(x[i], a, b); x may be y. One `omp simd` loop, or for ops written as core + finish (a
// library call, then selects: ew::has_core) two of them per block of 1024, since GCC vectorizes a
// loop with a call or with a condition, not with both.
template <ew::Op kOp>
[[gnu::always_inline]] inline void table_unary_f32(const float* x, float* y, int64_t n, float a, float b) {
  if constexpr (kOp == ew::Op::Swish) {
    // Both with an exp of their own in explicit vectors (simd_exp.h): through the library's
    // vector expf they ran at ~0.5 ns a value, and SiLU in one loop with the exp and the selects
    // stayed scalar (1.2 M values: 4.9 ms at one thread).
    swish_f32(x, y, n, a);
  } else if constexpr (kOp == ew::Op::Sigmoid) {
    sigmoid_f32(x, y, n);
  } else if constexpr (kOp == ew::Op::Mish) {
    // x tanh(softplus(x)) = x t / (t + 2), t = e^x (e^x + 2): one exp, in a loop of its own (the
    // library's log1p, exp and tanh per value took ~45 ns each). Past 20, tanh(softplus(x)) is 1 in
    // f32 (and e^2x would overflow).
    table_blocks(
        x, y, n, [](const float* xs, float* ys, float* c, int64_t m) __attribute__((always_inline)) {
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) c[i] = xs[i] < 20.f ? xs[i] : 20.f;
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) c[i] = std::exp(c[i]);  // a select in its argument kept it scalar
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) {
            const float t = c[i] * (c[i] + 2.f);
            ys[i] = xs[i] > 20.f ? xs[i] : xs[i] * t / (t + 2.f);
          }
        });
  } else if constexpr (kOp == ew::Op::Gelu) {  // one form per loop, not a choice per element
    if (a == 0.f) {
      // The erf form with an erfc of its own (simd_exp.h): the library's vector erfcf (table
      // gathers) made a matmul's GELU tail slower on AVX2 than PyNative's five separate ops.
      gelu_erf_f32(x, y, n);
      return;
    }
    table_blocks(
        x, y, n, [](const float* xs, float* ys, float* c, int64_t m) __attribute__((always_inline)) {
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) c[i] = ew::gelu_tanh_core(xs[i]);
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) ys[i] = ew::gelu_tanh_finish(xs[i], c[i]);
        });
  } else if constexpr (ew::has_core(kOp)) {
    table_blocks(
        x, y, n, [ a, b ](const float* xs, float* ys, float* c, int64_t m) __attribute__((always_inline)) {
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) c[i] = ew::apply_core(kOp, xs[i], a, b);
#pragma omp simd
          for (int64_t i = 0; i < m; ++i) ys[i] = ew::apply_finish(kOp, xs[i], c[i], a, b);
        });
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = ew::apply_unary(kOp, x[i], a, b);
  }
}

}  // namespace ms::cpu
