#include "engine/backends/cpu/winograd.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/fma_tiles.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/onednn_sgemm_pack.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/backends/cpu/weights_registry.h"
#include "engine/core/host_memory.h"
#include "engine/runtime/kernel.h"

// Measured at one thread on a 2-core AVX2 CPU (AMD EPYC; oneDNN's direct convs run jit:avx2 on
// nChw8c), ResNet-50's stride-1 3x3 convs with bias and Relu, direct -> ours: 64 channels at 56x56
// 2.64 -> 1.08 ms (F(4x4)), 128 at 28x28 2.68 -> 1.00 ms (F(4x4)), 256 at 14x14 2.69 -> 1.40 ms
// (F(2x2); F(4x4) on its 16x16 of padded tiles 1.65), 512 at 7x7 3.09 -> 2.80 ms (F(2x2); F(4x4)
// 3.70: four tiles stream 36 MiB of transformed weights). The whole model 98 -> 81 ms.
// bf16 F(2x2,3x3) against oneDNN's direct bf16 conv (jit_bf16:avx512_core_bf16), two threads, AVX-512
// Zen 4 (no AMX), ResNet-50's convs with bias and Relu, profile medians: 64 channels at 56x56 495 ->
// 410 us, 128 at 28x28 486 -> 315, 256 at 14x14 500 -> 325; the whole bf16 model 20.4 -> 18.6 ms.

#if MS_SIMD_DISPATCH
#include <immintrin.h>
#define MS_WINO_AVX512_BF16 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16,avx2,fma")))
#endif

