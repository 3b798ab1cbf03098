// Pooling kernels. f32 MaxPool/AveragePool with 1-3 spatial axes and no Indices output go through
// oneDNN; everything else (Indices, f64/f16/i8, LpPool, count_include_pad with ceil_mode) through
// reference loops over a window table. Global pools are plain reductions over the spatial plane.
#include <cmath>
#include <limits>

#include "engine/backends/cpu/byte_transpose.h"
#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu::nn {
namespace {

using dnnl::memory;

enum class PoolType : uint8_t { Max, Average, Lp };

struct PoolPrimitive {
  dnnl::pooling_v2_forward::primitive_desc pd;
  dnnl::pooling_v2_forward prim;
};

// The pool on the layout oneDNN's jit pooling takes (blocked channels for f32, channels last for
// 8 bits), the activations moved there and back at the op's edges.
Status run_relaid(runtime::KernelContext& ctx, OneDnnContext& dnn, const PoolPrimitive& p, const Tensor& x, Tensor& y,
                  bool eight_bit) {
  Tensor holder, x_holder, y_holder;
  MS_ASSIGN_OR_RETURN(memory src, make_scratchpad(ctx, p.pd.src_desc(), x_holder));
  MS_ASSIGN_OR_RETURN(memory dst, make_scratchpad(ctx, p.pd.dst_desc(), y_holder));
  MS_ASSIGN_OR_RETURN(memory scratch, make_scratchpad(ctx, p.pd.scratchpad_desc(), holder));
  if (eight_bit) {  // channels last, moved by our byte transposes (oneDNN's reorder is ~4x slower)
    const int64_t n = x.dim(0), c = x.dim(1);
    transpose_bytes(static_cast<const uint8_t*>(x.raw()), static_cast<uint8_t*>(src.get_data_handle()), n, c,
                    x.numel() / (n * c));
    p.prim.execute(dnn.stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratch}});
    dnn.stream().wait();
    transpose_bytes(static_cast<const uint8_t*>(dst.get_data_handle()), static_cast<uint8_t*>(y.raw()), n,
                    y.numel() / (n * c), c);
    ctx.set_impl(impl_name(p.pd) + "+transposes");
    return Status::ok();
  }
  const memory::data_type dt = to_dnnl(x.dtype());
  memory xm = wrap(x, plain_desc(x.shape(), dt), dnn.engine()), ym = wrap(y, plain_desc(y.shape(), dt), dnn.engine());
  dnnl::reorder(xm, src).execute(dnn.stream(), xm, src);
  p.prim.execute(dnn.stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratch}});
  dnnl::reorder(dst, ym).execute(dnn.stream(), dst, ym);
  dnn.stream().wait();
  ctx.set_impl(impl_name(p.pd) + "+reorders");
  return Status::ok();
}

