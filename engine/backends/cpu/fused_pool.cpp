// FusedPool: MaxPool / GlobalAveragePool / GlobalMaxPool (f32, or bf16 in a bf16 graph) as one oneDNN pooling over
// activations the O2 layout pass keeps blocked (nChw8c or nChw16c, its layout_block) on either side, so the conv region
// around a pool needs no reorder (and no reorder scratch: the stem conv of a ResNet writes its 3 MiB output blocked
// straight into the arena and the pool reads it there). Without blocked operands it is the plain pooling kernel of the
// op named by `pool`. With `to` (bf16: a Cast after the pool folded in by conv-layout) it pools in f32 and writes the
// result rounded to bf16.
#include <limits>
#include <type_traits>

#include "engine/backends/cpu/bf16_convert.h"
#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/ops/blocked_layout.h"

namespace ms::cpu::fused {
namespace {

using dnnl::memory;

struct FusedPoolPrimitive {
  dnnl::pooling_v2_forward::primitive_desc pd;
  dnnl::pooling_v2_forward prim;
};

memory::dims dims_of(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

// nChw<block>c (block 0: channels-last), or plain nchw. A [N, C, 1, 1] tensor has the same bytes in
// all of them when block | C, so such a plain output is described blocked too (oneDNN's fast pooling
// wants src and dst alike).
memory::desc layout_desc(const Shape& s, bool blocked, int64_t block, memory::data_type dt = memory::data_type::f32) {
  const bool unit_plane = s.size() == 4 && s[2] == 1 && s[3] == 1 && (block == 0 || s[1] % block == 0);
  const auto tag = block == 0   ? memory::format_tag::nhwc
                   : block == 8 ? memory::format_tag::nChw8c
                                : memory::format_tag::nChw16c;
  if (blocked || unit_plane) return memory::desc(dims_of(s), dt, tag);
  return plain_desc(s, dt);
}

// n floats rounded to bf16, in chunks over the threads.
void round_rows_to_bf16(const float* src, bf16* dst, int64_t n) {
  const int64_t chunks = (n + elementwise::kParallelChunk - 1) / elementwise::kParallelChunk;
#pragma omp parallel for schedule(static) if (n >= elementwise::kParallelThreshold)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b = c * elementwise::kParallelChunk;
    round_to_bf16(src + b, dst + b, std::min(elementwise::kParallelChunk, n - b));
  }
}

Status pool_blocked(runtime::KernelContext& ctx, const std::string& pool, const Tensor& x, Tensor& y, bool src_blk,
                    bool dst_blk, int64_t block) {
  const Shape in(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> kernel, strides, dil, pad_l, pad_r;
  if (pool == "MaxPool") {
    MS_ASSIGN_OR_RETURN(ops::WindowGeometry g, nn::geometry(ctx, ops::WindowKind::Pool, x.shape(), {}));
    kernel = g.kernel;
    strides = g.strides;
    pad_l = g.pads_begin;
    pad_r = g.pads_end;
    for (size_t i = 0; i < in.size(); ++i) {
      dil.push_back(g.dilations[i] - 1);  // oneDNN counts the gaps
      // ceil_mode: oneDNN's floor formula reaches the last window with more right padding (max
      // pooling ignores padding, so this is exact).
      const int64_t need = (g.out[i] - 1) * g.strides[i] + g.effective_kernel(i) - in[i] - g.pads_begin[i];
      pad_r[i] = std::max(pad_r[i], need);
    }
  } else {  // global: one window over the whole plane
    kernel.assign(in.begin(), in.end());
    strides.assign(in.size(), 1);
    dil.assign(in.size(), 0);
    pad_l.assign(in.size(), 0);
    pad_r.assign(in.size(), 0);
  }
  const auto alg =
      pool == "GlobalAveragePool" ? dnnl::algorithm::pooling_avg_exclude_padding : dnnl::algorithm::pooling_max;
  const memory::data_type xt = to_dnnl(x.dtype()), yt = to_dnnl(y.dtype());
  const memory::desc x_md = layout_desc(x.shape(), src_blk, block, xt);
  const memory::desc y_md = layout_desc(y.shape(), dst_blk, block, yt);
  // oneDNN's jit pooling takes src and dst in one layout and type (otherwise its reference loops,
  // ~10x slower): at a region's edge, or with a bf16 result of an f32 pool, the pool writes the
  // input's layout and type into scratch and the (smaller) output is reordered, and rounded, from
  // there.
  // (A plain input needs a truly plain output: a unit-plane output described blocked would send a
  // plain input to the reference loops, as EfficientNet's squeeze-excite pools were.)
  const bool x_blocked = x_md != plain_desc(x.shape(), xt);
  const memory::desc pool_md = x_blocked ? layout_desc(y.shape(), true, block, xt) : plain_desc(y.shape(), xt);
  const std::string key = "fpool|" + std::to_string(static_cast<int>(alg)) + "|" + nn::key_of(x.shape()) + "|" +
                          nn::key_of(y.shape()) + "|" + nn::key_of(kernel) + "|" + nn::key_of(strides) + "|" +
                          nn::key_of(dil) + "|" + nn::key_of(pad_l) + "|" + nn::key_of(pad_r) + (src_blk ? "|sb" : "") +
                          (dst_blk ? "|db" : "") + "|b" + std::to_string(block) + "|" +
                          std::string(dtype_name(x.dtype())) + "|" + std::string(dtype_name(y.dtype()));
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  return nn::guard_onednn(ctx, "fused pooling", [&]() -> Status {
    auto pp = dnn.cached<FusedPoolPrimitive>(key, [&] {
      dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, x_md, pool_md, dims_of(strides),
                                       dims_of(kernel), dims_of(dil), dims_of(pad_l), dims_of(pad_r));
      dnnl::pooling_v2_forward::primitive_desc pd(d, nn::user_scratchpad_attr(), dnn.engine());
      return std::make_shared<FusedPoolPrimitive>(FusedPoolPrimitive{pd, dnnl::pooling_v2_forward(pd)});
    });
    Tensor holder, staged;
    MS_ASSIGN_OR_RETURN(memory scratch, nn::make_scratchpad(ctx, pp->pd.scratchpad_desc(), holder));
    memory y_mem = wrap(y, y_md, dnn.engine());
    memory dst = y_mem;
    if (pool_md != y_md) {
      MS_ASSIGN_OR_RETURN(dst, nn::make_scratchpad(ctx, pool_md, staged));
    }
    pp->prim.execute(
        dnn.stream(),
        {{DNNL_ARG_SRC, wrap(x, x_md, dnn.engine())}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratch}});
    if (pool_md != y_md) {
      dnn.stream().wait();
      // The same layout in another type (an f32 pool rounded to bf16 where it lies): rounded in
      // place of oneDNN's reorder, which took 30 us more on a ResNet stem's [1, 64, 56, 56].
      memory::desc as_y = pool_md;
      as_y.data.data_type = y_md.data.data_type;
      if (as_y == y_md && xt == memory::data_type::f32 && yt == memory::data_type::bf16)
        round_rows_to_bf16(static_cast<const float*>(dst.get_data_handle()), y.data<bf16>(),
                           static_cast<int64_t>(pool_md.get_size() / sizeof(float)));
      else
        dnnl::reorder(dst, y_mem).execute(dnn.stream(), dst, y_mem);
    }
    dnn.stream().wait();
    ctx.set_impl("fused:" + impl_name(pp->pd));
    return Status::ok();
  });
}

// A global pool over a blocked input (nChw<B>c, B | C): a pixel's B channels are contiguous, so one
// vector of B sums (or maxima) runs over the plane; the result [N, C, 1, 1] has the same bytes
// blocked and plain. oneDNN 2.6's pooling took 50 us on ResNet-50's [1, 2048, 7, 7] at one or two
// threads (ONNX Runtime: 15 us); this is a few us.
// bf16 (a bf16 graph's) sums in f32 and rounds once, as oneDNN's bf16 pooling does.
inline float pool_load(float v) { return v; }
inline float pool_load(bf16 v) { return elementwise::bf16_to_f32(v); }
inline void pool_store(float v, float& out) { out = v; }
inline void pool_store(float v, bf16& out) { out = elementwise::f32_to_bf16(v); }

template <int B, class T>
void global_pool_blocked(const T* __restrict x, T* __restrict y, int64_t tasks, int64_t hw, bool avg) {
  const float inv = 1.f / static_cast<float>(hw);
#pragma omp parallel for schedule(static) if (tasks * hw * B >= (int64_t{1} << 14))
  for (int64_t t = 0; t < tasks; ++t) {
    const T* p = x + t * hw * B;
    float acc[B];
    for (int l = 0; l < B; ++l) acc[l] = avg ? 0.f : pool_load(p[l]);
    for (int64_t i = avg ? 0 : 1; i < hw; ++i) {
      const T* q = p + i * B;
      if (avg) {
#pragma omp simd
        for (int l = 0; l < B; ++l) acc[l] += pool_load(q[l]);
      } else {
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          const float v = pool_load(q[l]);
          acc[l] = acc[l] < v || v != v ? v : acc[l];  // NaN wins
        }
      }
    }
    for (int l = 0; l < B; ++l) pool_store(avg ? acc[l] * inv : acc[l], y[t * B + l]);
  }
}