namespace ms::cpu::nn {

#if MODESCOPE_HAVE_SGEMM_PACK && MS_SIMD_DISPATCH
namespace {

struct Geometry {
  int64_t n, c, h, w, m, oh, ow, pt, pl;
  int64_t tile, alpha, th, tw, tiles, block;
};

Geometry geometry_of(const WinogradConvArgs& a) {
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

// The transforms (Lavin and Gray's F(4x4,3x3) on the points 0, +-1, +-2, inf; F(2x2,3x3) on 0, +-1,
// inf): y = A^T [(G g G^T) * (B^T d B)] A.
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

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

template <class V>
[[gnu::always_inline]] inline void input_rows(const float* x, const Geometry& g, float* v, int64_t item) {
  // item: (image, tile row, channel block)
  const int64_t blocks = g.c / g.block, cb = item % blocks, row = item / blocks % g.th, img = item / blocks / g.th;
  const float* plane = x + (img * blocks + cb) * g.h * g.w * g.block;
  float* first = v + (img * g.th + row) * g.tw * g.c + cb * g.block;
  if (g.tile == 4)
    input_row<V, 4>(plane, g, row, first);
  else
    input_row<V, 2>(plane, g, row, first);
}

template <class V>
[[gnu::always_inline]] inline void output_rows(const float* mo, const Geometry& g, const float* bias, float* y,
                                               int64_t item) {
  const int64_t blocks = g.m / g.block, ob = item % blocks, row = item / blocks % g.th, img = item / blocks / g.th;
  float* plane = y + (img * blocks + ob) * g.oh * g.ow * g.block;
  const float* first = mo + (img * g.th + row) * g.tw * g.m + ob * g.block;
  const float* b = bias ? bias + ob * g.block : nullptr;
  if (g.tile == 4)
    output_row<V, 4>(first, g, row, b, plane);
  else
    output_row<V, 2>(first, g, row, b, plane);
}

MS_TARGET_AVX2 void input_rows_avx2(const float* x, const Geometry& g, float* v, int64_t item) {
  input_rows<vec8>(x, g, v, item);
}
MS_TARGET_AVX512 void input_rows_avx512(const float* x, const Geometry& g, float* v, int64_t item) {
  input_rows<vec16>(x, g, v, item);
}
MS_TARGET_AVX2 void output_rows_avx2(const float* mo, const Geometry& g, const float* bias, float* y, int64_t item) {
  output_rows<vec8>(mo, g, bias, y, item);
}
MS_TARGET_AVX512 void output_rows_avx512(const float* mo, const Geometry& g, const float* bias, float* y,
                                         int64_t item) {
  output_rows<vec16>(mo, g, bias, y, item);
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
template <int P> constexpr auto kGroups = groups_of<P>(std::make_integer_sequence<int, P == 1 ? 16 : 14>{});

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
int64_t panel_width(const Geometry& g) { return g.tiles <= 16 ? 16 : 32; }

// One work item of step 2: point xi, panel pn.
MS_TARGET_AVX512 void products_avx512(const float* u, const float* v, float* mo, const Geometry& g, int64_t item) {
  const int64_t pw = panel_width(g), panels = (g.m + pw - 1) / pw, xi = item / panels, pn = item % panels;
  const float* up = u + xi * g.c * g.m + pn * pw * g.c;
  const float* vx = v + xi * g.tiles * g.c;
  float* mx = mo + xi * g.tiles * g.m + pn * pw;
  if (pn * pw + 32 <= g.m && pw == 32)
    panel_products<2>(up, vx, g.c, g.tiles, g.c, mx, g.m);
  else
    panel_products<1>(up, vx, g.c, g.tiles, g.c, mx, g.m);
}

// Step 1, 2 and 3 fused (f32, F(4x4,3x3), 16-channel blocks, AVX-512), where U fits the cache
// (kFusedMaxU): a work item is a run of at most 14 tiles of one image (row-major, one group of the
// products' register tiles; an image's tiles shared evenly between its items), taken through the
// three steps by one thread, its V and products in that thread's own scratch, so that neither
// leaves the core's L2 and no step waits for the others' threads; U stays in cache from item to
// item. ResNet-50, two threads, in the model: its 64-channel 56x56 convs 395-426 us with oneDNN's
// F(4x4,3x3) -> 300-358 fused; its 128-channel 28x28 ones 356-358 in our three steps -> 326-333.
struct FusedPlan {
  int64_t per_img = 0;  // work items an image, each of about tiles / per_img tiles (at most 14); 0: not fused
  int64_t items = 0;    // over the batch
  // The tiles [t0, t1) of an image (row-major) that item takes, and its image.
  void range(const Geometry& g, int64_t item, int64_t& img, int64_t& t0, int64_t& t1) const {
    const int64_t tiles = g.th * g.tw, k = item % per_img;
    img = item / per_img, t0 = tiles * k / per_img, t1 = tiles * (k + 1) / per_img;
  }
};

// B^T (F(4x4,3x3)) over six vectors.
#define MS_WINO_BT4(d0, d1, d2, d3, d4, d5, o0, o1, o2, o3, o4, o5)                            \
  do {                                                                                         \
    const __m512 t0_ = _mm512_fnmadd_ps(four, d2, d4), t1_ = _mm512_fnmadd_ps(four, d1, d3);   \
    const __m512 t2_ = _mm512_sub_ps(d4, d2), t3_ = _mm512_mul_ps(two, _mm512_sub_ps(d3, d1)); \
    o0 = _mm512_fmadd_ps(four, d0, _mm512_fnmadd_ps(five, d2, d4));                            \
    o5 = _mm512_fmadd_ps(four, d1, _mm512_fnmadd_ps(five, d3, d5));                            \
    o1 = _mm512_add_ps(t0_, t1_);                                                              \
    o2 = _mm512_sub_ps(t0_, t1_);                                                              \
    o3 = _mm512_add_ps(t2_, t3_);                                                              \
    o4 = _mm512_sub_ps(t2_, t3_);                                                              \
  } while (0)

// Step 1 (F(4x4,3x3)) for a 6x6 patch wholly inside a 16-channel plane: rp its first pixel, rs the
// plane's row stride; the 36 points to vp, xs apart.
[[gnu::always_inline]] MS_TARGET_AVX512 inline void input_patch4(const float* rp, int64_t rs, float* vp, int64_t xs) {
  const __m512 four = _mm512_set1_ps(4.f), five = _mm512_set1_ps(5.f), two = _mm512_set1_ps(2.f);
  __m512 r[6][6];
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i, rp += rs) {
    const __m512 d0 = _mm512_loadu_ps(rp), d1 = _mm512_loadu_ps(rp + 16), d2 = _mm512_loadu_ps(rp + 32),
                 d3 = _mm512_loadu_ps(rp + 48), d4 = _mm512_loadu_ps(rp + 64), d5 = _mm512_loadu_ps(rp + 80);
    MS_WINO_BT4(d0, d1, d2, d3, d4, d5, r[i][0], r[i][1], r[i][2], r[i][3], r[i][4], r[i][5]);
  }
#pragma GCC unroll 6
  for (int j = 0; j < 6; ++j) {
    __m512 o0, o1, o2, o3, o4, o5;
    MS_WINO_BT4(r[0][j], r[1][j], r[2][j], r[3][j], r[4][j], r[5][j], o0, o1, o2, o3, o4, o5);
    _mm512_storeu_ps(vp + j * xs, o0);
    _mm512_storeu_ps(vp + (6 + j) * xs, o1);
    _mm512_storeu_ps(vp + (12 + j) * xs, o2);
    _mm512_storeu_ps(vp + (18 + j) * xs, o3);
    _mm512_storeu_ps(vp + (24 + j) * xs, o4);
    _mm512_storeu_ps(vp + (30 + j) * xs, o5);
  }
}
#undef MS_WINO_BT4

MS_TARGET_AVX512 void fused_item_avx512(const float* x, const float* u, const Geometry& g, const FusedPlan& f,
                                        const float* bias, float* y, float* vb, float* mb, int64_t item) {
  constexpr int T = 4;
  constexpr int64_t B = 16;
  int64_t img = 0, t0 = 0, t1 = 0;
  f.range(g, item, img, t0, t1);
  const int64_t tiles = t1 - t0, points = g.alpha * g.alpha, cblocks = g.c / B, oblocks = g.m / B;
  // V and the products tile by tile ([tile][xi][C], [tile][xi][M]): a patch's points land close
  // together (36 stores a tile's C apart rather than the item's V apart).
  const int64_t vt = points * g.c, mt = points * g.m;
  for (int64_t row = t0 / g.tw; row * g.tw < t1; ++row) {
    const int64_t tc0 = std::max(t0 - row * g.tw, int64_t{0}), tc1 = std::min(t1 - row * g.tw, g.tw);
    const int64_t ih0 = row * T - g.pt, first = row * g.tw + tc0 - t0;  // the row's first tile in the item
    const bool rows_inside = ih0 >= 0 && ih0 + T + 2 <= g.h;
    for (int64_t cb = 0; cb < cblocks; ++cb) {
      const float* plane = x + (img * cblocks + cb) * g.h * g.w * B;
      float* v = vb + first * vt + cb * B;
      for (int64_t tc = tc0; tc < tc1; ++tc, v += vt) {
        const int64_t iw0 = tc * T - g.pl;
        if (rows_inside && iw0 >= 0 && iw0 + T + 2 <= g.w)
          input_patch4(plane + (ih0 * g.w + iw0) * B, g.w * B, v, g.c);
        else
          input_row<vec16, T>(plane, g, row, v, g.c, vt, tc, tc + 1);
      }
    }
  }
  for (int64_t xi = 0; xi < points; ++xi) {
    const float* vx = vb + xi * g.c;
    float* mx = mb + xi * g.m;
    for (int64_t p0 = 0; p0 < g.m; p0 += 32) {
      const float* up = u + xi * g.c * g.m + p0 * g.c;
      if (p0 + 32 <= g.m)
        panel_products<2>(up, vx, vt, tiles, g.c, mx + p0, mt);
      else
        panel_products<1>(up, vx, vt, tiles, g.c, mx + p0, mt);
    }
  }
  for (int64_t row = t0 / g.tw; row * g.tw < t1; ++row) {
    const int64_t tc0 = std::max(t0 - row * g.tw, int64_t{0}), tc1 = std::min(t1 - row * g.tw, g.tw);
    const float* m = mb + (row * g.tw + tc0 - t0) * mt;
    for (int64_t ob = 0; ob < oblocks; ++ob)
      output_row<vec16, T>(m + ob * B, g, row, bias ? bias + ob * B : nullptr,
                           y + (img * oblocks + ob) * g.oh * g.ow * B, 0, g.m, mt, tc0, tc1);
  }
}

// U of at most this many bytes is read by each work item from the core's cache: L2 (2 MiB on the
// AVX-512 CPUs measured) for 64 channels, L2 and L3 for ResNet-50's 128-channel 28x28 convs (2.4
// MiB), where the fused steps still ran 326-333 against 356-358 us in three. (Split by output
// channels between two threads instead, so that each keeps half of U in L2 but transforms every
// input tile itself, they ran even with the three steps.)
constexpr int64_t kFusedMaxU = int64_t{5} << 19;  // 2.5 MiB

FusedPlan fused_plan(const Geometry& g, bool f32) {
  FusedPlan f;
  if (!f32 || g.block != 16 || g.tile != 4 || cpu_simd_width() < 16 || g.m % 16 != 0 ||
      g.alpha * g.alpha * g.c * g.m * int64_t{sizeof(float)} > kFusedMaxU)
    return f;
  f.per_img = (g.th * g.tw + 13) / 14;
  f.items = g.n * f.per_img;
  return f;
}

#if MODESCOPE_HAVE_BF16_GEMM_PACK
// Step 1 in bf16 (F(2x2,3x3), 16-channel blocks): input_rows' work, x read and V written in bf16,
// for the rows of tiles from r0 on (over the batch: row r of image r / th) of a chunk whose tiles
// g.tiles counts: item is (row in the chunk, channel block).
MS_WINO_AVX512_BF16 void input_rows_bf16(const uint16_t* x, const Geometry& g, uint16_t* v, int64_t r0, int64_t item) {
  constexpr int64_t B = 16;
  const int64_t blocks = g.c / B, cb = item % blocks, r = r0 + item / blocks;
  input_row<vec16, 2>(x + (r / g.th * blocks + cb) * g.h * g.w * B, g, r % g.th, v + (r - r0) * g.tw * g.c + cb * B);
}

// Step 3 in bf16: one row of tiles of one output block (of the chunk from row r0, as in step 1) into
// `strip` (f32, the plane's rows from the row's first), the post-ops over it, rounded into y; `res`
// the residual (bf16) or null, `rs` room for its rows in f32.
MS_WINO_AVX512_BF16 void output_rows_bf16(const float* mo, const Geometry& g, const float* bias, uint16_t* y,
                                          const uint16_t* res, const std::vector<ops::PostOp>* post, float* strip,
                                          float* rs, int64_t r0, int64_t item) {
  constexpr int T = 2;
  constexpr int64_t B = 16;
  const int64_t blocks = g.m / B, ob = item % blocks, r = r0 + item / blocks, row = r % g.th, img = r / g.th;
  const float* first = mo + (r - r0) * g.tw * g.m + ob * B;
  const int64_t oh0 = row * T, rows = std::min<int64_t>(T, g.oh - oh0), n = rows * g.ow * B;
  output_row<vec16, T>(first, g, row, bias ? bias + ob * B : nullptr, strip, oh0);
  const int64_t at = ((img * blocks + ob) * g.oh + oh0) * g.ow * B;
  if (post && !post->empty()) {
    if (res)
      for (int64_t i = 0; i < n; i += B) MS_STOREV(rs + i, MS_WINO_LOAD_BF16(res + at + i));
    fused::apply_tail(strip, n, nullptr, 1, res ? rs : nullptr, *post);
  }
  for (int64_t i = 0; i < n; i += B) MS_WINO_STORE_BF16(y + at + i, MS_LOADV(vec16, strip + i));
}
#endif

// The weights transformed (U_xi = G g G^T at each point xi, column-major [M, C]) and packed for the
// sgemm (bf16: rounded, packed for the bf16 gemm), one packing per point, kept per weights buffer
// and problem (the packing depends on the number of tiles).
struct TransformedWeights {
  std::mutex mu;
  std::weak_ptr<Buffer> source;
  std::vector<std::shared_ptr<void>> packs;
};

// Whether step 2 runs our own kernel (products_avx512) rather than oneDNN's packed sgemm: f32 on
// 16-channel blocks.
bool own_products(const WinogradConvArgs& a, const Geometry& g) {
  return a.x.dtype() == DType::F32 && g.block == 16 && cpu_simd_width() >= 16;
}

// The sgemm of point xi in column-major terms: C_xi^T [M, tiles] = U_xi [M, C] V_xi^T [C, tiles].
struct Product {
  dnnl_dim_t m, n, k, lda, ldb, ldc;
};
Product product_of(const Geometry& g) { return {g.m, g.tiles, g.c, g.m, g.c, g.m}; }

// U = G g G^T at each point, [xi][C][M].
std::vector<float> transformed(const WinogradConvArgs& a, const Geometry& g) {
  const int64_t A = g.alpha, points = A * A;
  std::vector<float> u(static_cast<size_t>(points * g.c * g.m));
  const bool low = a.w.dtype() == DType::BF16;
  const double(*G)[3] = g.tile == 4 ? kG4 : kG2;
#pragma omp parallel for schedule(static)
  for (int64_t co = 0; co < g.m; ++co)
    for (int64_t ci = 0; ci < g.c; ++ci) {
      float k[9];
      for (int e = 0; e < 9; ++e)
        k[e] = low ? elementwise::bf16_to_f32(a.w.data<bf16>()[(co * g.c + ci) * 9 + e])
                   : a.w.data<float>()[(co * g.c + ci) * 9 + e];
      double t[6][3];  // G g
      for (int64_t i = 0; i < A; ++i)
        for (int c = 0; c < 3; ++c) t[i][c] = G[i][0] * k[c] + G[i][1] * k[3 + c] + G[i][2] * k[6 + c];
      for (int64_t i = 0; i < A; ++i)
        for (int64_t j = 0; j < A; ++j)
          u[static_cast<size_t>(((i * A + j) * g.c + ci) * g.m + co)] =
              static_cast<float>(t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2]);
    }
  return u;
}

// U for our kernel, [xi][panel][C][32]: a panel's 32 (or 16, panel_width) output channels of each
// input channel together; null where there is no room.
std::shared_ptr<void> panels_of(const std::vector<float>& u, const Geometry& g) {
  std::shared_ptr<void> dst(host_allocate(u.size() * sizeof(float)), &host_free);
  if (!dst) return dst;
  auto* out = static_cast<float*>(dst.get());
#pragma omp parallel for schedule(static)
  for (int64_t xi = 0; xi < g.alpha * g.alpha; ++xi)
    for (int64_t p0 = 0, pw = panel_width(g); p0 < g.m; p0 += pw) {
      const int64_t width = std::min<int64_t>(pw, g.m - p0);
      float* o = out + xi * g.c * g.m + p0 * g.c;
      for (int64_t ci = 0; ci < g.c; ++ci)
        for (int64_t k = 0; k < width; ++k) o[ci * width + k] = u[static_cast<size_t>((xi * g.c + ci) * g.m + p0 + k)];
    }
  return dst;
}

Status transform_weights(const WinogradConvArgs& a, const Geometry& g, TransformedWeights& e) {
  const int64_t points = g.alpha * g.alpha;
  const bool low = a.w.dtype() == DType::BF16;
  const std::vector<float> u = transformed(a, g);
  if (own_products(a, g)) {
    std::shared_ptr<void> panels = panels_of(u, g);
    if (!panels) return Status::error(ErrorCode::Unsupported, "Winograd conv: no room for the transformed weights");
    e.packs = {std::move(panels)};
    e.source = a.w.buffer();
    return Status::ok();
  }
  const Product p = product_of(g);
  std::vector<std::shared_ptr<void>> packs(static_cast<size_t>(points));
  bool ok = true;
  // Packed inside a parallel region as the products are computed in one (onednn_sgemm_pack.h).
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t xi = 0; xi < points; ++xi) {
    size_t bytes = 0;
    bool repacked = false;
    const float* uxi = u.data() + xi * g.c * g.m;
    bool packed = false;
    if (!low) {
      if (dnnl::impl::cpu::sgemm_pack_get_size("A", "N", "N", &p.m, &p.n, &p.k, &p.lda, &p.ldb, &bytes, &repacked) ==
          dnnl_success) {
        std::shared_ptr<void> dst(host_allocate(bytes), &host_free);
        packed = dst && dnnl::impl::cpu::sgemm_pack("A", "N", "N", &p.m, &p.n, &p.k, &p.lda, &p.ldb, uxi,
                                                    static_cast<float*>(dst.get())) == dnnl_success;
        packs[static_cast<size_t>(xi)] = std::move(dst);
      }
    } else {
#if MODESCOPE_HAVE_BF16_GEMM_PACK
      using dnnl::impl::bfloat16_t;
      std::vector<bfloat16_t> ub(static_cast<size_t>(g.c * g.m));
      for (size_t e = 0; e < ub.size(); ++e)
        ub[e].raw_bits_ = Eigen::numext::bit_cast<uint16_t>(elementwise::f32_to_bf16(uxi[e]));
      if (dnnl::impl::cpu::gemm_bf16bf16f32_pack_get_size("A", "N", "N", &p.m, &p.n, &p.k, &p.lda, &p.ldb, &bytes,
                                                          &repacked) == dnnl_success) {
        std::shared_ptr<void> dst(host_allocate(bytes), &host_free);
        packed =
            dst && dnnl::impl::cpu::gemm_bf16bf16f32_pack("A", "N", "N", &p.m, &p.n, &p.k, &p.lda, &p.ldb, ub.data(),
                                                          static_cast<bfloat16_t*>(dst.get())) == dnnl_success;
        packs[static_cast<size_t>(xi)] = std::move(dst);
      }
#endif
    }
    if (!packed) {
#pragma omp atomic write
      ok = false;
    }
  }
  if (!ok) return Status::error(ErrorCode::Unsupported, "Winograd conv: packing the transformed weights failed");
  e.packs = std::move(packs);
  e.source = a.w.buffer();
  return Status::ok();
}

Expected<std::vector<std::shared_ptr<void>>> weights_of(const WinogradConvArgs& a, const Geometry& g) {
  const std::string key = std::to_string(reinterpret_cast<uintptr_t>(a.w.buffer().get())) + "|" +
                          std::to_string(a.w.byte_offset()) + "|" + std::to_string(g.m) + "x" + std::to_string(g.c) +
                          "|" + std::to_string(g.tile) + "|" + std::to_string(g.tiles) + "|" +
                          std::string(dtype_name(a.w.dtype())) + (own_products(a, g) ? "|own" : "");
  auto e = WeightsRegistry<TransformedWeights>::instance().entry(key);
  std::lock_guard<std::mutex> lock(e->mu);
  if (e->packs.empty() || e->source.lock() != a.w.buffer()) {
    if (a.w.buffer()->released())
      return Status::error(ErrorCode::Internal, "Winograd conv: its weights were released once packed");
    e->packs.clear();
    MS_RETURN_IF_ERROR(transform_weights(a, g, *e));
  }
  return e->packs;  // copies of the shared pointers: a repacking meanwhile leaves these alive
}

// The rows of tiles (over the batch) a bf16 chunk takes: the most, dividing them evenly (one packing
// of the weights serves every chunk), whose V and products fit kChunkBytes, so that a batch's scratch
// stays within the memory plan's room. Smaller chunks cost more than the cache they save: ResNet-50's
// 64-channel 56x56 conv at two threads took 400 us in one chunk (4.8 MiB) or chunks of 1.2 MiB, 450
// in 0.6 MiB ones, 500 in 0.3 MiB ones (the direct bf16 conv: 490; its products alone, K = 64, 305).
constexpr int64_t kChunkBytes = int64_t{3} << 19;  // 1.5 MiB
int64_t chunk_rows(const Geometry& g) {
  const int64_t rows = g.n * g.th, per_row = g.alpha * g.alpha * g.tw * (g.c * 2 + g.m * 4);
  int64_t best = 1;
  for (int64_t d = 1; d <= rows; ++d)
    if (rows % d == 0 && d * per_row <= kChunkBytes) best = d;
  return best;
}

// winograd_conv in bf16 (F(2x2,3x3)), a chunk of rows of tiles at a time (chunk_rows): V in bf16,
// the products by the packed bf16 gemm into f32, the output transform per row of tiles into an f32
// strip that the post-ops run over before it is rounded into y. g is the chunk's geometry (tiles:
// the chunk's).
Status winograd_conv_bf16(runtime::KernelContext& ctx, const WinogradConvArgs& a, const Geometry& g, int64_t rc,
                          const std::vector<std::shared_ptr<void>>& packs, const char* impl_prefix) {
#if MODESCOPE_HAVE_BF16_GEMM_PACK
  using dnnl::impl::bfloat16_t;
  const int64_t points = g.alpha * g.alpha, chunks = g.n * g.th / rc;
  MS_ASSIGN_OR_RETURN(Tensor vt, ctx.scratch(DType::BF16, {points * g.tiles * g.c}));
  MS_ASSIGN_OR_RETURN(Tensor mt, ctx.scratch(DType::F32, {points * g.tiles * g.m}));
  Tensor residual;  // read after the output's rows are written: a copy where it lies under the output
  if (a.residual) residual = a.residual->raw() == a.y.raw() ? a.residual->clone() : *a.residual;
  std::vector<float> bias;
  if (a.b) {
    bias.resize(static_cast<size_t>(g.m));
    for (int64_t i = 0; i < g.m; ++i)
      bias[static_cast<size_t>(i)] =
          a.b->dtype() == DType::BF16 ? elementwise::bf16_to_f32(a.b->data<bf16>()[i]) : a.b->data<float>()[i];
  }
  const auto* x = reinterpret_cast<const uint16_t*>(a.x.data<bf16>());
  auto* v = reinterpret_cast<uint16_t*>(vt.data<bf16>());
  float* mo = mt.data<float>();

  auto* y = reinterpret_cast<uint16_t*>(a.y.data<bf16>());
  const auto* r = residual.defined() ? reinterpret_cast<const uint16_t*>(residual.data<bf16>()) : nullptr;
  const int64_t in_items = rc * (g.c / 16), out_items = rc * (g.m / 16), strip = g.tile * g.ow * 16;
  const Product p = product_of(g);
  bool ok = true;
#pragma omp parallel
  {
    std::vector<float> buf(static_cast<size_t>(2 * strip));
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int64_t r0 = chunk * rc;
#pragma omp for schedule(static)
      for (int64_t item = 0; item < in_items; ++item) input_rows_bf16(x, g, v, r0, item);
#pragma omp for schedule(dynamic, 1)
      for (int64_t xi = 0; xi < points; ++xi) {
        const float beta = 0.f;
        if (dnnl::impl::cpu::gemm_bf16bf16f32_compute(
                "P", "N", &p.m, &p.n, &p.k, static_cast<const bfloat16_t*>(packs[static_cast<size_t>(xi)].get()),
                &p.lda, reinterpret_cast<const bfloat16_t*>(v) + xi * g.tiles * g.c, &p.ldb, &beta,
                mo + xi * g.tiles * g.m, &p.ldc) != dnnl_success) {
#pragma omp atomic write
          ok = false;
        }
      }
#pragma omp for schedule(static)
      for (int64_t item = 0; item < out_items; ++item)
        output_rows_bf16(mo, g, a.b ? bias.data() : nullptr, y, r, a.post, buf.data(), buf.data() + strip, r0, item);
    }
  }
  if (!ok) return ctx.unsupported_case("Winograd conv: the packed bf16 gemm failed");
  ctx.set_impl(std::string(impl_prefix) + "modescope:wino_2x3_bf16");
  return Status::ok();
#else
  (void)a, (void)g, (void)rc, (void)packs, (void)impl_prefix;
  return ctx.unsupported_case("bf16 Winograd conv not built in");
#endif
}

