#include "engine/backends/cpu/conv_strided.h"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/backends/cpu/weights_registry.h"
#include "engine/core/host_memory.h"
#include "engine/runtime/kernel.h"

#if MS_SIMD_DISPATCH
#include <immintrin.h>
#endif

namespace ms::cpu::nn {

#if MS_SIMD_DISPATCH
namespace {

constexpr int64_t kB = 16;  // channels a block

// Output channels a panel: 64 on rows of at most 7 pixels (7 x 4 accumulators), else 32 (14 x 2).
int64_t panel_of(int64_t ow) { return ow <= 7 ? 64 : 32; }

struct PackedStrided {
  std::mutex mu;
  std::weak_ptr<Buffer> source;
  std::shared_ptr<float> panels;
};

// [M / pw][C / 16][3][3][16][pw] (a last, narrower panel where pw does not divide M).
std::shared_ptr<float> pack_strided(const Tensor& w, int64_t m, int64_t c, int64_t pw) {
  std::shared_ptr<float> out(static_cast<float*>(host_allocate(static_cast<size_t>(m * c * 9) * sizeof(float))),
                             &host_free);
  if (!out) return out;
  const float* src = w.data<float>();
  for (int64_t o0 = 0; o0 < m; o0 += pw) {
    const int64_t width = std::min(pw, m - o0);
    float* dst = out.get() + o0 * c * 9;
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t tap = 0; tap < 9; ++tap)
        for (int64_t k = 0; k < width; ++k)
          dst[(((ci / kB) * 9 + tap) * kB + ci % kB) * width + k] = src[((o0 + k) * c + ci) * 9 + tap];
  }
  return out;
}

Expected<std::shared_ptr<float>> packed_strided(const Tensor& w, int64_t m, int64_t c, int64_t pw) {
  const std::string key = std::to_string(reinterpret_cast<uintptr_t>(w.buffer().get())) + "|" +
                          std::to_string(w.byte_offset()) + "|" + std::to_string(m) + "x" + std::to_string(c) + "|" +
                          std::to_string(pw);
  auto e = WeightsRegistry<PackedStrided>::instance().entry(key);
  std::lock_guard<std::mutex> lock(e->mu);
  if (!e->panels || e->source.lock() != w.buffer()) {
    e->panels = pack_strided(w, m, c, pw);
    if (!e->panels) return Status::error(ErrorCode::Unsupported, "3x3 stride-2 conv: no room for the packed weights");
    e->source = w.buffer();
  }
  return e->panels;
}

// The residual's Add, then Relu or Clip in the accumulators; any other list after the store.
struct Finish {
  bool add = false, clamp = false, generic = false;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
};

Finish finish_of(const std::vector<ops::PostOp>* post) {
  Finish f;
  if (!post || post->empty()) return f;
  size_t i = 0;
  if ((*post)[0].kind == ops::PostOp::Kind::Add) f.add = true, i = 1;
  if (post->size() == i) return f;
  if (post->size() == i + 1 && (*post)[i].kind == ops::PostOp::Kind::Relu) {
    f.clamp = true, f.lo = 0.f;
    return f;
  }
  if (post->size() == i + 1 && (*post)[i].kind == ops::PostOp::Kind::Clip) {
    f.clamp = true, f.lo = (*post)[i].alpha, f.hi = (*post)[i].beta;
    return f;
  }
  return Finish{.generic = true};
}

// What a tile reads and writes.
struct TileArgs {
  const float* x;     // the image's channel block 0, plane [H][W][16]
  int64_t h, w, c;    // the input's rows, columns and channels
  int64_t iy0, ix0;   // the input position of the tile's first pixel's tap (0, 0): 2 oy - pt, 2 ox0 - pl
  const float* u;     // the panel's packed weights
  const float* bias;  // the panel's, or null
  float* y;           // the tile's first output in the panel's first block (block stride ycs)
  const float* res;   // likewise, or null
  int64_t ycs;
};

// R pixels of one output row against a panel of P x 16 output channels. LEFT: the first pixel's
// left tap (kx = 0) falls left of the input (pad_left 1, the row's first tile): skipped.
template <int R, int P, bool LEFT> MS_TARGET_AVX512 void strided_tile(const TileArgs& a, const Finish& f) {
  __m512 acc[R][P];
#pragma GCC unroll 4
  for (int j = 0; j < P; ++j) {
    const __m512 b = a.bias ? _mm512_loadu_ps(a.bias + kB * j) : _mm512_setzero_ps();
#pragma GCC unroll 14
    for (int t = 0; t < R; ++t) acc[t][j] = b;
  }
  const float* u = a.u;
  const int64_t plane = a.h * a.w * kB;
  for (int64_t cb = 0; cb < a.c / kB; ++cb) {
    for (int ky = 0; ky < 3; ++ky, u += 3 * kB * kB * P) {
      const int64_t iy = a.iy0 + ky;
      if (iy < 0 || iy >= a.h) continue;
      const float* row = a.x + cb * plane + (iy * a.w + a.ix0) * kB;  // the first pixel's tap (.., 0)
      _mm_prefetch(reinterpret_cast<const char*>(row + plane), _MM_HINT_T0);
#pragma GCC unroll 3
      for (int kx = 0; kx < 3; ++kx) {
        const float* ur = u + kx * kB * kB * P;
#pragma GCC unroll 2
        for (int l = 0; l < kB; ++l) {
#pragma GCC unroll 4
          for (int j = 0; j < P; ++j)
            _mm_prefetch(reinterpret_cast<const char*>(ur + l * kB * P + 4096 + kB * j), _MM_HINT_T1);
          __m512 wv[P];
#pragma GCC unroll 4
          for (int j = 0; j < P; ++j) wv[j] = _mm512_loadu_ps(ur + l * kB * P + kB * j);
#pragma GCC unroll 14
          for (int t = 0; t < R; ++t) {
            if (LEFT && t == 0 && kx == 0) continue;
            const __m512 b = _mm512_set1_ps(row[(2 * t + kx) * kB + l]);
#pragma GCC unroll 4
            for (int j = 0; j < P; ++j) acc[t][j] = _mm512_fmadd_ps(b, wv[j], acc[t][j]);
          }
        }
      }
    }
  }
  const __m512 lo = _mm512_set1_ps(f.lo), hi = _mm512_set1_ps(f.hi);
#pragma GCC unroll 4
  for (int j = 0; j < P; ++j)
#pragma GCC unroll 14
    for (int t = 0; t < R; ++t) {
      __m512 v = acc[t][j];
      if (f.add) v = _mm512_add_ps(v, _mm512_loadu_ps(a.res + j * a.ycs + t * kB));
      // (The zero-masked forms: GCC 12 warns of the plain ones' undefined pass-through operand.)
      if (f.clamp) v = _mm512_maskz_min_ps(0xffff, _mm512_maskz_max_ps(0xffff, v, lo), hi);
      _mm512_storeu_ps(a.y + j * a.ycs + t * kB, v);
    }
}

using StridedFn = void (*)(const TileArgs&, const Finish&);
constexpr int kMaxR = 14;

template <int P, bool LEFT, int... R>
constexpr std::array<StridedFn, kMaxR + 1> strided_tiles(std::integer_sequence<int, R...>) {
  return {nullptr, &strided_tile<R + 1, P, LEFT>...};
}
// [P / 2 - 1 ... : index by panel blocks][LEFT][R]: P = 1, 2 (R up to 14) and 3, 4 (R up to 7).
template <int P, bool LEFT> constexpr std::array<StridedFn, kMaxR + 1> table_of() {
  if constexpr (P <= 2)
    return strided_tiles<P, LEFT>(std::make_integer_sequence<int, kMaxR>{});
  else
    return strided_tiles<P, LEFT>(std::make_integer_sequence<int, 7>{});
}
constexpr std::array<std::array<std::array<StridedFn, kMaxR + 1>, 2>, 4> kStrided = {
    {{table_of<1, false>(), table_of<1, true>()},
     {table_of<2, false>(), table_of<2, true>()},
     {table_of<3, false>(), table_of<3, true>()},
     {table_of<4, false>(), table_of<4, true>()}}};

}  // namespace
#endif

