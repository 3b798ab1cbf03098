// Our Winograd F(4x4,3x3) with its three steps fused, a run of tiles at a time (see the comment of
// fused_item_avx512).
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/winograd_steps.h"
#include "engine/runtime/kernel.h"

namespace ms::cpu::nn::wino {

#if MODESCOPE_HAVE_SGEMM_PACK && MS_SIMD_DISPATCH
namespace {

// Step 1, 2 and 3 fused (f32, F(4x4,3x3), 16-channel blocks, AVX-512), where U fits the cache
// (kFusedMaxU): a work item is a run of at most 14 tiles of one image (row-major, one group of the
// products' register tiles; an image's tiles shared evenly between its items), taken through the
// three steps by one thread, its V and products in that thread's own scratch, so that neither
// leaves the core's L2 and no step waits for the others' threads; U stays in cache from item to
// item. ResNet-50, two threads, in the model: its 64-channel 56x56 convs 395-426 us with oneDNN's
// F(4x4,3x3) -> 300-358 fused; its 128-channel 28x28 ones 356-358 in our three steps -> 326-333.

// Step 1 (F(4x4,3x3)) for a 6x6 patch wholly inside a 16-channel plane: rp its first pixel, rs the
// plane's row stride; the 36 points to vp, xs apart. (input_row's transform without its bounds.)
[[gnu::always_inline]] MS_TARGET_AVX512 inline void input_patch4(const float* rp, int64_t rs, float* vp, int64_t xs) {
  vec16 r[6][6];
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i, rp += rs) {
    vec16 d[6];
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j) d[j] = MS_LOADV(vec16, rp + 16 * j);
    bt<vec16, 4>(d, r[i]);
  }
#pragma GCC unroll 6
  for (int j = 0; j < 6; ++j) {
    vec16 col[6], o[6];
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) col[i] = r[i][j];
    bt<vec16, 4>(col, o);
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) MS_STOREV(vp + (6 * i + j) * xs, o[i]);
  }
}

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

}  // namespace

FusedPlan fused_plan(const Geometry& g, bool f32) {
  FusedPlan f;
  if (!f32 || g.block != 16 || g.tile != 4 || cpu_simd_width() < 16 || g.m % 16 != 0 ||
      g.alpha * g.alpha * g.c * g.m * int64_t{sizeof(float)} > kFusedMaxU)
    return f;
  f.per_img = (g.th * g.tw + kRunTiles - 1) / kRunTiles;
  f.items = g.n * f.per_img;
  return f;
}

namespace {

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

}  // namespace

// winograd_conv's fused steps (fused_plan): each thread its items, in its own room for V and the
// products.
Status winograd_conv_fused(runtime::KernelContext& ctx, const WinogradConvArgs& a, const Geometry& g,
                           const FusedPlan& f, const float* u, const char* impl_prefix) {
  const int64_t points = g.alpha * g.alpha;
  const int64_t threads = std::min<int64_t>(std::max(1, omp_get_max_threads()), f.items);
  const int64_t per_thread = points * kRunTiles * (g.c + g.m);
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
    fused_item_avx512(x, u, g, f, bias, y, vb, vb + points * kRunTiles * g.c, item);
    if (tail) fused_tail(g, f, item, y, r, *a.post);
  }
  ctx.set_impl(std::string(impl_prefix) + "modescope:wino_4x3_rows");
  return Status::ok();
}

#endif

}  // namespace ms::cpu::nn::wino