// The post-ops over the item's finished tiles: each of their output rows, its columns of them.
void fused_tail(const Geometry& g, const FusedPlan& f, int64_t item, float* y, const float* r,
                const std::vector<ops::PostOp>& post) {
  const int64_t blocks = g.m / g.block;
  int64_t img = 0, t0 = 0, t1 = 0;
  f.range(g, item, img, t0, t1);
  for (int64_t row = t0 / g.tw; row * g.tw < t1; ++row) {
    const int64_t tc0 = std::max(t0 - row * g.tw, int64_t{0}), tc1 = std::min(t1 - row * g.tw, g.tw);
    const int64_t c0 = tc0 * g.tile, c1 = std::min(tc1 * g.tile, g.ow);
    for (int64_t oh = row * g.tile; oh < std::min((row + 1) * g.tile, g.oh); ++oh)
      for (int64_t ob = 0; ob < blocks; ++ob) {
        const int64_t at = (((img * blocks + ob) * g.oh + oh) * g.ow + c0) * g.block;
        fused::apply_tail(y + at, (c1 - c0) * g.block, nullptr, 1, r ? r + at : nullptr, post);
      }
  }
}

// winograd_conv's fused steps (fused_plan): each thread its items, in its own room for V and the
// products.
Status winograd_conv_fused(runtime::KernelContext& ctx, const WinogradConvArgs& a, const Geometry& g,
                           const FusedPlan& f, const float* u, const char* impl_prefix) {
  const int64_t points = g.alpha * g.alpha;
  const int64_t threads = std::min<int64_t>(std::max(1, omp_get_max_threads()), f.items);
  const int64_t per_thread = points * 14 * (g.c + g.m);
  MS_ASSIGN_OR_RETURN(Tensor st, ctx.scratch(DType::F32, {threads * per_thread}));
  // The post-ops read the residual after the item's tiles are written: one the memory plan put
  // under the output is read from a copy.
  Tensor residual;
  if (a.residual) residual = a.residual->raw() == a.y.raw() ? a.residual->clone() : *a.residual;
  const float* x = a.x.data<float>();
  const float* bias = a.b ? a.b->data<float>() : nullptr;
  const float* r = residual.defined() ? residual.data<float>() : nullptr;
  float* y = a.y.data<float>();
  float* scratch = st.data<float>();
  const bool tail = a.post && !a.post->empty();
#pragma omp parallel for schedule(static) num_threads(static_cast <int>(threads))
  for (int64_t item = 0; item < f.items; ++item) {
    float* vb = scratch + omp_get_thread_num() * per_thread;
    fused_item_avx512(x, u, g, f, bias, y, vb, vb + points * 14 * g.c, item);
    if (tail) fused_tail(g, f, item, y, r, *a.post);
  }
  ctx.set_impl(std::string(impl_prefix) + "modescope:wino_4x3_rows");
  return Status::ok();
}

}  // namespace
#endif

