// The parts of our Winograd convs (winograd.h) that its two forms share: the three steps one after
// the other over the whole conv (winograd.cpp) and fused, a run of tiles at a time
// (winograd_fused.cpp). The geometry, the transforms over a row of tiles and step 2's register tiles,
// inlined into the instruction set's functions that call them. Internal to those two files.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "engine/backends/cpu/fma_tiles.h"
#include "engine/backends/cpu/onednn_sgemm_pack.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/backends/cpu/winograd.h"
#include "engine/core/status.h"

#if MS_SIMD_DISPATCH
#include <immintrin.h>
#define MS_WINO_AVX512_BF16 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16,avx2,fma")))
#endif

namespace ms::runtime {
class KernelContext;
}

namespace ms::cpu::nn::wino {

#if MODESCOPE_HAVE_SGEMM_PACK && MS_SIMD_DISPATCH
struct Geometry {
  int64_t n, c, h, w, m, oh, ow, pt, pl;
  int64_t tile, alpha, th, tw, tiles, block;
};

inline Geometry geometry_of(const WinogradConvArgs& a) {
  Geometry g{};
  g.n = a.x.dim(0), g.c = a.x.dim(1), g.h = a.x.dim(2), g.w = a.x.dim(3);
  g.m = a.y.dim(1), g.oh = a.y.dim(2), g.ow = a.y.dim(3);
  g.pt = a.pad_top, g.pl = a.pad_left;
  g.tile = winograd_tile(g.oh, g.ow, a.x.dtype() == DType::BF16);
  g.alpha = g.tile + 2;
  g.th = (g.oh + g.tile - 1) / g.tile, g.tw = (g.ow + g.tile - 1) / g.tile;
  g.tiles = g.n * g.th * g.tw;
  g.block = a.block;
  return g;
}

// B^T d over one line of the patch.
template <class V, int T> [[gnu::always_inline]] inline void bt(const V (&d)[T + 2], V (&o)[T + 2]) {
  if constexpr (T == 4) {
    o[0] = 4.f * d[0] - 5.f * d[2] + d[4];
    o[1] = d[3] + d[4] - 4.f * (d[1] + d[2]);
    o[2] = 4.f * (d[1] - d[2]) - d[3] + d[4];
    o[3] = 2.f * (d[3] - d[1]) - d[2] + d[4];
    o[4] = 2.f * (d[1] - d[3]) - d[2] + d[4];
    o[5] = 4.f * d[1] - 5.f * d[3] + d[5];
  } else {
    o[0] = d[0] - d[2];
    o[1] = d[1] + d[2];
    o[2] = d[2] - d[1];
    o[3] = d[1] - d[3];
  }
}

// A^T m over one line of the products.
template <class V, int T> [[gnu::always_inline]] inline void at(const V (&m)[T + 2], V (&o)[T]) {
  if constexpr (T == 4) {
    const V p12 = m[1] + m[2], d12 = m[1] - m[2], p34 = m[3] + m[4], d34 = m[3] - m[4];
    o[0] = m[0] + p12 + p34;
    o[1] = d12 + 2.f * d34;
    o[2] = p12 + 4.f * p34;
    o[3] = d12 + 8.f * d34 + m[5];
  } else {
    o[0] = m[0] + m[1] + m[2];
    o[1] = m[1] - m[2] - m[3];
  }
}

// A block's lanes in memory: f32, or bf16 (winograd_conv_bf16: 16 lanes, instructions of
// MS_WINO_AVX512_BF16 functions, inlined there).
// (Through references: a vector passed or returned by value outside one instruction set's functions
// changes the ABI.)
template <class V> [[gnu::always_inline]] inline void load_lanes(V& v, const float* p) { v = MS_LOADV(V, p); }
template <class V> [[gnu::always_inline]] inline void store_lanes(float* p, const V& v) { MS_STOREV(p, v); }
#if MODESCOPE_HAVE_BF16_GEMM_PACK
// bf16 in the transforms' memory (16 lanes: one channel block), f32 in their registers. (The
// zero-masked forms: GCC 12 warns of the plain ones' undefined pass-through operand.)
#define MS_WINO_LOAD_BF16(p)                           \
  ((vec16)_mm512_castsi512_ps(_mm512_maskz_slli_epi32( \
      0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16)))
#define MS_WINO_STORE_BF16(p, v) \
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), (__m256i)_mm512_cvtneps_pbh((__m512)(v)))
template <class V> MS_WINO_AVX512_BF16 inline void load_lanes(V& v, const uint16_t* p) {
  static_assert(kLanes<V> == 16);
  v = MS_WINO_LOAD_BF16(p);
}
template <class V> MS_WINO_AVX512_BF16 inline void store_lanes(uint16_t* p, const V& v) {
  static_assert(kLanes<V> == 16);
  MS_WINO_STORE_BF16(p, v);
}
#endif

