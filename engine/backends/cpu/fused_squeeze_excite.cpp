// FusedSqueezeExcite (the fuse-squeeze-excite pass's node): y = x * act2(W2 act1(W1 mean_hw(x) + b1)
// + b2) per sample and channel, as one pass that pools x, the two matrix-vector products on the
// pooled vector, and one pass that writes the scaled x. x and y are plain nchw or, where the O2
// layout pass keeps them blocked (src_blocked / dst_blocked), nChw<layout_block>c, so the depthwise
// conv before it and the 1x1 conv after it need no reorder. Before, EfficientNet-B0's squeeze-excite
// blocks ran as a GlobalAveragePool, two oneDNN 1x1 convs on 1x1 planes, a Sigmoid and a broadcast
// Mul, with the depthwise conv's result reordered to plain for them. A bf16 graph's block reads and
// writes bf16 x and y, computing in f32 (pool, products, scale), and widens its small weights.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "engine/backends/cpu/bf16_convert.h"
#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu::fused {
namespace {

// Where element (n, c, p) of an [N, C, HW] tensor lies: plain, or blocked by `block` channels.
struct SeLayout {
  int64_t c = 0, hw = 0, block = 0;  // block 0: plain
  int64_t at(int64_t n, int64_t ch, int64_t p) const {
    if (block == 0) return (n * c + ch) * hw + p;
    return ((n * (c / block) + ch / block) * hw + p) * block + ch % block;
  }
};

// Below this many elements one thread does the passes (a team's start costs more).
constexpr int64_t kSeParallelGrain = int64_t{1} << 14;

// Elements of x and y as f32: f32 itself, or bf16 widened on load and rounded on store.
inline float se_load(float v) { return v; }
inline float se_load(bf16 v) { return elementwise::bf16_to_f32(v); }
inline void se_store(float& d, float v) { d = v; }
inline void se_store(bf16& d, float v) { d = elementwise::f32_to_bf16(v); }

template <class T> inline __attribute__((always_inline)) float se_plane_sum_of(const T* __restrict x, int64_t n) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += se_load(x[i]);
  return s;
}
MS_SIMD_CLONES float se_plane_sum(const float* x, int64_t n) { return se_plane_sum_of(x, n); }

// acc[j] = sum over the plane of lane j of a block of B channels (B a constant: one loop of whole
// registers).
template <int B, class T>
inline __attribute__((always_inline)) void se_block_sum_of(const T* __restrict x, int64_t hw, float* __restrict acc) {
  float a[B] = {};
  for (int64_t p = 0; p < hw; ++p)
#pragma omp simd
    for (int j = 0; j < B; ++j) a[j] += se_load(x[p * B + j]);
  for (int j = 0; j < B; ++j) acc[j] = a[j];
}

template <class T>
inline __attribute__((always_inline)) void se_block_sum_t(const T* x, int64_t hw, int64_t block, float* acc) {
  if (block == 16)
    se_block_sum_of<16>(x, hw, acc);
  else
    se_block_sum_of<8>(x, hw, acc);
}
MS_SIMD_CLONES void se_block_sum(const float* x, int64_t hw, int64_t block, float* acc) {
  se_block_sum_t(x, hw, block, acc);
}

// In place (y == x) is fine: each element is read before it is written.
template <class T> inline __attribute__((always_inline)) void se_plane_scale_of(const T* x, T* y, int64_t n, float s) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) se_store(y[i], se_load(x[i]) * s);
}
MS_SIMD_CLONES void se_plane_scale(const float* x, float* y, int64_t n, float s) { se_plane_scale_of(x, y, n, s); }

template <int B, class T>
inline __attribute__((always_inline)) void se_block_scale_of(const T* x, T* y, int64_t hw, const float* __restrict s) {
  float k[B];
  for (int j = 0; j < B; ++j) k[j] = s[j];
  for (int64_t p = 0; p < hw; ++p)
#pragma omp simd
    for (int j = 0; j < B; ++j) se_store(y[p * B + j], se_load(x[p * B + j]) * k[j]);
}

// In place (y == x) is fine: each element is read before it is written.
template <class T>
inline __attribute__((always_inline)) void se_block_scale_t(const T* x, T* y, int64_t hw, int64_t block,
                                                            const float* s) {
  if (block == 16)
    se_block_scale_of<16>(x, y, hw, s);
  else
    se_block_scale_of<8>(x, y, hw, s);
}
MS_SIMD_CLONES void se_block_scale(const float* x, float* y, int64_t hw, int64_t block, const float* s) {
  se_block_scale_t(x, y, hw, block, s);
}

// bf16 x and y: a chunk at a time widened to f32 through the vectorized conversions
// (bf16_convert.h), the f32 loops above on it, rounded back. Element by element inside the loops the
// bf16 block took twice the f32 block's time (EfficientNet-B0's 16 blocks: 1.46 against 0.70 ms).
constexpr int64_t kSeChunk = 2048;  // floats: 8 KiB on the stack, a multiple of every channel block