int winograd_tile(int64_t oh, int64_t ow, bool bf16) { return !bf16 && oh % 4 == 0 && ow % 4 == 0 ? 4 : 2; }

size_t winograd_scratch_bytes(const WinogradConvArgs& a) {
  const bool bf16 = a.x.dtype() == DType::BF16;
  const int64_t t = winograd_tile(a.y.dim(2), a.y.dim(3), bf16), alpha = t + 2;
  int64_t tiles = a.y.dim(0) * ((a.y.dim(2) + t - 1) / t) * ((a.y.dim(3) + t - 1) / t);
#if MODESCOPE_HAVE_SGEMM_PACK && MS_SIMD_DISPATCH
  if (bf16) tiles = chunk_rows(geometry_of(a)) * ((a.y.dim(3) + t - 1) / t);  // a chunk's
  if (const Geometry g = geometry_of(a); !bf16) {
    const FusedPlan f = fused_plan(g, true);  // an item's tiles (at most 14) a thread
    if (f.per_img > 0) tiles = std::min<int64_t>(std::max(1, omp_get_max_threads()), f.items) * 14;
  }
#endif
  return static_cast<size_t>(alpha * alpha * tiles) *
         (static_cast<size_t>(a.x.dim(1)) * dtype_size(a.x.dtype()) + static_cast<size_t>(a.y.dim(1)) * sizeof(float));
}