Status pool_onednn(runtime::KernelContext& ctx, const Tensor& x, Tensor& y, const ops::WindowGeometry& g, PoolType type,
                   bool include_pad) {
  const Shape in(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> pad_r = g.pads_end;
  for (size_t i = 0; i < in.size(); ++i) {
    // ceil_mode: oneDNN's floor formula reaches the last window with more right padding. With
    // count_include_pad that extra padding would be counted, unlike ONNX: leave it to the loops.
    const int64_t need = (g.out[i] - 1) * g.strides[i] + g.effective_kernel(i) - in[i] - g.pads_begin[i];
    if (need > pad_r[i]) {
      if (type == PoolType::Average && include_pad) return ctx.unsupported_case("ceil_mode with count_include_pad");
      pad_r[i] = need;
    }
  }
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  const auto alg = type == PoolType::Max ? dnnl::algorithm::pooling_max
                   : include_pad         ? dnnl::algorithm::pooling_avg_include_padding
                                         : dnnl::algorithm::pooling_avg_exclude_padding;
  const memory::data_type dt = to_dnnl(x.dtype());
  const std::string key = "pool|" + std::string(dtype_name(x.dtype())) + "|" + std::to_string(static_cast<int>(alg)) +
                          "|" + key_of(x.shape()) + "|" + key_of(y.shape()) + "|" + key_of(g.kernel) + "|" +
                          key_of(g.strides) + "|" + key_of(g.dilations) + "|" + key_of(g.pads_begin) + "|" +
                          key_of(pad_r);
  // On plain nchw oneDNN 2.6 pools with a C++ loop (simple_nchw): ResNet-18's stem MaxPool over
  // [1,64,112,112] took 7.6 ms at two threads on AVX2. 4-D f32 pools then run its jit pooling on the
  // CPU's blocked layout (nChw8c, nChw16c with AVX-512), the activations reordered at the op's edges.
  const auto make = [&](const memory::desc& src, const memory::desc& dst) {
    memory::dims dil(g.dilations.begin(), g.dilations.end());
    for (auto& d : dil) d -= 1;
    dnnl::pooling_v2_forward::desc d(
        dnnl::prop_kind::forward_inference, alg, src, dst, memory::dims(g.strides.begin(), g.strides.end()),
        memory::dims(g.kernel.begin(), g.kernel.end()), dil, memory::dims(g.pads_begin.begin(), g.pads_begin.end()),
        memory::dims(pad_r.begin(), pad_r.end()));
    dnnl::pooling_v2_forward::primitive_desc pd(d, user_scratchpad_attr(), dnn.engine());
    return std::make_shared<PoolPrimitive>(PoolPrimitive{pd, dnnl::pooling_v2_forward(pd)});
  };
  return guard_onednn(ctx, "pooling", [&]() -> Status {
    const memory::desc x_plain = plain_desc(x.shape(), dt), y_plain = plain_desc(y.shape(), dt);
    auto pp = dnn.cached<PoolPrimitive>(key, [&] { return make(x_plain, y_plain); });
    Tensor holder;
    std::shared_ptr<PoolPrimitive> blocked;
    const bool eight_bit = dt == memory::data_type::u8 || dt == memory::data_type::s8;
    const std::string impl = pp->pd.impl_info_str();
    if (x.rank() == 4 && (dt == memory::data_type::f32 || eight_bit) &&
        (impl.rfind("simple", 0) == 0 || (eight_bit && impl.rfind("ref", 0) == 0))) {
      // 8-bit pools: oneDNN's jit int8 pooling takes channels last (plain nchw gets its reference).
      const auto tag = eight_bit                ? memory::format_tag::nhwc
                       : cpu_simd_width() >= 16 ? memory::format_tag::nChw16c
                                                : memory::format_tag::nChw8c;
      blocked = dnn.cached<PoolPrimitive>(key + "|blocked", [&] {
        return make(memory::desc(x_plain.dims(), dt, tag), memory::desc(y_plain.dims(), dt, tag));
      });
    }
    if (!blocked) {
      MS_ASSIGN_OR_RETURN(memory scratch, make_scratchpad(ctx, pp->pd.scratchpad_desc(), holder));
      pp->prim.execute(dnn.stream(), {{DNNL_ARG_SRC, wrap(x, x_plain, dnn.engine())},
                                      {DNNL_ARG_DST, wrap(y, y_plain, dnn.engine())},
                                      {DNNL_ARG_SCRATCHPAD, scratch}});
      dnn.stream().wait();
      ctx.set_impl(impl_name(pp->pd));
      return Status::ok();
    }
    return run_relaid(ctx, dnn, *blocked, x, y, eight_bit);
  });
}

// Row-major flat spatial offset -> column-major one (MaxPool storage_order = 1).
int64_t column_major(int64_t flat, const Shape& in) {
  int64_t out = 0, stride = 1;
  std::vector<int64_t> pos(in.size());
  for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) {
    pos[i] = flat % in[i];
    flat /= in[i];
  }
  for (size_t i = 0; i < in.size(); ++i) {
    out += pos[i] * stride;
    stride *= in[i];
  }
  return out;
}

struct PoolArgs {
  PoolType type;
  bool include_pad;
  int p;              // LpPool
  Tensor* indices;    // MaxPool optional output 1
  bool column_major;  // storage_order
};

