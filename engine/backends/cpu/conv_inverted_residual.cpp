#include "engine/backends/cpu/conv_inverted_residual.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/depthwise_row.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/pointwise_tiles.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/core/dtype.h"

namespace ms::cpu::nn {
namespace {

#define LOADV(p) MS_LOADV(V, p)

Tail tail_of(const std::vector<ops::PostOp>& post) {
  Tail t;
  size_t i = 0;
  if (!post.empty() && post[0].kind == ops::PostOp::Kind::Add) {
    t.add = true;
    i = 1;
  }
  if (post.size() == i) return t;
  if (post.size() == i + 1 && post[i].kind == ops::PostOp::Kind::Relu) {
    t.clamp = true;
    t.lo = 0.f;
    return t;
  }
  if (post.size() == i + 1 && post[i].kind == ops::PostOp::Kind::Clip) {
    t.clamp = true;
    t.lo = post[i].alpha;
    t.hi = post[i].beta;
    return t;
  }
  return Tail{.generic = true};
}

// The 1x1 convs out of line, once per instruction set: inlined at each of run_thread's call sites
// (every tile shape at each) they made this file's build take half an hour under the sanitizers.
#define MS_PW_PARAMS(S)                                                                                           \
  const S *in, int64_t in_cs, int64_t cin, int64_t npix, const S *w, const float *bias, int64_t ob0, int64_t ob1, \
      float *out, const float *res, int64_t out_cs, const Tail &t, bool half_last
#define MS_PW_ARGS in, in_cs, cin, npix, w, bias, ob0, ob1, out, res, out_cs, t, half_last
[[gnu::noinline]] MS_TARGET_AVX512 void pointwise_avx512(MS_PW_PARAMS(float)) { pointwise<vec16, float>(MS_PW_ARGS); }
[[gnu::noinline]] MS_TARGET_AVX2 void pointwise_avx2(MS_PW_PARAMS(float)) { pointwise<vec8, float>(MS_PW_ARGS); }
[[gnu::noinline]] void pointwise_plain16(MS_PW_PARAMS(float)) { pointwise<vec16, float>(MS_PW_ARGS); }
[[gnu::noinline]] void pointwise_plain8(MS_PW_PARAMS(float)) { pointwise<vec8, float>(MS_PW_ARGS); }
#if MS_SIMD_DISPATCH
[[gnu::noinline]] MS_TARGET_AVX512_BF16 void pointwise_avx512_bf16(MS_PW_PARAMS(uint16_t)) {
  pointwise<vec16, uint16_t>(MS_PW_ARGS);
}
#endif

// The instruction set's 1x1 conv: Native, the one its V was built for (run_avx512 and the like);
// otherwise the baseline's (run_plain).
template <class V, class S, bool Native> [[gnu::always_inline]] inline void pointwise_of(MS_PW_PARAMS(S)) {
  if constexpr (!std::is_same_v<S, float>) {
#if MS_SIMD_DISPATCH
    pointwise_avx512_bf16(MS_PW_ARGS);
#endif
  } else if constexpr (Native && kLanes<V> == 16) {
    pointwise_avx512(MS_PW_ARGS);
  } else if constexpr (Native) {
    pointwise_avx2(MS_PW_ARGS);
  } else if constexpr (kLanes<V> == 16) {
    pointwise_plain16(MS_PW_ARGS);
  } else {
    pointwise_plain8(MS_PW_ARGS);
  }
}
#undef MS_PW_ARGS
#undef MS_PW_PARAMS

// Scratch of one thread, 64-byte aligned, kept between calls (OpenMP's threads persist).
float* scratch(size_t floats, int which) {
  struct Buf {
    float* p = nullptr;
    size_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[4];
  Buf& b = bufs[which];
  if (b.n < floats) {
    std::free(b.p);
    const size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    b.p = static_cast<float*>(std::aligned_alloc(64, bytes));
    b.n = b.p ? floats : 0;
  }
  return b.p;
}

// Channel blocks of f32 rounded to bf16 (nearest even) for the bf16 1x1 convs: `blocks` blocks of n
// values (block stride src_cs) into dst [blocks][n] (thread scratch 3). S = float: src as it is.
template <class S>
[[gnu::always_inline]] inline const S* bf16_blocks(const float* src, int64_t src_cs, int64_t blocks, int64_t n) {
  if constexpr (std::is_same_v<S, float>) {
    return src;
  } else {
    S* dst = reinterpret_cast<S*>(scratch(static_cast<size_t>(blocks * n + 1) / 2, 3));
#if MS_SIMD_DISPATCH
    round_blocks_bf16(src, src_cs, blocks, n, dst);
#endif
    return dst;
  }
}

struct Args {
  const float* x;
  const InvertedResidualWeights* w;
  const float* r;
  float* y;
  const InvertedResidualProblem* p;
  const std::vector<ops::PostOp>*post1, *post2, *post3;
  Tail t1, t2, t3;
};

// One thread's share of the expansion and the depthwise conv: channel blocks [cb0, cb1) of image n,
// output rows [oy0, oy1) in bands of `band` rows; each band's depthwise rows go to
// dst(band_start) + (cb - cb0) * d_cs + (oy - band_start) * ow * B, and then to finish(band_start,
// band_end) (the projection of a band, when the rows are the thread's to project).
template <class V, class S, bool Native, class Dst, class Finish>
[[gnu::always_inline]] inline void expand_depthwise(const Args& a, int64_t n, int64_t oy0, int64_t oy1, int64_t cb0,
                                                    int64_t cb1, int64_t band, int64_t d_cs, Dst dst, Finish finish) {
  constexpr int B = kLanes<V>;
  const InvertedResidualProblem& p = *a.p;
  const int64_t ncb = cb1 - cb0, cib = (p.cin + B - 1) / B;
  const int64_t ring = p.expand ? (band - 1) * p.sh + p.kh : 0;
  float* ring_buf = p.expand ? scratch(static_cast<size_t>(ring * ncb * p.iw * B), 0) : nullptr;
  int64_t held[64];  // ring slot -> input row it holds (ring <= 64: bands are sized so)
  std::fill(held, held + 64, int64_t{-1});
  const float* xn = a.x + n * cib * p.ih * p.iw * B;
  // The ring: [block][slot][iw][B], so a block's rows in consecutive slots are consecutive pixels.
  // Rows [r0, r1) expanded into their slots: each run of rows not held whose slots do not wrap is
  // one 1x1 conv over the run's pixels (consecutive in x too), not one per row: on a 7x7 plane a
  // row is 7 pixels, and each pass over the weights would serve only those.
  const int64_t ring_cs = ring * p.iw * B;
  auto expand_rows = [&](int64_t r0, int64_t r1) __attribute__((always_inline)) {
    for (int64_t iy = r0; iy < r1;) {
      if (held[iy % ring] == iy) {
        ++iy;
        continue;
      }
      int64_t end = iy + 1;
      while (end < r1 && held[end % ring] != end && end % ring != 0) ++end;
      for (int64_t r = iy; r < end; ++r) held[r % ring] = r;
      float* out = ring_buf + (iy % ring) * p.iw * B;
      const int64_t pixels = (end - iy) * p.iw;
      if constexpr (std::is_same_v<S, float>) {
        pointwise_of<V, S, Native>(xn + iy * p.iw * B, p.ih * p.iw * B, p.cin, pixels, a.w->w1.data(), a.w->b1.data(),
                                   cb0, cb1, out, out, ring_cs, a.t1, false);
      } else {
        const S* xb = bf16_blocks<S>(xn + iy * p.iw * B, p.ih * p.iw * B, cib, pixels * B);
        pointwise_of<V, S, Native>(xb, pixels * B, p.cin, pixels, a.w->w1h.data(), a.w->b1.data(), cb0, cb1, out, out,
                                   ring_cs, a.t1, false);
      }
      if (a.t1.generic)
        for (int64_t cb = 0; cb < ncb; ++cb)
          fused::apply_tail(out + cb * ring_cs, pixels * B, nullptr, 1, nullptr, *a.post1);
      iy = end;
    }
  };
  auto row_of = [&](int64_t cb, int64_t iy) __attribute__((always_inline))->const float* {
    if (p.expand) return ring_buf + (cb - cb0) * ring_cs + (iy % ring) * p.iw * B;
    return xn + (cb * p.ih + iy) * p.iw * B;
  };
  const float* rows[kMaxDepthwiseKernel];
  const DwRow row{.iw = p.iw, .ow = p.ow, .kh = p.kh, .kw = p.kw, .sw = p.sw, .pw = p.pw};
  const V lo2 = V{} + a.t2.lo, hi2 = V{} + a.t2.hi;
  for (int64_t b0 = oy0; b0 < oy1; b0 += band) {
    const int64_t b1 = std::min(b0 + band, oy1);
    if (p.expand) {
      const int64_t iy0 = std::max<int64_t>(0, b0 * p.sh - p.ph);
      const int64_t iy1 = std::min<int64_t>(p.ih, (b1 - 1) * p.sh - p.ph + p.kh);
      expand_rows(iy0, iy1);
    }
    float* d = dst(b0);
    for (int64_t oy = b0; oy < b1; ++oy) {
      const int64_t ih0 = oy * p.sh - p.ph;
      for (int64_t cb = cb0; cb < cb1; ++cb) {
        for (int64_t i = 0; i < p.kh; ++i) {
          const int64_t iy = ih0 + i;
          rows[i] = iy >= 0 && iy < p.ih ? row_of(cb, iy) : nullptr;
        }
        float* yr = d + (cb - cb0) * d_cs + (oy - b0) * p.ow * B;
        const V bv = LOADV(a.w->bd.data() + cb * B);
        depthwise_row_any<V>(rows, a.w->wd.data() + cb * p.kh * p.kw * B, bv, yr, row, a.t2.clamp, lo2, hi2);
      }
    }
    // Other activations (SiLU) over each channel block's rows of the band, one call each: a band's
    // rows of a block are contiguous, and a 7-wide row alone is 56 values a call.
    if (a.t2.generic)
      for (int64_t cb = cb0; cb < cb1; ++cb)
        fused::apply_tail(d + (cb - cb0) * d_cs, (b1 - b0) * p.ow * B, nullptr, 1, nullptr, *a.post2);
    finish(b0, b1);
  }
}

// The projection of pixels [p0, p1) of image n (pixel = oy * ow + ox) into output channel blocks
// [ob0, ob1) of y, from d (block stride d_cs, at pixel p0).
template <class V, class S, bool Native>
[[gnu::always_inline]] inline void project(const Args& a, int64_t n, const float* d, int64_t d_cs, int64_t p0,
                                           int64_t p1, int64_t ob0, int64_t ob1) {
  constexpr int B = kLanes<V>;
  const InvertedResidualProblem& p = *a.p;
  const int64_t cob = (p.cout + B - 1) / B, plane = p.oh * p.ow * B;
  float* out = a.y + (n * cob + ob0) * plane + p0 * B;
  const float* res = a.r ? a.r + (n * cob + ob0) * plane + p0 * B : out;
  // A last block half padding computed at half width: its padding lanes are zeroed below.
  const bool half_last = ob1 == cob && p.cout % B != 0 && p.cout % B <= B / 2;
  if constexpr (std::is_same_v<S, float>) {
    pointwise_of<V, S, Native>(d, d_cs, p.cexp, p1 - p0, a.w->w3.data(), a.w->b3.data(), ob0, ob1, out, res, plane,
                               a.t3, half_last);
  } else {
    const S* db = bf16_blocks<S>(d, d_cs, p.cexp / B, (p1 - p0) * B);
    pointwise_of<V, S, Native>(db, (p1 - p0) * B, p.cexp, p1 - p0, a.w->w3h.data(), a.w->b3.data(), ob0, ob1, out, res,
                               plane, a.t3, half_last);
  }
  if (a.t3.generic)
    for (int64_t ob = 0; ob < ob1 - ob0; ++ob)
      fused::apply_tail(out + ob * plane, (p1 - p0) * B, nullptr, 1, a.r ? res + ob * plane : nullptr, *a.post3);
  if (p.cout % B != 0 && ob1 == cob)  // the padding channels stay zero, whatever the tail made of them
    for (int64_t px = 0; px < p1 - p0; ++px)
      std::fill(out + (cob - 1 - ob0) * plane + px * B + p.cout % B, out + (cob - 1 - ob0) * plane + (px + 1) * B, 0.f);
}

// Bands of rows sized so a thread's ring of expanded rows and its band of depthwise rows stay in L2.
int64_t band_rows(const InvertedResidualProblem& p, int64_t channels, bool local_d, int64_t rows) {
  constexpr double kBudget = 224.0 * 1024;
  int64_t band = 1;
  while (band < rows) {
    const int64_t next = band + 1;
    const double ring = p.expand ? static_cast<double>(((next - 1) * p.sh + p.kh) * channels * p.iw) * 4 : 0;
    const double d = local_d ? static_cast<double>(next * channels * p.ow) * 4 : 0;
    if (ring + d > kBudget || (next - 1) * p.sh + p.kh > 64) break;
    band = next;
  }
  return band;
}

// Thread t of nt: rows split between threads (each its own ring, the rows above its first band
// expanded again), or on small planes the expanded channels split, then the projection's pixels.
template <class V, class S, bool Native> [[gnu::always_inline]] inline void run_thread(const Args& a, int t, int nt) {
  constexpr int B = kLanes<V>;
  const InvertedResidualProblem& p = *a.p;
  const int64_t eb = p.cexp / B, plane = p.oh * p.ow * B;
  const bool split_channels = nt > 1 && p.oh <= 14 && eb >= 2 * nt;
  if (!split_channels) {
    const int64_t rows = p.batch * p.oh, r0 = rows * t / nt, r1 = rows * (t + 1) / nt;
    for (int64_t n = r0 / p.oh; n < p.batch && n * p.oh < r1; ++n) {
      const int64_t oy0 = std::max(r0 - n * p.oh, int64_t{0}), oy1 = std::min(r1 - n * p.oh, p.oh);
      if (oy0 >= oy1) continue;
      const int64_t band = band_rows(p, p.cexp, p.project, oy1 - oy0);
      if (p.project) {
        float* d = scratch(static_cast<size_t>(band * p.ow * p.cexp), 1);
        expand_depthwise<V, S, Native>(
            a, n, oy0, oy1, 0, eb, band, band * p.ow * B, [&](int64_t) __attribute__((always_inline)) { return d; },
            [&](int64_t b0, int64_t b1) __attribute__((always_inline)) {
              project<V, S, Native>(a, n, d, band * p.ow * B, b0 * p.ow, b1 * p.ow, 0, (p.cout + B - 1) / B);
            });
      } else {
        float* yn = a.y + n * eb * plane;
        expand_depthwise<V, S, Native>(
            a, n, oy0, oy1, 0, eb, band,
            plane, [&](int64_t b0) __attribute__((always_inline)) { return yn + b0 * p.ow * B; },
            [](int64_t, int64_t) __attribute__((always_inline)){});
      }
    }
    return;
  }
  const int64_t cb0 = eb * t / nt, cb1 = eb * (t + 1) / nt;
  const int64_t band = band_rows(p, (cb1 - cb0) * B, false, p.oh);
  // The whole depthwise result of an image, shared by the threads (the caller's buffer).
  float* shared = nullptr;
  if (p.project) {
#pragma omp single copyprivate(shared)
    shared = scratch(static_cast<size_t>(p.cexp * p.oh * p.ow), 2);
  }
  for (int64_t n = 0; n < p.batch; ++n) {
    float* d = p.project ? shared : a.y + n * eb * plane;
    expand_depthwise<V, S, Native>(
        a, n, 0, p.oh, cb0, cb1, band,
        plane, [&](int64_t b0) __attribute__((always_inline)) { return d + cb0 * plane + b0 * p.ow * B; },
        [](int64_t, int64_t) __attribute__((always_inline)){});
    if (!p.project) continue;
#pragma omp barrier
    const int64_t pix = p.oh * p.ow, cob = (p.cout + B - 1) / B;
    if (p.cout > pix && cob >= 2 * nt) {
      // More weights than pixels (7x7 planes): each thread projects its share of the output
      // channels, reading half the weights, rather than every weight for half the pixels.
      project<V, S, Native>(a, n, d, plane, 0, pix, cob * t / nt, cob * (t + 1) / nt);
    } else {
      const int64_t p0 = pix * t / nt / 4 * 4, p1 = t + 1 == nt ? pix : pix * (t + 1) / nt / 4 * 4;
      if (p1 > p0) project<V, S, Native>(a, n, d + p0 * B, plane, p0, p1, 0, cob);
    }
#pragma omp barrier
  }
}

MS_TARGET_AVX512 void run_avx512(const Args& a, int t, int nt) { run_thread<vec16, float, true>(a, t, nt); }
MS_TARGET_AVX2 void run_avx2(const Args& a, int t, int nt) { run_thread<vec8, float, true>(a, t, nt); }
#if MS_SIMD_DISPATCH
MS_TARGET_AVX512_BF16 void run_avx512_bf16(const Args& a, int t, int nt) {
  run_thread<vec16, uint16_t, true>(a, t, nt);
}
#endif
void run_plain(const Args& a, int t, int nt) {
  if (a.p->block == 16)
    run_thread<vec16, float, false>(a, t, nt);
  else
    run_thread<vec8, float, false>(a, t, nt);
}

#undef LOADV

}  // namespace

bool cpu_has_avx512_bf16() {
#if MS_SIMD_DISPATCH
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return has && simd_width() >= 16;
#else
  return false;
#endif
}

InvertedResidualWeights pack_inverted_residual(const InvertedResidualProblem& p, const float* w1, const float* b1,
                                               const float* wd, const float* bd, const float* w3, const float* b3) {
  const int64_t B = p.block;
  InvertedResidualWeights out;
  auto pack_pointwise = [&](const float* w, const float* b, int64_t outs, int64_t ins, std::vector<float>& wp,
                            std::vector<float>& bp) {
    const int64_t ob = (outs + B - 1) / B;
    wp.assign(static_cast<size_t>(ob * ins * B), 0.f);
    bp.assign(static_cast<size_t>(ob * B), 0.f);
    for (int64_t o = 0; o < outs; ++o) {
      for (int64_t i = 0; i < ins; ++i) wp[static_cast<size_t>(((o / B) * ins + i) * B + o % B)] = w[o * ins + i];
      if (b) bp[static_cast<size_t>(o)] = b[o];
    }
  };
  if (p.expand && w1) pack_pointwise(w1, b1, p.cexp, p.cin, out.w1, out.b1);
  out.wd.assign(static_cast<size_t>(p.cexp * p.kh * p.kw), 0.f);
  for (int64_t c = 0; c < p.cexp; ++c)
    for (int64_t k = 0; k < p.kh * p.kw; ++k)
      out.wd[static_cast<size_t>(((c / B) * p.kh * p.kw + k) * B + c % B)] = wd[c * p.kh * p.kw + k];
  out.bd.assign(static_cast<size_t>(p.cexp), 0.f);
  if (bd) std::copy(bd, bd + p.cexp, out.bd.begin());
  if (p.project && w3) pack_pointwise(w3, b3, p.cout, p.cexp, out.w3, out.b3);
  // bf16 copies for the bf16 1x1 convs: [ob][ins rounded up to even][B], each lane's two channels of
  // a pair adjacent (vdpbf16ps's operand), from the packed f32 [ob][ins][B].
  auto pack_pairs = [&](const std::vector<float>& wp, int64_t outs, int64_t ins, std::vector<uint16_t>& wh) {
    const int64_t ob = (outs + B - 1) / B, ins2 = (ins + 1) / 2 * 2;
    wh.assign(static_cast<size_t>(ob * ins2 * B), 0);
    for (int64_t o = 0; o < ob; ++o)
      for (int64_t i = 0; i < ins; ++i)
        for (int64_t l = 0; l < B; ++l)
          wh[static_cast<size_t>(((o * ins2 + i / 2 * 2) * B + l * 2) + i % 2)] =
              Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(wp[static_cast<size_t>((o * ins + i) * B + l)]));
  };
  if (p.bf16 && !out.w1.empty()) pack_pairs(out.w1, p.cexp, p.cin, out.w1h);
  if (p.bf16 && !out.w3.empty()) pack_pairs(out.w3, p.cout, p.cexp, out.w3h);
  return out;
}

void inverted_residual_blocked(const float* x, const InvertedResidualWeights& w, const float* r, float* y,
                               const InvertedResidualProblem& p, const std::vector<ops::PostOp>& post1,
                               const std::vector<ops::PostOp>& post2, const std::vector<ops::PostOp>& post3) {
  Args a{x, &w, r, y, &p, &post1, &post2, &post3, tail_of(post1), tail_of(post2), tail_of(post3)};
  const int width = simd_width();
  auto body = [&](int t, int nt) {
#if MS_SIMD_DISPATCH
    if (p.bf16 && p.block == 16 && width >= 16 && cpu_has_avx512_bf16()) return run_avx512_bf16(a, t, nt);
#endif
    if (p.block == 16 && width >= 16)
      run_avx512(a, t, nt);
    else if (p.block == 8 && width >= 8)
      run_avx2(a, t, nt);
    else
      run_plain(a, t, nt);
  };
  const double macs = static_cast<double>(p.batch * p.oh * p.ow) *
                      static_cast<double>(p.cexp * (p.kh * p.kw + (p.expand ? p.cin : 0) + (p.project ? p.cout : 0)));
  const int threads = macs < 4e5 ? 1 : omp_get_max_threads();
  if (threads < 2) {
    body(0, 1);
    return;
  }
#pragma omp parallel num_threads(threads)
  body(omp_get_thread_num(), omp_get_num_threads());
}

namespace {

// The post-ops of one stage: `<prefix>post_ops` / `_alphas` / `_betas` on the node.
Expected<std::vector<ops::PostOp>> stage_post_ops(const ir::Node& n, const std::string& prefix) {
  ir::Node stage;
  stage.op_type = n.op_type;
  stage.name = n.name;
  stage.id = n.id;
  for (const char* a : {"post_ops", "post_alphas", "post_betas"}) {
    auto it = n.attrs.find(prefix + a);
    if (it != n.attrs.end()) stage.attrs[a] = it->second;
  }
  return ops::parse_post_ops(stage);
}

// What the node keeps between calls: the parsed geometry and post-ops and the packed weights, with
// the frozen buffers they were packed from.
struct InvertedResidualMemo {
  InvertedResidualProblem p;
  std::vector<ops::PostOp> post[3];
  InvertedResidualWeights w;
  std::weak_ptr<Buffer> sources[6];
  size_t offsets[6] = {};
  Shape x, y;
  std::string impl;
};

const Tensor* optional_input(runtime::KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

bool memo_matches(runtime::KernelContext& ctx, const InvertedResidualMemo& m) {
  if (ctx.input(0).shape() != m.x || ctx.output(0).shape() != m.y) return false;
  for (size_t i = 0; i < 6; ++i) {
    const Tensor* t = optional_input(ctx, i + 1);
    if ((t != nullptr) != (m.sources[i].lock() != nullptr)) return false;
    if (t && (t->buffer() != m.sources[i].lock() || t->byte_offset() != m.offsets[i])) return false;
  }
  return true;
}

Expected<std::shared_ptr<InvertedResidualMemo>> make_memo(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  auto m = std::make_shared<InvertedResidualMemo>();
  const Tensor& x = ctx.input(0);
  const Tensor* w1 = optional_input(ctx, 1);
  const Tensor* wd = optional_input(ctx, 3);
  const Tensor* w3 = optional_input(ctx, 5);
  Tensor& y = ctx.output(0);
  if (!wd || x.rank() != 4 || y.rank() != 4 || wd->rank() != 4)
    return ctx.fail("FusedInvertedResidual needs a 4-D input, output and depthwise weights");
  for (size_t i = 0; i < 8; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype() != DType::F32)
      return ctx.fail("FusedInvertedResidual takes f32 tensors; input " + std::to_string(i) + " is " +
                      std::string(dtype_name(ctx.input(i).dtype())));
  const int64_t block = n.attr_int("layout_block", 0);
  if (block != 8 && block != 16) return ctx.fail("FusedInvertedResidual needs layout_block 8 or 16");
  const auto strides = n.attr_ints("strides"), pads = n.attr_ints("pads");
  if (strides.size() != 2 || pads.size() != 4) return ctx.fail("FusedInvertedResidual needs 2 strides and 4 pads");
  InvertedResidualProblem& p = m->p;
  p = InvertedResidualProblem{.batch = x.dim(0),
                              .block = block,
                              .cin = x.dim(1),
                              .cexp = wd->dim(0),
                              .cout = y.dim(1),
                              .ih = x.dim(2),
                              .iw = x.dim(3),
                              .oh = y.dim(2),
                              .ow = y.dim(3),
                              .kh = wd->dim(2),
                              .kw = wd->dim(3),
                              .sh = strides[0],
                              .sw = strides[1],
                              .ph = pads[0],
                              .pw = pads[1],
                              .expand = w1 != nullptr,
                              .project = w3 != nullptr,
                              .bf16 = n.attr_string("products", "") == "bf16" && block == 16 && cpu_has_avx512_bf16() &&
                                      !cpu_backend(ctx).bf16_matrix_units()};
  const bool shapes_ok = p.cexp % block == 0 && p.kh <= kMaxDepthwiseKernel && p.sh >= 1 && p.sw >= 1 && p.ph >= 0 &&
                         p.pw >= 0 && p.ph < p.kh && p.pw < p.kw && wd->dim(1) == 1 &&
                         (w1 ? w1->shape() == Shape{p.cexp, p.cin, 1, 1} : p.cin == p.cexp) &&
                         (w3 ? w3->shape() == Shape{p.cout, p.cexp, 1, 1} : p.cout == p.cexp) &&
                         p.oh == (p.ih + pads[0] + pads[2] - p.kh) / p.sh + 1 &&
                         p.ow == (p.iw + pads[1] + pads[3] - p.kw) / p.sw + 1;
  if (!shapes_ok)
    return ctx.fail("FusedInvertedResidual: input " + shape_to_string(x.shape()) + ", depthwise weights " +
                    shape_to_string(wd->shape()) + " and output " + shape_to_string(y.shape()) +
                    " do not make one block");
  const char* prefixes[3] = {"expand_", "dw_", "project_"};
  for (int s = 0; s < 3; ++s) {
    auto post = stage_post_ops(n, prefixes[s]);
    if (!post) return post.status();
    m->post[s] = std::move(*post);
  }
  for (int s = 0; s < 2; ++s)
    for (const auto& q : m->post[s])
      if (q.kind == ops::PostOp::Kind::Add) return ctx.fail("only the projection's post-ops may add the residual");
  bool adds = false;
  for (const auto& q : m->post[2]) adds = adds || q.kind == ops::PostOp::Kind::Add;
  if (adds != ctx.has_input(7) || (adds && ctx.input(7).shape() != y.shape()))
    return ctx.fail(
        "the residual (input 7) and the projection's Add post-op must come together, of the output's shape");
  auto data = [&](size_t i) { return ctx.has_input(i) ? ctx.input(i).data<float>() : nullptr; };
  m->w = pack_inverted_residual(p, data(1), data(2), data(3), data(4), data(5), data(6));
  for (size_t i = 0; i < 6; ++i)
    if (const Tensor* t = optional_input(ctx, i + 1)) {
      m->sources[i] = t->buffer();
      m->offsets[i] = t->byte_offset();
    }
  m->x = x.shape();
  m->y = y.shape();
  m->impl = std::string("fused:inverted-residual:") + (p.bf16 ? "avx512_bf16" : block == 16 ? "avx512" : "avx2");
  return m;
}

// The output as the kernel writes it: blocked, its channels padded to the block. A value the memory
// plan placed has those bytes; one allocated at its shape's size (memory planning off, an eager
// run of the compiled graph) gets a buffer that has.
void make_output_room(runtime::KernelContext& ctx, const Shape& shape, int64_t block) {
  const size_t bytes =
      static_cast<size_t>(shape[0] * (shape[1] + block - 1) / block * block * shape[2] * shape[3]) * sizeof(float);
  const Tensor& y = ctx.output(0);
  if (y.defined() && y.buffer() && y.buffer()->bytes() >= y.byte_offset() + bytes) return;
  ctx.set_output(0, Tensor(Buffer::host(bytes), DType::F32, shape));
}

// An output not allocated before the run: its shape from the input, the weights and the geometry.
Status allocate_output(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(3) || x.rank() != 4 || ctx.input(3).rank() != 4)
    return ctx.fail("FusedInvertedResidual needs a 4-D input and depthwise weights");
  const auto strides = n.attr_ints("strides"), pads = n.attr_ints("pads");
  if (strides.size() != 2 || pads.size() != 4 || strides[0] < 1 || strides[1] < 1)
    return ctx.fail("FusedInvertedResidual needs 2 positive strides and 4 pads");
  const Tensor& wd = ctx.input(3);
  const Shape shape{x.dim(0), ctx.has_input(5) ? ctx.input(5).dim(0) : wd.dim(0),
                    (x.dim(2) + pads[0] + pads[2] - wd.dim(2)) / strides[0] + 1,
                    (x.dim(3) + pads[1] + pads[3] - wd.dim(3)) / strides[1] + 1};
  if (shape[2] < 1 || shape[3] < 1) return ctx.fail("FusedInvertedResidual: no output plane");
  make_output_room(ctx, shape, std::max<int64_t>(1, n.attr_int("layout_block", 1)));
  return Status::ok();
}

Status fused_inverted_residual_kernel(runtime::KernelContext& ctx) {
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  auto m = std::static_pointer_cast<const InvertedResidualMemo>(dnn.memo(&ctx.node(), /*kind=*/2));
  bool kept = true;  // the memo's packed copies of inputs 1-6 serve the later calls
  if (!m || !ctx.output(0).defined() || !memo_matches(ctx, *m)) {
    if (!ctx.output(0).defined()) MS_RETURN_IF_ERROR(allocate_output(ctx));
    for (size_t i = 1; i < 7; ++i)
      if (ctx.has_input(i) && ctx.input(i).buffer() && ctx.input(i).buffer()->released())
        return ctx.fail("its weights were released once packed and must be packed again");
    MS_ASSIGN_OR_RETURN(auto fresh, make_memo(ctx));
    // Weights that are not frozen constants (a caller's own) are packed at every call.
    for (size_t i = 1; i < 7; ++i)
      kept = kept && (!ctx.has_input(i) || (ctx.input(i).buffer() && ctx.input(i).buffer()->frozen()));
    if (kept) dnn.set_memo(&ctx.node(), fresh, /*kind=*/2);
    m = fresh;
  }
  if (kept)
    for (size_t i = 1; i < 7; ++i)
      if (ctx.has_input(i)) ctx.keeps_packed_copy(i);
  make_output_room(ctx, m->y, m->p.block);
  inverted_residual_blocked(ctx.input(0).data<float>(), m->w, ctx.has_input(7) ? ctx.input(7).data<float>() : nullptr,
                            ctx.output(0).data<float>(), m->p, m->post[0], m->post[1], m->post[2]);
  ctx.set_impl(m->impl);
  return Status::ok();
}

}  // namespace

void register_inverted_residual_kernel(runtime::KernelRegistry& r) {
  r.add("FusedInvertedResidual", fused_inverted_residual_kernel, ops::kFusedDomain);
}

}  // namespace ms::cpu::nn