bool winograd_conv_applies(const WinogradConvArgs& a, bool bf16_products) {
#if MODESCOPE_HAVE_SGEMM_PACK && MS_SIMD_DISPATCH
  const int64_t blk = a.block;
  if ((blk != 8 && blk != 16) || cpu_simd_width() < blk) return false;
  const DType t = a.x.dtype();
  if ((t != DType::F32 && t != DType::BF16) || a.w.dtype() != t || a.y.dtype() != t) return false;
  if (t == DType::BF16) {
#if MODESCOPE_HAVE_BF16_GEMM_PACK
    // Not on 7x7 planes, where oneDNN's direct bf16 conv keeps up: the 16 points' 8 MiB of transformed
    // weights of ResNet-50's 512-channel layer-4 convs serve 16 tiles (two threads: 525-530 against
    // 550 us at best, medians 585-595 against 565).
    if (!bf16_products || blk != 16 || a.y.dim(2) < 14 || a.y.dim(3) < 14) return false;
#else
    return false;
#endif
  }
  if (a.x.rank() != 4 || a.w.rank() != 4 || a.y.rank() != 4) return false;
  if (a.b && ((a.b->dtype() != DType::F32 && a.b->dtype() != t) || a.b->numel() != a.y.dim(1))) return false;
  if (a.w.dim(2) != 3 || a.w.dim(3) != 3 || a.w.dim(0) != a.y.dim(1) || a.w.dim(1) != a.x.dim(1) ||
      a.x.dim(0) != a.y.dim(0))
    return false;
  if (a.x.dim(1) % blk != 0 || a.y.dim(1) % blk != 0 || a.y.dim(2) < 1 || a.y.dim(3) < 1) return false;
  if (a.pad_top < 0 || a.pad_left < 0 || a.pad_top > 2 || a.pad_left > 2) return false;
  if (a.residual && (a.residual->dtype() != t || a.residual->shape() != a.y.shape())) return false;
  return a.w.buffer() && a.w.buffer()->frozen();
#else
  (void)a, (void)bf16_products;
  return false;
#endif
}

