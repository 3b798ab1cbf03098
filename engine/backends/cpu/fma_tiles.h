// A register tile of broadcast multiply-adds in AVX-512, the inner kernel of our small products
// (winograd.cpp's products of transformed inputs and weights, contrib_nbits.cpp's dequantized
// weight panels against A): R rows of P vectors of 16 floats, each row's accumulators summing, step
// by step, one broadcast value of the row times the step's P vectors. All R x P sums stay in
// registers for the whole run of steps and are stored once.
#pragma once

#include <cstdint>

#include "engine/backends/cpu/simd_clones.h"

#if MS_SIMD_DISPATCH
#include <immintrin.h>

namespace ms::cpu {

// out[r * out_stride + 16 j + l] (+)= Σ over steps i of bcast[r * bcast_stride + i] x
// vecs[i * vec_step + 16 j + l]: summed onto out's values where `accumulate`, else from zero. With
// kStream, the vectors stream from memory once (a Winograd panel of U, vec_step = 16 P): prefetched
// into L2 16 KiB ahead and into L1 1 KiB ahead.
template <int R, int P, bool kStream>
MS_TARGET_AVX512 inline void broadcast_fma_tile(const float* vecs, int64_t vec_step, const float* bcast,
                                                int64_t bcast_stride, int64_t steps, float* out, int64_t out_stride,
                                                bool accumulate) {
  __m512 acc[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < P; ++j)
      acc[r][j] = accumulate ? _mm512_loadu_ps(out + r * out_stride + 16 * j) : _mm512_setzero_ps();
  for (int64_t i = 0; i < steps; ++i, vecs += vec_step) {
    if constexpr (kStream) {
      _mm_prefetch(reinterpret_cast<const char*>(vecs + 4096), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(vecs + 256), _MM_HINT_T0);
      if constexpr (P == 2) _mm_prefetch(reinterpret_cast<const char*>(vecs + 4096 + 16), _MM_HINT_T1);
    }
    __m512 v[P];
#pragma GCC unroll 2
    for (int j = 0; j < P; ++j) v[j] = _mm512_loadu_ps(vecs + 16 * j);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 b = _mm512_set1_ps(bcast[r * bcast_stride + i]);
#pragma GCC unroll 2
      for (int j = 0; j < P; ++j) acc[r][j] = _mm512_fmadd_ps(b, v[j], acc[r][j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < P; ++j) _mm512_storeu_ps(out + r * out_stride + 16 * j, acc[r][j]);
}

}  // namespace ms::cpu
#endif