bool strided_conv_applies(const StridedConvArgs& a) {
#if MS_SIMD_DISPATCH
  if (cpu_simd_width() < 16) return false;
  const auto f32 = [](const Tensor& t) { return t.dtype() == DType::F32 && t.rank() == 4; };
  if (!f32(a.x) || !f32(a.w) || !f32(a.y)) return false;
  if (a.w.dim(2) != 3 || a.w.dim(3) != 3 || a.w.dim(1) != a.x.dim(1) || a.w.dim(0) != a.y.dim(1)) return false;
  if (a.x.dim(0) != a.y.dim(0) || a.x.dim(1) % kB != 0 || a.y.dim(1) % kB != 0) return false;
  if (a.pad_top < 0 || a.pad_top > 1 || a.pad_left < 0 || a.pad_left > 1) return false;
  const int64_t h = a.x.dim(2), w = a.x.dim(3), oh = a.y.dim(2), ow = a.y.dim(3);
  if (oh < 1 || ow < 1 || 2 * (oh - 1) + 2 - a.pad_top > h - 1 || 2 * (ow - 1) + 2 - a.pad_left > w - 1) return false;
  if (a.b && (a.b->dtype() != DType::F32 || a.b->numel() != a.y.dim(1))) return false;
  if (a.residual && (!f32(*a.residual) || a.residual->shape() != a.y.shape())) return false;
  return a.w.buffer() && a.w.buffer()->frozen();
#else
  (void)a;
  return false;
#endif
}