bool winograd_preferred_over_onednn(const WinogradConvArgs& a) {
#if MODESCOPE_HAVE_SGEMM_PACK && MS_SIMD_DISPATCH
  if (a.x.dtype() != DType::F32 || a.block != 16 || cpu_simd_width() < 16 || a.y.rank() != 4) return false;
  const Geometry g = geometry_of(a);
  if (fused_plan(g, true).per_img > 0) return true;
  return g.tiles <= 16 || (g.tile == 4 && (g.oh < kOneDnnLargeTilesMinSide || g.ow < kOneDnnLargeTilesMinSide));
#else
  (void)a;
  return false;
#endif
}

Status winograd_conv(runtime::KernelContext& ctx, const WinogradConvArgs& a, const char* impl_prefix) {
#if MODESCOPE_HAVE_SGEMM_PACK && MS_SIMD_DISPATCH
  const Geometry g = geometry_of(a);
  if (a.x.dtype() == DType::BF16) {
    Geometry gc = g;
    const int64_t rc = chunk_rows(g);
    gc.tiles = rc * g.tw;
    MS_ASSIGN_OR_RETURN(auto packs, weights_of(a, gc));
    ctx.keeps_packed_copy_of(a.w);
    return winograd_conv_bf16(ctx, a, gc, rc, packs, impl_prefix);
  }
  MS_ASSIGN_OR_RETURN(auto packs, weights_of(a, g));
  ctx.keeps_packed_copy_of(a.w);
  if (const FusedPlan f = fused_plan(g, true); f.per_img > 0 && panel_width(g) == 32)
    return winograd_conv_fused(ctx, a, g, f, static_cast<const float*>(packs.front().get()), impl_prefix);
  const int64_t points = g.alpha * g.alpha;
  MS_ASSIGN_OR_RETURN(Tensor vt, ctx.scratch(DType::F32, {points * g.tiles * g.c}));
  MS_ASSIGN_OR_RETURN(Tensor mt, ctx.scratch(DType::F32, {points * g.tiles * g.m}));
  // The post-ops read the residual after the output's rows are written: a residual the memory plan
  // put under the output is read from a copy.
  Tensor residual;
  if (a.residual) residual = a.residual->raw() == a.y.raw() ? a.residual->clone() : *a.residual;
  const float* x = a.x.data<float>();
  float* v = vt.data<float>();
  float* mo = mt.data<float>();
  float* y = a.y.data<float>();
  const float* bias = a.b ? a.b->data<float>() : nullptr;
  const bool wide = g.block == 16;

  const int64_t in_items = g.n * g.th * (g.c / g.block);
#pragma omp parallel for schedule(static)
  for (int64_t item = 0; item < in_items; ++item)
    wide ? input_rows_avx512(x, g, v, item) : input_rows_avx2(x, g, v, item);

  const Product p = product_of(g);
  bool ok = true;
  if (own_products(a, g)) {
    const auto* u = static_cast<const float*>(packs.front().get());
    const int64_t items = points * ((g.m + panel_width(g) - 1) / panel_width(g));
#pragma omp parallel for schedule(static)
    for (int64_t item = 0; item < items; ++item) products_avx512(u, v, mo, g, item);
  } else
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t xi = 0; xi < points; ++xi) {
      const float beta = 0.f;
      if (dnnl::impl::cpu::sgemm_compute(
              "P", "N", &p.m, &p.n, &p.k, static_cast<const float*>(packs[static_cast<size_t>(xi)].get()), &p.lda,
              v + xi * g.tiles * g.c, &p.ldb, &beta, mo + xi * g.tiles * g.m, &p.ldc) != dnnl_success) {
#pragma omp atomic write
        ok = false;
      }
    }
  if (!ok) return ctx.unsupported_case("Winograd conv: the packed sgemm failed");

  const bool tail = a.post && !a.post->empty();
  const float* r = residual.defined() ? residual.data<float>() : nullptr;
  const int64_t out_items = g.n * g.th * (g.m / g.block);
#pragma omp parallel for schedule(static)
  for (int64_t item = 0; item < out_items; ++item) {
    wide ? output_rows_avx512(mo, g, bias, y, item) : output_rows_avx2(mo, g, bias, y, item);
    if (!tail) continue;
    // The strip of rows just written, contiguous in its channel block's plane.
    const int64_t blocks = g.m / g.block, ob = item % blocks, row = item / blocks % g.th, img = item / blocks / g.th;
    const int64_t first = row * g.tile, rows = std::min(g.tile, g.oh - first);
    const int64_t at = ((img * blocks + ob) * g.oh + first) * g.ow * g.block;
    fused::apply_tail(y + at, rows * g.ow * g.block, nullptr, 1, r ? r + at : nullptr, *a.post);
  }
  ctx.set_impl(std::string(impl_prefix) + (g.tile == 4 ? "modescope:wino_4x3" : "modescope:wino_2x3"));
  return Status::ok();
#else
  (void)a, (void)impl_prefix;
  return ctx.unsupported_case("Winograd conv not built in");
#endif
}

}  // namespace ms::cpu::nn
