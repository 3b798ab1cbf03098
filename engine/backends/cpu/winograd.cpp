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
#include "engine/backends/cpu/winograd_steps.h"
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

namespace ms::cpu::nn {

#if MODESCOPE_HAVE_SGEMM_PACK && MS_SIMD_DISPATCH
namespace {

using wino::fused_plan;
using wino::FusedPlan;
using wino::Geometry;
using wino::geometry_of;
using wino::input_row;
using wino::load_lanes;
using wino::output_row;
using wino::panel_products;
using wino::panel_width;
using wino::store_lanes;
using wino::winograd_conv_fused;

// The transforms (Lavin and Gray's F(4x4,3x3) on the points 0, +-1, +-2, inf; F(2x2,3x3) on 0, +-1,
// inf): y = A^T [(G g G^T) * (B^T d B)] A.
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

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
    const FusedPlan f = fused_plan(g, true);  // an item's tiles a thread
    if (f.per_img > 0) tiles = std::min<int64_t>(std::max(1, omp_get_max_threads()), f.items) * wino::kRunTiles;
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