template <class T> void pool_loop(const Tensor& x, Tensor& y, const ops::WindowGeometry& g, const PoolArgs& a) {
  using A = std::conditional_t<std::is_integral_v<T>, T, acc_t<T>>;
  const Shape in(x.shape().begin() + 2, x.shape().end());
  const std::vector<int64_t> table = window_table(in, g);
  const int64_t planes = x.dim(0) * x.dim(1), in_size = numel(in), out_size = numel(g.out), taps = numel(g.kernel);
  const T* xd = x.data<T>();
  T* yd = y.data<T>();
  int64_t* id = a.indices ? a.indices->data<int64_t>() : nullptr;
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = xd + plane * in_size;
    for (int64_t p = 0; p < out_size; ++p) {
      const int64_t* row = table.data() + p * taps;
      if (a.type == PoolType::Max) {
        A best = std::numeric_limits<A>::lowest();
        int64_t arg = -1;
        for (int64_t kk = 0; kk < taps; ++kk)
          if (row[kk] >= 0 && (arg < 0 || static_cast<A>(xp[row[kk]]) > best)) {
            best = static_cast<A>(xp[row[kk]]);
            arg = row[kk];
          }
        yd[plane * out_size + p] = static_cast<T>(best);
        if (id)
          id[plane * out_size + p] = plane * in_size + (arg < 0 ? 0 : a.column_major ? column_major(arg, in) : arg);
      } else {
        A sum = A(0);
        int64_t count = 0;
        for (int64_t kk = 0; kk < taps; ++kk) {
          if (row[kk] >= 0) {
            const A v = static_cast<A>(xp[row[kk]]);
            sum += a.type == PoolType::Lp ? static_cast<A>(std::pow(std::abs(v), a.p)) : v;
            ++count;
          } else if (row[kk] == kInPadding && a.include_pad) {
            ++count;
          }
        }
        A r = a.type == PoolType::Lp ? static_cast<A>(std::pow(sum, A(1) / static_cast<A>(a.p)))
                                     : (count ? sum / static_cast<A>(count) : A(0));
        yd[plane * out_size + p] = static_cast<T>(r);
      }
    }
  }
}

Status pool_kernel(runtime::KernelContext& ctx, PoolType type) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  MS_ASSIGN_OR_RETURN(ops::WindowGeometry g, geometry(ctx, ops::WindowKind::Pool, x.shape(), {}));
  const ir::Node& n = ctx.node();
  PoolArgs a{type, n.attr_int("count_include_pad", 0) != 0, static_cast<int>(n.attr_int("p", 2)), nullptr,
             n.attr_int("storage_order", 0) == 1};
  if (type == PoolType::Max && ctx.num_outputs() > 1 && ctx.output(1).defined()) a.indices = &ctx.output(1);
  if (y.numel() == 0) return Status::ok();
  // f32 and bf16 (mixed precision), and 8-bit MaxPool (a QDQ model's, folded onto its 8-bit tensor)
  // through oneDNN; the loops below for the rest.
  const bool onednn_type = x.dtype() == DType::F32 || x.dtype() == DType::BF16 ||
                           (type == PoolType::Max && (x.dtype() == DType::U8 || x.dtype() == DType::I8));
  if (onednn_type && type != PoolType::Lp && !a.indices && g.spatial() <= 3) {
    Status s = pool_onednn(ctx, x, y, g, type, a.include_pad);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  bool ok = visit_float(x.dtype(), [&](auto tag) { pool_loop<typename decltype(tag)::type>(x, y, g, a); });
  if (!ok && type == PoolType::Max && x.dtype() == DType::I8) ok = (pool_loop<int8_t>(x, y, g, a), true);
  if (!ok && type == PoolType::Max && x.dtype() == DType::U8) ok = (pool_loop<uint8_t>(x, y, g, a), true);
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(x.dtype())) + " is not supported");
  ctx.set_impl("ref");
  return Status::ok();
}

template <class T> void global_pool_loop(const Tensor& x, Tensor& y, PoolType type, int p) {
  using A = acc_t<T>;
  const int64_t planes = x.dim(0) * x.dim(1), size = planes ? x.numel() / planes : 0;
  const T* xd = x.data<T>();
  T* yd = y.data<T>();
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = xd + plane * size;
    A r = type == PoolType::Max ? std::numeric_limits<A>::lowest() : A(0);
    for (int64_t i = 0; i < size; ++i) {
      const A v = static_cast<A>(xp[i]);
      if (type == PoolType::Max)
        r = std::max(r, v);
      else if (type == PoolType::Lp)
        r += static_cast<A>(std::pow(std::abs(v), p));
      else
        r += v;
    }
    if (type == PoolType::Average) r = size ? r / static_cast<A>(size) : A(0);
    if (type == PoolType::Lp) r = static_cast<A>(std::pow(r, A(1) / static_cast<A>(p)));
    yd[plane] = static_cast<T>(r);
  }
}