// A max pool from a blocked input into a blocked output (nChw<B>c both, one type): an output
// pixel's B channels are one vector of maxima over its window's pixels, NaN winning as in the global
// loop; the output rows of every channel block are shared out over the threads. oneDNN 2.6's jit
// pooling took 171 us on ResNet-50's stem pool ([1, 64, 112, 112], 3x3 stride 2 -> 56x56) in the
// model at two threads, ONNX Runtime's 100 us.
struct MaxPoolRows {
  int64_t planes, ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
};

template <int B, class T>
inline void max_pool_rows(const T* __restrict x, T* __restrict y, const MaxPoolRows& g, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t plane = r / g.oh, o = r % g.oh, h0 = o * g.sh - g.ph;
    const T* xp = x + plane * g.ih * g.iw * B;
    T* yr = y + r * g.ow * B;
    for (int64_t q = 0; q < g.ow; ++q) {
      const int64_t w0 = q * g.sw - g.pw;
      float acc[B];
      for (int l = 0; l < B; ++l) acc[l] = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t h = h0 + i * g.dh;
        if (h < 0 || h >= g.ih) continue;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t w = w0 + j * g.dw;
          if (w < 0 || w >= g.iw) continue;
          const T* v = xp + (h * g.iw + w) * B;
#pragma omp simd
          for (int l = 0; l < B; ++l) {
            const float u = pool_load(v[l]);
            acc[l] = acc[l] < u || u != u ? u : acc[l];
          }
        }
      }
      for (int l = 0; l < B; ++l) pool_store(acc[l], yr[q * B + l]);
    }
  }
}

