// The 1x1 convs of the inverted-residual kernel (conv_inverted_residual.cpp): register tiles of
// output channel blocks x pixels over blocked (nChw8c/16c) activations, f32 FMAs or, with bf16
// operands, AVX-512-BF16 dot products into f32 sums. Templates to be inlined into the instruction
// set's functions that instantiate them (MS_TARGET_AVX2/AVX512/AVX512_BF16), as depthwise_row.h's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "engine/backends/cpu/simd_clones.h"

#if MS_SIMD_DISPATCH
#include <immintrin.h>
// AVX-512 with the bf16 dot product (vdpbf16ps: two bf16 products a lane into f32).
#define MS_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16,avx2,fma")))
#endif

namespace ms::cpu::nn {

// A stage's post-ops as the kernel applies them in its stores: an optional residual Add first, then
// Relu or Clip as a clamp; any other list (`generic`) runs as apply_tail over each finished chunk.
struct Tail {
  bool add = false, generic = false, clamp = false;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
};

// The vector of half V's lanes.
template <class V> struct HalfOf;
template <> struct HalfOf<vec16> { using type = vec8; };
template <> struct HalfOf<vec8> { using type = vec4; };

#if MS_SIMD_DISPATCH
// The bf16 products of a tile (pw_tile with S = uint16_t): each pair of input channels broadcast as
// one 32-bit word, two products a lane by vdpbf16ps into the f32 accumulators.
template <int NF, int NP, bool HALF>
MS_TARGET_AVX512_BF16 inline void dot_bf16(vec16 (&acc)[NF > 0 ? NF : 1][NP], vec8 (&acch)[NP], const uint16_t* in,
                                           int64_t in_cs, int64_t cin, const uint16_t* w, int64_t w_os) {
  constexpr int B = 16;
  for (int64_t ci = 0; ci < cin; ci += B) {
    const uint16_t* ip = in + (ci / B) * in_cs;
    const uint16_t* wp = w + ci * B;  // pair j of the block: 2B values from wp + j * 2B
    const int64_t pairs = std::min<int64_t>(B / 2, (cin - ci + 1) / 2);
    for (int64_t j = 0; j < pairs; ++j) {
      __m512i wv[NF > 0 ? NF : 1];
#pragma GCC unroll 4
      for (int b = 0; b < NF; ++b) wv[b] = _mm512_loadu_si512(wp + b * w_os + j * 2 * B);
      [[maybe_unused]] __m256i wh{};
      if constexpr (HALF) wh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + NF * w_os + j * 2 * B));
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        int32_t pair;
        __builtin_memcpy(&pair, ip + p * B + 2 * j, sizeof pair);
        const __m512i xv = _mm512_set1_epi32(pair);
#pragma GCC unroll 4
        for (int b = 0; b < NF; ++b)
          acc[b][p] = (vec16)_mm512_dpbf16_ps((__m512)acc[b][p], (__m512bh)xv, (__m512bh)wv[b]);
        if constexpr (HALF)
          acch[p] = (vec8)_mm256_dpbf16_ps((__m256)acch[p], (__m256bh)_mm256_set1_epi32(pair), (__m256bh)wh);
      }
    }
  }
}

// Channel blocks of f32 rounded to bf16 (nearest even): `blocks` blocks of n values (a multiple of
// 16; block stride src_cs) into dst [blocks][n].
MS_TARGET_AVX512_BF16 inline void round_blocks_bf16(const float* src, int64_t src_cs, int64_t blocks, int64_t n,
                                                    uint16_t* dst) {
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t i = 0; i < n; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + b * n + i),
                          (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + b * src_cs + i)));
}
#endif