// Step 1 for one row of tiles of one image and one block of input channels: x is that block's plane
// ([H][W][block]), v the first tile of the row in V[xi][tile][C] offset to the block's channels
// (points xi_step apart and tiles tile_step where given; the tiles [tc0, tc1) of the row).
template <class V, int T, class E>
[[gnu::always_inline]] inline void input_row(const E* x, const Geometry& g, int64_t row, E* v, int64_t xi_step = 0,
                                             int64_t tile_step = 0, int64_t tc0 = 0, int64_t tc1 = -1) {
  constexpr int A = T + 2;
  constexpr int64_t B = kLanes<V>;
  const int64_t ih0 = row * T - g.pt, xi_stride = xi_step ? xi_step : g.tiles * g.c;
  for (int64_t tc = tc0; tc < (tc1 < 0 ? g.tw : tc1); ++tc, v += tile_step ? tile_step : g.c) {
    const int64_t iw0 = tc * T - g.pl;
    const bool inside = ih0 >= 0 && iw0 >= 0 && ih0 + A <= g.h && iw0 + A <= g.w;
    V t[A][A];
#pragma GCC unroll 6
    for (int j = 0; j < A; ++j) {
      V col[A], o[A];
      const int64_t iw = iw0 + j;
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i) {
        const int64_t ih = ih0 + i;
        col[i] = V{};
        if (inside || (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)) load_lanes(col[i], x + (ih * g.w + iw) * B);
      }
      bt<V, T>(col, o);
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i) t[i][j] = o[i];
    }
#pragma GCC unroll 6
    for (int i = 0; i < A; ++i) {
      V o[A];
      bt<V, T>(t[i], o);
#pragma GCC unroll 6
      for (int j = 0; j < A; ++j) store_lanes(v + (i * A + j) * xi_stride, o[j]);
    }
  }
}

// Step 3 for one row of tiles of one image and one block of output channels: mo the row's first
// tile in the products [xi][tile][M] offset to the block's channels, y that block's output plane.
// y holds the plane's rows from oh0 on. (Points xi_step and tiles tile_step apart where given; the
// tiles [tc0, tc1) of the row, mo then at tile tc0.)
template <class V, int T>
[[gnu::always_inline]] inline void output_row(const float* mo, const Geometry& g, int64_t row, const float* bias,
                                              float* y, int64_t oh0 = 0, int64_t xi_step = 0, int64_t tile_step = 0,
                                              int64_t tc0 = 0, int64_t tc1 = -1) {
  constexpr int A = T + 2;
  constexpr int64_t B = kLanes<V>;
  const int64_t xi_stride = xi_step ? xi_step : g.tiles * g.m;
  const V bv = bias ? MS_LOADV(V, bias) : V{};
  for (int64_t tc = tc0; tc < (tc1 < 0 ? g.tw : tc1); ++tc, mo += tile_step ? tile_step : g.m) {
    V s[A][T];
#pragma GCC unroll 6
    for (int i = 0; i < A; ++i) {
      V line[A];
#pragma GCC unroll 6
      for (int j = 0; j < A; ++j) line[j] = MS_LOADV(V, mo + (i * A + j) * xi_stride);
      at<V, T>(line, s[i]);
    }
#pragma GCC unroll 4
    for (int l = 0; l < T; ++l) {
      V col[A], o[T];
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i) col[i] = s[i][l];
      at<V, T>(col, o);
      const int64_t ow = tc * T + l;
      if (ow >= g.ow) continue;
#pragma GCC unroll 4
      for (int k = 0; k < T; ++k) {
        const int64_t oh = row * T + k;
        if (oh < g.oh) MS_STOREV(y + ((oh - oh0) * g.ow + ow) * B, o[k] + bv);
      }
    }
  }
}

