#include "engine/backends/cpu/conv_strided.h"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "engine/backends/cpu/conv_onednn.h"
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
    if (w.buffer()->released()) return internal_error("3x3 conv: its weights were released once packed");
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

// R output pixels against a panel of P x 16 output channels at stride S: one row's R pixels from
// the tile's first (RL = 0), or two whole rows of RL pixels (R = 2 RL; rows oy and oy + 1, contiguous
// in y), a row whose tap row falls outside the input reading zeros. LEFT: a row's first pixel's left
// tap (kx = 0) falls left of the input (pad_left 1, the row's first tile); RIGHT: its last pixel's
// right tap past the input (stride 1): skipped.
template <int R, int P, int S, bool LEFT, bool RIGHT, int RL>
MS_TARGET_AVX512 void conv_tile(const TileArgs& a, const Finish& f) {
  alignas(64) static const float kZeros[(2 * 7 + 2) * kB] = {};
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
      const int64_t iy0 = a.iy0 + ky, iy1 = iy0 + S;
      const bool in0 = iy0 >= 0 && iy0<a.h, in1 = RL> 0 && iy1 >= 0 && iy1 < a.h;
      if (!in0 && !in1) continue;
      // Each row's first pixel's tap (.., 0) (one pixel left of the row where LEFT: never read).
      const float* rows[2] = {in0 ? a.x + cb * plane + (iy0 * a.w + a.ix0) * kB : kZeros,
                              in1 ? a.x + cb * plane + (iy1 * a.w + a.ix0) * kB : kZeros};
      _mm_prefetch(reinterpret_cast<const char*>(rows[0] + plane), _MM_HINT_T0);
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
            const int col = RL > 0 ? t % (RL > 0 ? RL : 1) : t, last = RL > 0 ? RL - 1 : R - 1;
            if ((LEFT && col == 0 && kx == 0) || (RIGHT && col == last && kx == 2)) continue;
            const __m512 b = _mm512_set1_ps(rows[RL > 0 ? t / (RL > 0 ? RL : 1) : 0][(S * col + kx) * kB + l]);
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

// Pairs of rows of RL pixels (1 to 7) against 32 channels: [stride - 1][RL].
template <int S, bool RIGHT, int... RL>
constexpr std::array<StridedFn, 8> pair_tiles(std::integer_sequence<int, RL...>) {
  return {nullptr, &conv_tile<2 * (RL + 1), 2, S, true, RIGHT, RL + 1>...};
}
constexpr std::array<std::array<StridedFn, 8>, 2> kPairs = {
    {pair_tiles<1, true>(std::make_integer_sequence<int, 7>{}),
     pair_tiles<2, false>(std::make_integer_sequence<int, 7>{})}};

template <int P, bool LEFT, int... R>
constexpr std::array<StridedFn, kMaxR + 1> strided_tiles(std::integer_sequence<int, R...>) {
  return {nullptr, &conv_tile<R + 1, P, 2, LEFT, false, 0>...};
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

// Stride 1 on rows of at most 7 (one tile a row, both edges padded): [P - 1][R].
template <int P, int... R> constexpr std::array<StridedFn, 8> row_tiles(std::integer_sequence<int, R...>) {
  return {nullptr, &conv_tile<R + 1, P, 1, true, true, 0>...};
}
constexpr std::array<std::array<StridedFn, 8>, 4> kRows = {
    {row_tiles<1>(std::make_integer_sequence<int, 7>{}), row_tiles<2>(std::make_integer_sequence<int, 7>{}),
     row_tiles<3>(std::make_integer_sequence<int, 7>{}), row_tiles<4>(std::make_integer_sequence<int, 7>{})}};

}  // namespace
#endif

namespace {
// What both cases need: an AVX-512 CPU; f32 4-D tensors; a 3x3 kernel over whole 16-channel blocks
// each way; an f32 bias and a residual of the output's shape where given; frozen weights.
bool operands_fit(const StridedConvArgs& a) {
#if MS_SIMD_DISPATCH
  if (cpu_simd_width() < 16) return false;
  const auto f32 = [](const Tensor& t) { return t.dtype() == DType::F32 && t.rank() == 4; };
  if (!f32(a.x) || !f32(a.w) || !f32(a.y)) return false;
  if (a.w.dim(2) != 3 || a.w.dim(3) != 3 || a.w.dim(1) != a.x.dim(1) || a.w.dim(0) != a.y.dim(1)) return false;
  if (a.x.dim(0) != a.y.dim(0) || a.x.dim(1) % kB != 0 || a.y.dim(1) % kB != 0) return false;
  if (a.b && (a.b->dtype() != DType::F32 || a.b->numel() != a.y.dim(1))) return false;
  if (a.residual && (!f32(*a.residual) || a.residual->shape() != a.y.shape())) return false;
  return a.w.buffer() && a.w.buffer()->frozen();
#else
  (void)a;
  return false;
#endif
}
}  // namespace

bool small_plane_conv_applies(const StridedConvArgs& a) {
  if (!operands_fit(a) || a.pad_top != 1 || a.pad_left != 1) return false;
  return a.y.dim(2) == a.x.dim(2) && a.y.dim(3) == a.x.dim(3) && a.y.dim(3) >= 2 && a.y.dim(3) <= 7;
}

bool strided_conv_applies(const StridedConvArgs& a) {
  if (!operands_fit(a) || a.pad_top < 0 || a.pad_top > 1 || a.pad_left < 0 || a.pad_left > 1) return false;
  const int64_t h = a.x.dim(2), w = a.x.dim(3), oh = a.y.dim(2), ow = a.y.dim(3);
  return oh >= 1 && ow >= 1 && 2 * (oh - 1) + 2 - a.pad_top <= h - 1 && 2 * (ow - 1) + 2 - a.pad_left <= w - 1;
}

Status strided_conv(runtime::KernelContext& ctx, const StridedConvArgs& a, const char* impl_prefix, int stride) {
#if MS_SIMD_DISPATCH
  const int64_t n = a.x.dim(0), c = a.x.dim(1), h = a.x.dim(2), w = a.x.dim(3);
  const int64_t m = a.y.dim(1), oh = a.y.dim(2), ow = a.y.dim(3);
  const bool pairs = ow <= 7 && a.pad_left == 1;  // two whole rows a tile
  const int64_t pw = pairs ? 32 : panel_of(ow), maxr = pw == 64 ? 7 : kMaxR;
  MS_ASSIGN_OR_RETURN(std::shared_ptr<float> packed, packed_strided(a.w, m, c, pw));
  ctx.keeps_packed_copy_of(a.w);
  const Finish f = finish_of(a.post);
  const float* x = a.x.data<float>();
  const float* bias = a.b ? a.b->data<float>() : nullptr;
  const float* res = a.residual ? a.residual->data<float>() : nullptr;
  float* y = a.y.data<float>();
  const int64_t panels = (m + pw - 1) / pw, groups = (ow + maxr - 1) / maxr;
  const int64_t rows = pairs ? (oh + 1) / 2 : oh;  // rows, or pairs of rows
  const int64_t items = n * panels * rows * groups, ycs = oh * ow * kB;
  // Items in (image, panel, row, group) order: a thread streams its panels' weights once; or where
  // the weights fit L2 (1 MiB or less), (image, row, group, panel): a thread reads its rows once.
  // ResNet-50's 128-channel conv (56x56 -> 28x28, 0.6 MiB of weights): 1.00 ms the first way, 0.80
  // the second (oneDNN's direct conv: 0.91).
  const bool row_major = m * c * 9 * int64_t{sizeof(float)} <= (int64_t{1} << 20);
#pragma omp parallel for schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    int64_t gi, oy, pn, img;
    if (row_major) {
      pn = item % panels, gi = item / panels % groups, oy = item / panels / groups % rows,
      img = item / panels / groups / rows;
    } else {
      gi = item % groups, oy = item / groups % rows, pn = item / groups / rows % panels,
      img = item / groups / rows / panels;
    }
    if (pairs) oy *= 2;
    const int64_t ox0 = gi * ow / groups, r = (gi + 1) * ow / groups - ox0;
    const int64_t o0 = pn * pw, width = std::min(pw, m - o0);
    // A pair of rows in one tile, or each of the item's rows (one, or two where a pair does not fit
    // the tile: the last of an odd count, a panel of other than 32 channels) alone.
    const int64_t nrows = pairs ? std::min<int64_t>(2, oh - oy) : 1;
    const bool pair = nrows == 2 && width == 32;
    for (int64_t k = 0; k < (pair ? 1 : nrows); ++k) {
      const int64_t at = (((img * m + o0) / kB * oh + oy + k) * ow + ox0) * kB;  // (img, o0 / 16, oy + k, ox0)
      const TileArgs t{.x = x + img * c * h * w,
                       .h = h,
                       .w = w,
                       .c = c,
                       .iy0 = stride * (oy + k) - a.pad_top,
                       .ix0 = stride * ox0 - a.pad_left,
                       .u = packed.get() + o0 * c * 9,
                       .bias = bias ? bias + o0 : nullptr,
                       .y = y + at,
                       .res = res ? res + at : nullptr,
                       .ycs = ycs};
      const bool left = ox0 == 0 && a.pad_left == 1;
      if (pair)
        kPairs[static_cast<size_t>(stride - 1)][static_cast<size_t>(r)](t, f);
      else if (stride == 1)
        kRows[static_cast<size_t>(width / kB - 1)][static_cast<size_t>(r)](t, f);
      else
        kStrided[static_cast<size_t>(width / kB - 1)][left ? 1 : 0][static_cast<size_t>(r)](t, f);
      if (f.generic)
        for (int64_t j = 0; j < width / kB; ++j)
          fused::apply_tail(y + at + j * ycs, (pair ? 2 : 1) * r * kB, nullptr, 1, res ? res + at + j * ycs : nullptr,
                            *a.post);
    }
  }
  ctx.set_impl(std::string(impl_prefix) + (stride == 1 ? "modescope:conv3x3" : "modescope:conv3x3s2"));
  return Status::ok();
#else
  (void)a, (void)impl_prefix;
  return ctx.unsupported_case("our 3x3 stride-2 conv is not built in");
#endif
}