// One tile of a 1x1 conv over blocked channels: NB output blocks x NP pixels, every input channel.
// The small loops unrolled (GCC 12 at -O2 keeps the accumulators of rolled ones on the stack: 40-60
// GFLOP/s against ~170 in registers).
// in: the tile's first pixel (channel block stride in_cs, pixel stride B); w: [ob][cin][B] from the
// tile's first block (block stride w_os); out/res: the tile's first output (block stride out_cs).
// A pass over part of the input channels starts from out unless `first` and applies the tail only
// when `last`. With HALF the tile's last block holds real channels in its first half only (24 or 40
// channels in 16-lane blocks): it is computed in half-width vectors, which cost half a full FMA on
// CPUs that split 512-bit ones, and its other lanes are left to the caller.
// S = uint16_t: in and w are bf16 (16-lane blocks only; w [ob][cin rounded up to even][B] with each
// lane's two channels of a pair adjacent), the products two channels at a time by vdpbf16ps into
// the same f32 accumulators: twice the FMA's rate.
template <class V, int NB, int NP, bool HALF, class S>
[[gnu::always_inline]] inline void pw_tile(const S* __restrict in, int64_t in_cs, int64_t cin, const S* __restrict w,
                                           int64_t w_os, const float* __restrict bias, float* __restrict out,
                                           const float* __restrict res, int64_t out_cs, const Tail& t, bool first,
                                           bool last) {
  using Vh = typename HalfOf<V>::type;
  constexpr int B = kLanes<V>;
  constexpr int NF = NB - (HALF ? 1 : 0);  // full blocks
  V acc[NF > 0 ? NF : 1][NP];
  Vh acch[NP];
#pragma GCC unroll 4
  for (int b = 0; b < NF; ++b) {
    const V bv = MS_LOADV(V, bias + b * B);
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) acc[b][p] = first ? bv : MS_LOADV(V, out + b * out_cs + p * B);
  }
  if constexpr (HALF) {
    const Vh bv = MS_LOADV(Vh, bias + NF * B);
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) acch[p] = first ? bv : MS_LOADV(Vh, out + NF * out_cs + p * B);
  }
  if constexpr (!std::is_same_v<S, float>) {
#if MS_SIMD_DISPATCH
    static_assert(B == 16, "bf16 tiles are 16-lane");
    dot_bf16<NF, NP, HALF>(acc, acch, in, in_cs, cin, w, w_os);
#endif
  } else {
    for (int64_t ci = 0; ci < cin; ci += B) {
      const float* ip = in + (ci / B) * in_cs;
      const float* wp = w + ci * B;
      const int64_t lanes = std::min<int64_t>(B, cin - ci);
      for (int64_t l = 0; l < lanes; ++l) {
        V wv[NF > 0 ? NF : 1];
#pragma GCC unroll 4
        for (int b = 0; b < NF; ++b) wv[b] = MS_LOADV(V, wp + b * w_os + l * B);
        [[maybe_unused]] Vh wh{};
        if constexpr (HALF) wh = MS_LOADV(Vh, wp + NF * w_os + l * B);
#pragma GCC unroll 8
        for (int p = 0; p < NP; ++p) {
          const V xv = ip[p * B + l] - V{};  // a broadcast (x - 0 is x: no add)
#pragma GCC unroll 4
          for (int b = 0; b < NF; ++b) acc[b][p] += wv[b] * xv;
          if constexpr (HALF) acch[p] += wh * (ip[p * B + l] - Vh{});
        }
      }
    }
  }
  const V lo = V{} + t.lo, hi = V{} + t.hi;
#pragma GCC unroll 4
  for (int b = 0; b < NF; ++b)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
      V v = acc[b][p];
      if (last && t.add) v += MS_LOADV(V, res + b * out_cs + p * B);
      if (last && t.clamp) {
        v = v > lo ? v : lo;
        v = v < hi ? v : hi;
      }
      MS_STOREV(out + b * out_cs + p * B, v);
    }
  if constexpr (HALF) {
    const Vh loh = Vh{} + t.lo, hih = Vh{} + t.hi;
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
      Vh v = acch[p];
      if (last && t.add) v += MS_LOADV(Vh, res + NF * out_cs + p * B);
      if (last && t.clamp) {
        v = v > loh ? v : loh;
        v = v < hih ? v : hih;
      }
      MS_STOREV(out + NF * out_cs + p * B, v);
    }
  }
}