// The f32 16-channel rows built for AVX-512 and AVX2 too (the build's baseline is 4-wide SSE).
MS_SIMD_CLONES void max_pool_rows_f32_16(const float* x, float* y, const MaxPoolRows& g, int64_t r0, int64_t r1) {
  max_pool_rows<16>(x, y, g, r0, r1);
}

template <int B, class T> void max_pool_blocked(const T* x, T* y, const MaxPoolRows& g, int64_t rows) {
  // Rows in chunks of about 16 KiB of output, each a thread's turn.
  const int64_t per = std::max<int64_t>(1, (int64_t{4096} / B + g.ow - 1) / g.ow);
  const int64_t chunks = (rows + per - 1) / per;
#pragma omp parallel for schedule(static) if (rows * g.ow * B * g.kh * g.kw >= (int64_t{1} << 15))
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t r0 = c * per, r1 = std::min(rows, r0 + per);
    if constexpr (B == 16 && std::is_same_v<T, float>)
      max_pool_rows_f32_16(x, y, g, r0, r1);
    else
      max_pool_rows<B>(x, y, g, r0, r1);
  }
}

// Runs a 2-D MaxPool with blocked operands on both sides in our loop; false where it does not apply
// (the oneDNN pooling runs).
Expected<bool> try_max_pool_loop(runtime::KernelContext& ctx, const std::string& pool, const Tensor& x, Tensor& y,
                                 bool src_blk, bool dst_blk, int64_t block) {
  if (pool != "MaxPool" || !src_blk || !dst_blk || (block != 8 && block != 16) || x.rank() != 4 ||
      x.dim(1) % block != 0 || y.dtype() != x.dtype() || (x.dtype() != DType::F32 && x.dtype() != DType::BF16) ||
      ctx.node().outputs.size() != 1)
    return false;
  MS_ASSIGN_OR_RETURN(ops::WindowGeometry wg, nn::geometry(ctx, ops::WindowKind::Pool, x.shape(), {}));
  if (wg.spatial() != 2 || y.dim(2) != wg.out[0] || y.dim(3) != wg.out[1]) return false;
  const MaxPoolRows g{x.dim(0) * (x.dim(1) / block),
                      x.dim(2),
                      x.dim(3),
                      y.dim(2),
                      y.dim(3),
                      wg.kernel[0],
                      wg.kernel[1],
                      wg.strides[0],
                      wg.strides[1],
                      wg.dilations[0],
                      wg.dilations[1],
                      wg.pads_begin[0],
                      wg.pads_begin[1]};
  const int64_t rows = g.planes * g.oh;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    if (block == 16)
      max_pool_blocked<16>(x.data<T>(), y.data<T>(), g, rows);
    else
      max_pool_blocked<8>(x.data<T>(), y.data<T>(), g, rows);
  };
  if (x.dtype() == DType::BF16)
    run(bf16{});
  else
    run(float{});
  ctx.set_impl("fused:max_pool_blocked");
  return true;
}