Status strided_conv(runtime::KernelContext& ctx, const StridedConvArgs& a, const char* impl_prefix) {
#if MS_SIMD_DISPATCH
  const int64_t n = a.x.dim(0), c = a.x.dim(1), h = a.x.dim(2), w = a.x.dim(3);
  const int64_t m = a.y.dim(1), oh = a.y.dim(2), ow = a.y.dim(3);
  const int64_t pw = panel_of(ow), maxr = pw == 64 ? 7 : kMaxR;
  MS_ASSIGN_OR_RETURN(std::shared_ptr<float> packed, packed_strided(a.w, m, c, pw));
  const Finish f = finish_of(a.post);
  const float* x = a.x.data<float>();
  const float* bias = a.b ? a.b->data<float>() : nullptr;
  const float* res = a.residual ? a.residual->data<float>() : nullptr;
  float* y = a.y.data<float>();
  const int64_t panels = (m + pw - 1) / pw, groups = (ow + maxr - 1) / maxr;
  const int64_t items = n * panels * oh * groups, ycs = oh * ow * kB;
  // Items in (image, panel, row, group) order: a thread streams its panels' weights once; or where
  // the weights fit L2 (1 MiB or less), (image, row, group, panel): a thread reads its rows once.
  // ResNet-50's 128-channel conv (56x56 -> 28x28, 0.6 MiB of weights): 1.00 ms the first way, 0.80
  // the second (oneDNN's direct conv: 0.91).
  const bool row_major = m * c * 9 * int64_t{sizeof(float)} <= (int64_t{1} << 20);
#pragma omp parallel for schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    int64_t gi, oy, pn, img;
    if (row_major) {
      pn = item % panels, gi = item / panels % groups, oy = item / panels / groups % oh,
      img = item / panels / groups / oh;
    } else {
      gi = item % groups, oy = item / groups % oh, pn = item / groups / oh % panels, img = item / groups / oh / panels;
    }
    const int64_t ox0 = gi * ow / groups, r = (gi + 1) * ow / groups - ox0;
    const int64_t o0 = pn * pw, width = std::min(pw, m - o0);
    const int64_t at = (((img * m + o0) / kB * oh + oy) * ow + ox0) * kB;  // (img, o0 / 16, oy, ox0)
    const TileArgs t{.x = x + img * c * h * w,
                     .h = h,
                     .w = w,
                     .c = c,
                     .iy0 = 2 * oy - a.pad_top,
                     .ix0 = 2 * ox0 - a.pad_left,
                     .u = packed.get() + o0 * c * 9,
                     .bias = bias ? bias + o0 : nullptr,
                     .y = y + at,
                     .res = res ? res + at : nullptr,
                     .ycs = ycs};
    const bool left = ox0 == 0 && a.pad_left == 1;
    kStrided[static_cast<size_t>(width / kB - 1)][left ? 1 : 0][static_cast<size_t>(r)](t, f);
    if (f.generic)
      for (int64_t j = 0; j < width / kB; ++j)
        fused::apply_tail(y + at + j * ycs, r * kB, nullptr, 1, res ? res + at + j * ycs : nullptr, *a.post);
  }
  ctx.set_impl(std::string(impl_prefix) + "modescope:conv3x3s2");
  return Status::ok();
#else
  (void)a, (void)impl_prefix;
  return ctx.unsupported_case("our 3x3 stride-2 conv is not built in");
#endif
}

}  // namespace ms::cpu::nn