// f32 planes: a vector of partial sums (or maxima) per plane, added in double at the end; the
// scalar loop above ran at ~10 GB/s (Inception's 256x56x56 average: 331 us). V: the CPU's vector
// (simd_width()).
template <class V> [[gnu::always_inline]] inline float global_max_plane(const float* __restrict xp, int64_t size) {
  constexpr int L = kLanes<V>;
  // A NaN anywhere in the plane makes the maximum NaN.
  float r = -std::numeric_limits<float>::infinity();
  bool nan = false;
  int64_t i = 0;
  if (size >= L) {
    V m = MS_LOADV(V, xp);
    V bad = m != m ? V{} + 1 : V{};
    for (i = L; i + L <= size; i += L) {
      const V v = MS_LOADV(V, xp + i);
      m = v > m ? v : m;
      bad = v != v ? V{} + 1 : bad;
    }
    for (int l = 0; l < L; ++l) {
      r = std::max(r, m[l]);
      nan = nan || bad[l] != 0;
    }
  }
  for (; i < size; ++i) {
    r = std::max(r, xp[i]);
    nan = nan || xp[i] != xp[i];
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : r;
}

template <class V> [[gnu::always_inline]] inline float global_mean_plane(const float* __restrict xp, int64_t size) {
  constexpr int L = kLanes<V>;
  V a{}, b{};
  int64_t i = 0;
  for (; i + 2 * L <= size; i += 2 * L) {
    a += MS_LOADV(V, xp + i);
    b += MS_LOADV(V, xp + i + L);
  }
  a += b;
  double r = 0;
  for (int l = 0; l < L; ++l) r += a[l];
  for (; i < size; ++i) r += xp[i];
  return size ? static_cast<float>(r / static_cast<double>(size)) : 0.f;
}

// Planes [p0, p1). The team is started outside: an OpenMP region is outlined before inlining, so
// one inside these functions would not get their instruction set.
template <class V>
[[gnu::always_inline]] inline void global_pool_planes(const float* __restrict x, float* __restrict y, int64_t p0,
                                                      int64_t p1, int64_t size, bool max) {
  for (int64_t plane = p0; plane < p1; ++plane)
    y[plane] = max ? global_max_plane<V>(x + plane * size, size) : global_mean_plane<V>(x + plane * size, size);
}

MS_TARGET_AVX512 void global_pool_avx512(const float* x, float* y, int64_t p0, int64_t p1, int64_t size, bool max) {
  global_pool_planes<vec16>(x, y, p0, p1, size, max);
}
MS_TARGET_AVX2 void global_pool_avx2(const float* x, float* y, int64_t p0, int64_t p1, int64_t size, bool max) {
  global_pool_planes<vec8>(x, y, p0, p1, size, max);
}

void global_pool_f32(const float* x, float* y, int64_t planes, int64_t size, bool max) {
  const int width = simd_width();
  const int64_t chunks = std::min<int64_t>(planes, 64);
#pragma omp parallel for schedule(static) if (planes * size >= (1 << 15))
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t p0 = planes * c / chunks, p1 = planes * (c + 1) / chunks;
    if (width == 16)
      global_pool_avx512(x, y, p0, p1, size, max);
    else if (width == 8)
      global_pool_avx2(x, y, p0, p1, size, max);
    else
      global_pool_planes<vec4>(x, y, p0, p1, size, max);
  }
}

Status global_pool_kernel(runtime::KernelContext& ctx, PoolType type) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() == DType::F32 && type != PoolType::Lp && x.rank() >= 2) {
    const int64_t planes = x.dim(0) * x.dim(1), size = planes ? x.numel() / planes : 0;
    global_pool_f32(x.data<float>(), ctx.output(0).data<float>(), planes, size, type == PoolType::Max);
    ctx.set_impl("simd");
    return Status::ok();
  }
  const int p = static_cast<int>(ctx.node().attr_int("p", 2));
  const bool ok = visit_float(
      x.dtype(), [&](auto tag) { global_pool_loop<typename decltype(tag)::type>(x, ctx.output(0), type, p); });
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(x.dtype())) + " is not supported");
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace

void register_pool_kernels(runtime::KernelRegistry& r) {
  r.add("MaxPool", [](runtime::KernelContext& c) { return pool_kernel(c, PoolType::Max); });
  r.add("AveragePool", [](runtime::KernelContext& c) { return pool_kernel(c, PoolType::Average); });
  r.add("LpPool", [](runtime::KernelContext& c) { return pool_kernel(c, PoolType::Lp); });
  r.add("GlobalMaxPool", [](runtime::KernelContext& c) { return global_pool_kernel(c, PoolType::Max); });
  r.add("GlobalAveragePool", [](runtime::KernelContext& c) { return global_pool_kernel(c, PoolType::Average); });
  r.add("GlobalLpPool", [](runtime::KernelContext& c) { return global_pool_kernel(c, PoolType::Lp); });
}

}  // namespace ms::cpu::nn