float se_plane_sum(const bf16* x, int64_t n) {
  float buf[kSeChunk], s = 0.f;
  for (int64_t i = 0; i < n; i += kSeChunk) {
    const int64_t len = std::min(kSeChunk, n - i);
    widen_bf16(x + i, buf, len);
    s += se_plane_sum(buf, len);
  }
  return s;
}

void se_block_sum(const bf16* x, int64_t hw, int64_t block, float* acc) {
  float buf[kSeChunk], part[16];
  const int64_t per = kSeChunk / block;
  std::fill(acc, acc + block, 0.f);
  for (int64_t p = 0; p < hw; p += per) {
    const int64_t cnt = std::min(per, hw - p);
    widen_bf16(x + p * block, buf, cnt * block);
    se_block_sum(buf, cnt, block, part);
    for (int64_t j = 0; j < block; ++j) acc[j] += part[j];
  }
}

// In place (y == x) is fine: a chunk is read before it is written.
void se_plane_scale(const bf16* x, bf16* y, int64_t n, float s) {
  float buf[kSeChunk];
  for (int64_t i = 0; i < n; i += kSeChunk) {
    const int64_t len = std::min(kSeChunk, n - i);
    widen_bf16(x + i, buf, len);
    se_plane_scale(buf, buf, len, s);
    round_to_bf16(buf, y + i, len);
  }
}

void se_block_scale(const bf16* x, bf16* y, int64_t hw, int64_t block, const float* s) {
  float buf[kSeChunk];
  const int64_t per = kSeChunk / block;
  for (int64_t p = 0; p < hw; p += per) {
    const int64_t cnt = std::min(per, hw - p);
    widen_bf16(x + p * block, buf, cnt * block);
    se_block_scale(buf, buf, cnt, block, s);
    round_to_bf16(buf, y + p * block, cnt * block);
  }
}

// out[o] = sum_i w[o * in + i] * v[i] for o in [o0, o1), four rows at a time (four sums in flight,
// one FMA chain each, sharing the loads of v); one call for all the rows, since a call per row
// through the clones' resolver cost more than an excitation's 48-long dot.
MS_SIMD_CLONES void se_dots(const float* __restrict w, const float* __restrict v, int64_t in, int64_t o0, int64_t o1,
                            float* __restrict out) {
  int64_t o = o0;
  for (; o + 4 <= o1; o += 4) {
    const float *a0 = w + o * in, *a1 = a0 + in, *a2 = a1 + in, *a3 = a2 + in;
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int64_t i = 0; i < in; ++i) {
      s0 += a0[i] * v[i];
      s1 += a1[i] * v[i];
      s2 += a2[i] * v[i];
      s3 += a3[i] * v[i];
    }
    out[o] = s0;
    out[o + 1] = s1;
    out[o + 2] = s2;
    out[o + 3] = s3;
  }
  for (; o < o1; ++o) {
    const float* a = w + o * in;
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < in; ++i) s += a[i] * v[i];
    out[o] = s;
  }
}

// pooled[n * C + c] = mean over the plane of channel c of sample n.
template <class T> void se_pool(const T* x, const SeLayout& l, int64_t batch, float* pooled) {
  const bool par = batch * l.c * l.hw >= kSeParallelGrain;
  const float inv = 1.f / static_cast<float>(l.hw);
  const int64_t b = std::max<int64_t>(l.block, 1), units = batch * l.c / b;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t i = 0; i < units; ++i) {
    if (l.block == 0) {
      pooled[i] = se_plane_sum(x + i * l.hw, l.hw) * inv;
    } else {
      se_block_sum(x + i * l.hw * b, l.hw, b, pooled + i * b);
      for (int64_t j = 0; j < b; ++j) pooled[i * b + j] *= inv;
    }
  }
}

// out[o] = act(bias[o] + sum_i w[o * in + i] * v[i]) for o < outs: the dots over the threads where
// there are enough, then the bias and the activation in one vector pass (apply_tail). EfficientNet-B0's
// 1152-channel squeeze-excites took 60 us, ~55 of them here (a scalar e^x and a call per output, at
// one thread), now ~30; the rest is mostly the 442 KB of weights coming from beyond L2.
void se_matvec(const float* w, const float* bias, const float* v, int64_t outs, int64_t in, const ops::PostOp& act,
               float* out) {
  if (outs * in < kSeParallelGrain || outs < 2) {
    se_dots(w, v, in, 0, outs, out);
  } else {
#pragma omp parallel
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      se_dots(w, v, in, outs * t / nt, outs * (t + 1) / nt, out);
    }
  }
  apply_tail(out, outs, bias, outs, nullptr, {act});
}