// Whether the node is a global pool over a blocked f32 or bf16 input our loop takes (whole blocks,
// the output in the input's type).
bool runs_global_pool_loop(const std::string& pool, const Tensor& x, const Tensor& y, bool src_blk, int64_t block) {
  return (pool == "GlobalAveragePool" || pool == "GlobalMaxPool") && src_blk &&
         (x.dtype() == DType::F32 || x.dtype() == DType::BF16) && y.dtype() == x.dtype() && x.rank() == 4 &&
         (block == 8 || block == 16) && x.dim(1) % block == 0;
}

Status fused_pool_kernel(runtime::KernelContext& ctx) {
  const std::string pool = ctx.node().attr_string("pool", "");
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (!y.defined()) return ctx.fail("output shape unknown before the run");
  if (y.numel() == 0) return Status::ok();
  const bool src_blk = ctx.node().attr_int("src_blocked", 0) != 0;
  const bool dst_blk = ctx.node().attr_int("dst_blocked", 0) != 0;
  const bool rounds = y.dtype() != x.dtype();
  if (rounds && !(x.dtype() == DType::F32 && y.dtype() == DType::BF16))
    return ctx.fail("a pool rounds f32 to bf16 only, not " + std::string(dtype_name(x.dtype())) + " to " +
                    std::string(dtype_name(y.dtype())));
  const int64_t block = ctx.node().attr_int("layout_block", 16);
  if (runs_global_pool_loop(pool, x, y, src_blk, block)) {
    const int64_t tasks = x.dim(0) * (x.dim(1) / block), hw = x.dim(2) * x.dim(3);
    const bool avg = pool == "GlobalAveragePool";
    auto run = [&](auto tag) {
      using T = decltype(tag);
      if (block == 16)
        global_pool_blocked<16>(x.data<T>(), y.data<T>(), tasks, hw, avg);
      else
        global_pool_blocked<8>(x.data<T>(), y.data<T>(), tasks, hw, avg);
    };
    if (x.dtype() == DType::BF16)
      run(bf16{});
    else
      run(float{});
    ctx.set_impl("fused:global_pool_blocked");
    return Status::ok();
  }
  MS_ASSIGN_OR_RETURN(const bool looped, try_max_pool_loop(ctx, pool, x, y, src_blk, dst_blk, block));
  if (looped) return Status::ok();
  if ((x.dtype() == DType::F32 || x.dtype() == DType::BF16) && x.rank() == 4 && x.numel() > 0) {
    Status s = pool_blocked(ctx, pool, x, y, src_blk, dst_blk, block);
    // Blocked operands and rounded results have no plain fallback.
    if (s.code() != ErrorCode::Unsupported || src_blk || dst_blk || rounds) return s;
  } else if (src_blk || dst_blk) {
    return ctx.fail("blocked layout needs a 4-D f32 or bf16 input");
  }
  MS_RETURN_IF_ERROR(run_anchor(ctx, pool.c_str(), 1));
  ctx.set_impl("fused:" + ctx.impl());
  return Status::ok();
}

}  // namespace

void register_fused_pool_kernels(runtime::KernelRegistry& r) {
  r.add("FusedPool", fused_pool_kernel, ops::kFusedDomain);
}

}  // namespace ms::cpu::fused