template <class V, int NB, bool HALF, class S>
[[gnu::always_inline]] inline void pw_blocks(const S* in, int64_t in_cs, int64_t cin, int64_t npix, const S* w,
                                             int64_t w_os, const float* bias, float* out, const float* res,
                                             int64_t out_cs, const Tail& t, bool first, bool last) {
  constexpr int B = kLanes<V>;
  // Eight pixels a tile with AVX-512's 32 registers (up to 24 accumulators), four with AVX2's 16
  // and for a single block (measured: 6% slower at eight on MobileNetV2's 32->16 projection).
  constexpr int NP = B == 16 && NB > 1 ? 8 : 4;
  int64_t p = 0;
  for (; p + NP <= npix; p += NP)
    pw_tile<V, NB, NP, HALF, S>(in + p * B, in_cs, cin, w, w_os, bias, out + p * B, res + p * B, out_cs, t, first,
                                last);
#define MS_PW_TAIL(N)                                                                                             \
  case N:                                                                                                         \
    pw_tile<V, NB, N, HALF, S>(in + p * B, in_cs, cin, w, w_os, bias, out + p * B, res + p * B, out_cs, t, first, \
                               last);                                                                             \
    break;
  if constexpr (NP == 8) {
    switch (npix - p) {
      MS_PW_TAIL(7)
      MS_PW_TAIL(6)
      MS_PW_TAIL(5)
      MS_PW_TAIL(4)
      MS_PW_TAIL(3)
      MS_PW_TAIL(2)
      MS_PW_TAIL(1)
      default: break;
    }
  } else {
    switch (npix - p) {
      MS_PW_TAIL(3)
      MS_PW_TAIL(2)
      MS_PW_TAIL(1)
      default: break;
    }
  }
#undef MS_PW_TAIL
}

// A 1x1 conv of npix pixels for output blocks [ob0, ob1): in [cin/B][..npix..][B] (block stride
// in_cs), w packed [ob][cin][B], out/res block stride out_cs, out at block ob0 (res likewise).
// Output blocks three at a time (12 accumulators, 3 weight vectors and a broadcast: 16 registers
// with AVX2), pixels four at a time, input channels kc at a time so a group's weights stay in L1
// across the pixels (a projection from 960 channels: 184 KB of weights a group of 16-lane blocks).
// half_last: block ob1 - 1 holds real channels in its first half only (see pw_tile).
// S = uint16_t: in and w bf16 (see pw_tile).
template <class V, class S>
[[gnu::always_inline]] inline void pointwise(const S* in, int64_t in_cs, int64_t cin, int64_t npix, const S* w,
                                             const float* bias, int64_t ob0, int64_t ob1, float* out, const float* res,
                                             int64_t out_cs, const Tail& t, bool half_last) {
  constexpr int B = kLanes<V>;
  constexpr int64_t kc = 2048 / B;
  const int64_t w_os = (std::is_same_v<S, float> ? cin : (cin + 1) / 2 * 2) * B;
  for (int64_t ob = ob0; ob < ob1;) {
    // Groups of three, but four left as two and two (an NB=1 tile is four accumulators: one FMA
    // chain per pipeline's latency, and a weight load for every four FMAs).
    const int64_t nb = ob1 - ob == 4 ? 2 : std::min<int64_t>(3, ob1 - ob);
    const bool half = half_last && ob + nb == ob1;
    for (int64_t k0 = 0; k0 < cin; k0 += kc) {
      const int64_t k1 = std::min(cin, k0 + kc);
      const S* ik = in + (k0 / B) * in_cs;
      const S* wk = w + ob * w_os + k0 * B;
      float* o = out + (ob - ob0) * out_cs;
      const float* r = res + (ob - ob0) * out_cs;
      const float* bk = bias + ob * B;
      const bool first = k0 == 0, last = k1 == cin;
#define MS_PW_BLOCKS(NB, HALF) \
  pw_blocks<V, NB, HALF, S>(ik, in_cs, k1 - k0, npix, wk, w_os, bk, o, r, out_cs, t, first, last)
      switch (nb * 2 + (half ? 1 : 0)) {
        case 7: MS_PW_BLOCKS(3, true); break;
        case 6: MS_PW_BLOCKS(3, false); break;
        case 5: MS_PW_BLOCKS(2, true); break;
        case 4: MS_PW_BLOCKS(2, false); break;
        case 3: MS_PW_BLOCKS(1, true); break;
        default: MS_PW_BLOCKS(1, false); break;
      }
#undef MS_PW_BLOCKS
    }
    ob += nb;
  }
}

}  // namespace ms::cpu::nn