// Step 2 by our own kernel (f32, 16-channel blocks, AVX-512): U_xi packed as [M / 32][C][32] (32
// output channels a panel; a last panel of 16 where M is an odd number of blocks), the products of
// R tiles at a time against one panel in 2R accumulators over all of C, stored into [xi][tile][M].
// Each panel of U is read from memory once per point (the later tile groups find it in L2).
// U streams from memory once per point (the point's later groups of tiles find it in L2), prefetched
// as it streams (broadcast_fma_tile's kStream). Without the prefetches, ResNet-50's 512-channel 7x7
// convs in a chain whose weights miss the cache took 1.46 ms each; with them 0.87 (oneDNN's
// Winograd: 0.97).
// The tiles' rows of V (of the products) are `vs` (`ms`) floats apart: C (M) in step 2's [xi][tile]
// layouts, 36 C (36 M) in the fused steps' [tile][xi] ones.
template <int R, int P>
MS_TARGET_AVX512 void panel_tiles(const float* u, const float* v, int64_t vs, int64_t c, float* mo, int64_t ms) {
  broadcast_fma_tile<R, P, true>(u, 16 * P, v, vs, c, mo, ms, false);
}

using GroupFn = void (*)(const float*, const float*, int64_t, int64_t, float*, int64_t);
template <int P, int... R> constexpr std::array<GroupFn, sizeof...(R) + 1> groups_of(std::integer_sequence<int, R...>) {
  return {nullptr, &panel_tiles<R + 1, P>...};
}
// panel_tiles<R, P> by R (1 to 16 for P = 1, to 14 for P = 2).
template <int P> inline constexpr auto kGroups = groups_of<P>(std::make_integer_sequence<int, P == 1 ? 16 : 14>{});

// The tiles in groups of at most kMaxGroup (balanced: 49 tiles as 13+12+12+12, not 14+14+14+7);
// P = 1 takes up to 16 tiles in one group (16 accumulators), P = 2 up to 14 (28).
template <int P>
MS_TARGET_AVX512 void panel_products(const float* u, const float* v, int64_t vs, int64_t tiles, int64_t c, float* mo,
                                     int64_t ms) {
  constexpr int64_t kMaxGroup = P == 1 ? 16 : 14;
  const int64_t groups = (tiles + kMaxGroup - 1) / kMaxGroup;
  for (int64_t gi = 0, t = 0; gi < groups; ++gi) {
    const int64_t r = (tiles - t) / (groups - gi);
    kGroups<P>[static_cast<size_t>(r)](u, v + t * vs, vs, c, mo + t * ms, ms);
    t += r;
  }
}

// The output channels of a panel of U: 16 where the tiles fit one group of P = 1 (U read once), else 32.
inline int64_t panel_width(const Geometry& g) { return g.tiles <= 16 ? 16 : 32; }

// The fused steps (winograd_fused.cpp): a work item is a run of at most kRunTiles tiles of one image
// (one group of step 2's register tiles against a panel of 32 output channels).
inline constexpr int64_t kRunTiles = 14;
struct FusedPlan {
  int64_t per_img = 0;  // work items an image, each of about tiles / per_img tiles (at most kRunTiles); 0: not fused
  int64_t items = 0;    // over the batch
  // The tiles [t0, t1) of an image (row-major) that item takes, and its image.
  void range(const Geometry& g, int64_t item, int64_t& img, int64_t& t0, int64_t& t1) const {
    const int64_t tiles = g.th * g.tw, k = item % per_img;
    img = item / per_img, t0 = tiles * k / per_img, t1 = tiles * (k + 1) / per_img;
  }
};

// The fused plan for the conv (f32: x is f32); per_img = 0 where the fused steps do not take it.
FusedPlan fused_plan(const Geometry& g, bool f32);

// Runs the conv by the fused steps (fused_plan took it; u: U packed in step 2's panels of 32).
Status winograd_conv_fused(runtime::KernelContext& ctx, const WinogradConvArgs& a, const Geometry& g,
                           const FusedPlan& f, const float* u, const char* impl_prefix);
#endif

}  // namespace ms::cpu::nn::wino