// y = x * scale[n * C + c], both in one layout.
template <class T> void se_scale_alike(const T* x, T* y, const SeLayout& l, int64_t batch, const float* scale) {
  const bool par = batch * l.c * l.hw >= kSeParallelGrain;
  const int64_t b = std::max<int64_t>(l.block, 1), units = batch * l.c / b;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t i = 0; i < units; ++i) {
    if (l.block == 0)
      se_plane_scale(x + i * l.hw, y + i * l.hw, l.hw, scale[i]);
    else
      se_block_scale(x + i * l.hw * b, y + i * l.hw * b, l.hw, b, scale + i * b);
  }
}

// y = x * scale with x and y in different layouts (a region's edge); x is not y's memory.
template <class T>
void se_scale_across(const T* x, const SeLayout& lx, T* y, const SeLayout& ly, int64_t batch, const float* scale) {
  const bool par = batch * lx.c * lx.hw >= kSeParallelGrain;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t i = 0; i < batch * lx.c; ++i) {
    const int64_t n = i / lx.c, c = i % lx.c;
    const float s = scale[i];
    for (int64_t p = 0; p < lx.hw; ++p) se_store(y[ly.at(n, c, p)], se_load(x[lx.at(n, c, p)]) * s);
  }
}

// The scale per sample and channel into `scale` (pooled and hidden are work rows), then y.
template <class T>
void se_run(const Tensor& x, Tensor& y, const SeLayout& lx, const SeLayout& ly, const float* const* w,
            const std::vector<ops::PostOp>& post, int64_t batch, int64_t r, float* pooled, float* hidden,
            float* scale) {
  const int64_t c = lx.c;
  se_pool(x.data<T>(), lx, batch, pooled);
  for (int64_t n = 0; n < batch; ++n) {
    se_matvec(w[0], w[1], pooled + n * c, r, c, post[0], hidden + n * r);
    se_matvec(w[2], w[3], hidden + n * r, c, r, post[1], scale + n * c);
  }
  if (lx.block == ly.block) {
    se_scale_alike(x.data<T>(), y.data<T>(), lx, batch, scale);
  } else {
    const Tensor src = x.raw() == y.raw() ? x.clone() : x;  // in place across layouts: read a copy
    se_scale_across(src.data<T>(), lx, y.data<T>(), ly, batch, scale);
  }
}

Status fused_squeeze_excite_kernel(runtime::KernelContext& ctx) {
  auto post = ops::parse_post_ops(ctx.node());
  if (!post) return post.status();
  if (post->size() != 2) return ctx.fail("post_ops must be two activations");
  const Tensor& x = ctx.input(0);
  const Tensor &w1 = ctx.input(1), &b1 = ctx.input(2), &w2 = ctx.input(3), &b2 = ctx.input(4);
  Tensor& y = ctx.output(0);
  const DType t = x.dtype();
  for (const Tensor* p : {&x, &w1, &b1, &w2, &b2})
    if ((t != DType::F32 && t != DType::BF16) || p->dtype() != t)
      return ctx.fail("FusedSqueezeExcite takes f32 tensors, or bf16 ones");
  if (x.rank() != 4) return ctx.fail("FusedSqueezeExcite takes a 4-D input");
  const int64_t batch = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3), r = w1.dim(0);
  if (w1.dim(1) != c || w2.dim(0) != c || w2.dim(1) != r || b1.numel() != r || b2.numel() != c)
    return ctx.fail("weights do not match the input's " + std::to_string(c) + " channels");
  if (x.numel() == 0) return Status::ok();
  const int64_t block = ctx.node().attr_int("layout_block", 16);
  SeLayout lx{c, hw, ctx.node().attr_int("src_blocked", 0) ? block : 0};
  SeLayout ly{c, hw, ctx.node().attr_int("dst_blocked", 0) ? block : 0};
  if ((lx.block || ly.block) && (block <= 0 || block > 16 || c % block != 0))
    return ctx.fail("a blocked layout needs the channels (" + std::to_string(c) + ") in blocks of at most 16");
  MS_ASSIGN_OR_RETURN(Tensor work, ctx.scratch(DType::F32, {batch * (2 * c + r)}));
  float* pooled = work.data<float>();
  // The squeeze and excite weights in f32 (a bf16 graph's widened: a few thousand elements).
  const Tensor wf[4] = {f32_of(w1), f32_of(b1), f32_of(w2), f32_of(b2)};
  const float* w[4] = {wf[0].data<float>(), wf[1].data<float>(), wf[2].data<float>(), wf[3].data<float>()};
  if (t == DType::F32)
    se_run<float>(x, y, lx, ly, w, *post, batch, r, pooled, pooled + batch * c, pooled + batch * (c + r));
  else
    se_run<bf16>(x, y, lx, ly, w, *post, batch, r, pooled, pooled + batch * c, pooled + batch * (c + r));
  ctx.set_impl(std::string("fused:squeeze-excite") + (lx.block || ly.block ? ":blocked" : ""));
  return Status::ok();
}

}  // namespace

void register_fused_squeeze_excite_kernels(runtime::KernelRegistry& r) {
  r.add("FusedSqueezeExcite", fused_squeeze_excite_kernel, ops::kFusedDomain);
}

}  // namespace ms::cpu::fused
