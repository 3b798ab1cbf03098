// One output row of one channel block of a depthwise 2-D conv over blocked channels (one vector of
// B channels per pixel), shared by our depthwise conv (conv_depthwise.cpp) and the inverted-residual
// block (conv_inverted_residual.cpp). Include only from a kernel's .cpp: the functions are meant to
// be inlined into the instruction set's functions that instantiate them (MS_TARGET_AVX2/AVX512).
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu::nn {

// The tallest kernel the row functions take (their callers' arrays of row pointers).
inline constexpr int64_t kMaxDepthwiseKernel = 16;

// The row's geometry: input and output widths, kernel, horizontal stride and padding.
struct DwRow {
  int64_t iw = 0, ow = 0, kh = 0, kw = 0, sw = 1, pw = 0;
};

// The row's outputs from its kh input rows (rows[i] null: a padding row), bias, then (clamp)
// clamped to [lo, hi]: outputs whose taps all lie inside the input row four at a time (four accumulators, each
// tap's weights loaded once for the four), the others one at a time with the taps outside skipped.
// K > 0: the kernel width known at compile time; S > 0: the stride (with stride 1 the four outputs'
// taps overlap and the loads of one input vector for several of them become one).
template <class V, int K, int S>
[[gnu::always_inline]] inline void depthwise_row(const float* const* rows, const float* __restrict wc, V bias,
                                                 float* __restrict yr, const DwRow& p, bool clamp, V lo, V hi) {
  constexpr int B = kLanes<V>;
  const int64_t kw = K > 0 ? K : p.kw;
  const int64_t sw = S > 0 ? S : p.sw;
  // Outputs o with 0 <= o*sw - pw and o*sw - pw + kw <= iw.
  int64_t first = (p.pw + sw - 1) / sw;
  int64_t last = p.iw - kw + p.pw >= 0 ? (p.iw - kw + p.pw) / sw + 1 : 0;
  first = std::min(first, p.ow);
  last = std::clamp(last, first, p.ow);
  auto put = [&](int64_t o, V v) __attribute__((always_inline)) {
    if (clamp) {
      v = v > lo ? v : lo;
      v = v < hi ? v : hi;
    }
    MS_STOREV(yr + o * B, v);
  };
  auto edge = [&](int64_t o) __attribute__((always_inline)) {
    V acc = bias;
    const int64_t iw0 = o * sw - p.pw;
    const int64_t k0 = std::max<int64_t>(0, -iw0), k1 = std::min<int64_t>(kw, p.iw - iw0);
    for (int64_t i = 0; i < p.kh; ++i) {
      if (!rows[i]) continue;
      const float* wrow = wc + i * kw * B;
      for (int64_t j = k0; j < k1; ++j) acc += MS_LOADV(V, rows[i] + (iw0 + j) * B) * MS_LOADV(V, wrow + j * B);
    }
    put(o, acc);
  };
  for (int64_t o = 0; o < first; ++o) edge(o);
  int64_t o = first;
  const int64_t step = sw * B;
  for (; o + 4 <= last; o += 4) {
    V a0 = bias, a1 = bias, a2 = bias, a3 = bias;
    for (int64_t i = 0; i < p.kh; ++i) {
      if (!rows[i]) continue;
      const float* xp = rows[i] + (o * sw - p.pw) * B;
      const float* wrow = wc + i * kw * B;
      for (int64_t j = 0; j < kw; ++j) {
        const V wv = MS_LOADV(V, wrow + j * B);
        const float* xj = xp + j * B;
        a0 += MS_LOADV(V, xj) * wv;
        a1 += MS_LOADV(V, xj + step) * wv;
        a2 += MS_LOADV(V, xj + 2 * step) * wv;
        a3 += MS_LOADV(V, xj + 3 * step) * wv;
      }
    }
    put(o, a0);
    put(o + 1, a1);
    put(o + 2, a2);
    put(o + 3, a3);
  }
  for (; o < p.ow; ++o) edge(o);
}

// depthwise_row with the common kernel widths and strides specialized.
template <class V>
[[gnu::always_inline]] inline void depthwise_row_any(const float* const* rows, const float* wc, V bias, float* yr,
                                                     const DwRow& p, bool clamp, V lo, V hi) {
  if (p.sw == 1) {
    switch (p.kw) {
      case 3: depthwise_row<V, 3, 1>(rows, wc, bias, yr, p, clamp, lo, hi); break;
      case 5: depthwise_row<V, 5, 1>(rows, wc, bias, yr, p, clamp, lo, hi); break;
      case 7: depthwise_row<V, 7, 1>(rows, wc, bias, yr, p, clamp, lo, hi); break;
      default: depthwise_row<V, 0, 1>(rows, wc, bias, yr, p, clamp, lo, hi); break;
    }
  } else if (p.sw == 2) {
    switch (p.kw) {
      case 3: depthwise_row<V, 3, 2>(rows, wc, bias, yr, p, clamp, lo, hi); break;
      case 5: depthwise_row<V, 5, 2>(rows, wc, bias, yr, p, clamp, lo, hi); break;
      default: depthwise_row<V, 0, 2>(rows, wc, bias, yr, p, clamp, lo, hi); break;
    }
  } else {
    depthwise_row<V, 0, 0>(rows, wc, bias, yr, p, clamp, lo, hi);
  }
}

}  // namespace ms::cpu::nn