// Two threads, in the models: ResNet-50's stride-2 convs of 128, 256 and 512 channels 0.91 -> 0.80,
// 0.93 -> 0.86 and 1.23 -> 1.00 ms against oneDNN's direct conv, its 512-channel 7x7 ones 0.98-1.01
// -> 0.87-0.89 against our Winograd; ResNet-18's stride-2 ones of 128 and 256 channels 0.48 -> 0.44
// and 0.63 -> 0.45, but its 64-channel one 0.45 -> 0.48 (hence kDirectConvMinChannels).
constexpr int64_t kDirectConvMinChannels = 128;

std::optional<Status> direct_conv3x3(runtime::KernelContext& ctx, const ConvArgs& a) {
  const ConvLayout& l = a.layout;
  if (a.x.rank() != 4 || a.x.dim(1) < kDirectConvMinChannels || a.transpose || a.group != 1 || !l.preferred ||
      l.block != 16 || !l.src_blocked || !l.dst_blocked || (a.residual && !l.residual_blocked) || a.g.spatial() != 2)
    return std::nullopt;
  const int64_t stride = a.g.strides[0];
  for (size_t i = 0; i < 2; ++i)
    if (a.g.kernel[i] != 3 || a.g.strides[i] != stride || a.g.dilations[i] != 1) return std::nullopt;
  const StridedConvArgs s{.x = a.x,
                          .w = a.w,
                          .b = a.b,
                          .residual = a.residual,
                          .y = a.y,
                          .pad_top = a.g.pads_begin[0],
                          .pad_left = a.g.pads_begin[1],
                          .post = a.post};
  if (stride == 2 ? !strided_conv_applies(s) : (stride != 1 || !small_plane_conv_applies(s))) return std::nullopt;
  return strided_conv(ctx, s, a.impl_prefix, static_cast<int>(stride));
}

}  // namespace ms::cpu::nn
