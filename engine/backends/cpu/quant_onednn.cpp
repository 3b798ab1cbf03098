// The int8 convolution of QLinearConv and ConvInteger through oneDNN: x (uint8/int8, reordered to
// channels last) with its zero point as oneDNN's runtime source zero point, int8 weights reordered
// once into the primitive's layout (nn::prepared_weights), int32 accumulators out (channels last).
// Bias and requantization stay in quant_int.cpp, in float64 as the ONNX reference does. Without
// VNNI the weights past 64 take one of three exact ways (int8_pairs_may_saturate).
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/backends/cpu/byte_transpose.h"
#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/quant_internal.h"
#include "engine/backends/cpu/weights_registry.h"

namespace ms::cpu::quant {
namespace {

using dnnl::memory;

struct Int8Conv {  // or the exact f32 conv of the same integers (make_primitive)
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  memory::desc user_weights;  // the ONNX weights, (g,) O, I, spatial, contiguous
  bool reference = false;     // oneDNN's reference implementation: the caller's loops are faster
};

memory::dims dims_of(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

memory::format_tag channels_last(size_t rank) {
  return rank == 3 ? memory::format_tag::nwc : rank == 4 ? memory::format_tag::nhwc : memory::format_tag::ndhwc;
}

memory::desc weights_desc(const Tensor& w, int64_t group, memory::data_type t = memory::data_type::s8) {
  memory::dims dims;
  if (group > 1)
    dims = {group, w.dim(0) / group};
  else
    dims = {w.dim(0)};
  dims.insert(dims.end(), w.shape().begin() + 1, w.shape().end());
  memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return memory::desc(dims, t, strides);
}

std::string key_of(const Tensor& x, const Tensor& w, const IntConvPlan& p, bool has_zp) {
  std::string k = "qconv|" + std::string(dtype_name(x.dtype())) + "|" + nn::key_of(x.shape()) + "|" +
                  nn::key_of(w.shape()) + "|" + nn::key_of(p.g.strides) + "|" + nn::key_of(p.g.dilations) + "|" +
                  nn::key_of(p.g.pads_begin) + "|" + nn::key_of(p.g.pads_end) + "|" + std::to_string(p.group);
  return k + (has_zp ? "|zp" : "");
}

// The conv of x and w as oneDNN's primitive on channels-last activations: int8 (src u8/s8, weights
// s8, int32 sums, x's zero point at run time) or exact f32 (every type f32, no zero point).
std::shared_ptr<Int8Conv> make_primitive(OneDnnContext& dnn, const Tensor& x, const Tensor& w, const IntConvPlan& p,
                                         bool has_zp, bool f32 = false) {
  using dt = memory::data_type;
  ConvProblem prob;
  const memory::format_tag tag = channels_last(x.shape().size());
  const dt src_t = f32 ? dt::f32 : x.dtype() == DType::U8 ? dt::u8 : dt::s8, wei_t = f32 ? dt::f32 : dt::s8;
  prob.src = memory::desc(dims_of(x.shape()), src_t, tag);
  prob.weights = memory::desc(weights_desc(w, p.group).dims(), wei_t, memory::format_tag::any);
  prob.dst = memory::desc(dims_of(p.out), f32 ? dt::f32 : dt::s32, tag);
  prob.strides = dims_of(p.g.strides);
  prob.dilations = dims_of(p.g.dilations);
  for (auto& d : prob.dilations) d -= 1;  // oneDNN counts the gaps
  prob.pad_l = dims_of(p.g.pads_begin);
  prob.pad_r = dims_of(p.g.pads_end);
  dnnl::primitive_attr attr = nn::user_scratchpad_attr();
  if (has_zp) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  auto c = std::make_shared<Int8Conv>();
  c->pd = conv_forward_pd(dnn.engine(), prob, attr);
  c->prim = dnnl::convolution_forward(c->pd);
  c->user_weights = weights_desc(w, p.group, wei_t);
  c->reference = std::string(c->pd.impl_info_str()).rfind("ref", 0) == 0;
  return c;
}

// One weights tensor and the int32 accumulators its conv writes.
struct Int8ConvRun {
  const Tensor* w;
  int32_t* acc;
};

// x reordered once to the primitive's layout (and, with `clamp`, its values past 127 cut to 127),
// then one execution per run (the whole weights, or their two halves).
Status run_primitive(runtime::KernelContext& ctx, OneDnnContext& dnn, const Int8Conv& c, const Tensor& x, int32_t zx,
                     std::initializer_list<Int8ConvRun> runs, bool clamp = false) {
  Tensor src_holder, scratch_holder;
  MS_ASSIGN_OR_RETURN(memory src, nn::make_scratchpad(ctx, c.pd.src_desc(), src_holder));
  transpose_bytes(static_cast<const uint8_t*>(x.raw()), static_cast<uint8_t*>(src.get_data_handle()), x.dim(0),
                  x.dim(1), x.numel() / (x.dim(0) * x.dim(1)));  // channels last, as the primitive was made
  if (clamp) {
    auto* d = static_cast<uint8_t*>(src.get_data_handle());
    const auto n = static_cast<int64_t>(c.pd.src_desc().get_size());
#pragma omp parallel for simd schedule(static) if (n > (1 << 18))
    for (int64_t i = 0; i < n; ++i) d[i] = d[i] > 127 ? uint8_t{127} : d[i];
  }
  MS_ASSIGN_OR_RETURN(memory scratch, nn::make_scratchpad(ctx, c.pd.scratchpad_desc(), scratch_holder));
  int32_t zp_value = zx;
  memory zp(memory::desc({1}, memory::data_type::s32, memory::format_tag::x), dnn.engine(), &zp_value);
  for (const Int8ConvRun& r : runs) {
    MS_ASSIGN_OR_RETURN(memory wmem, nn::prepared_weights(ctx, dnn, *r.w, c.user_weights, c.pd.weights_desc()));
    memory dst(c.pd.dst_desc(), dnn.engine(), r.acc);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratch}};
    if (zx != 0) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp);
    c.prim.execute(dnn.stream(), args);
  }
  dnn.stream().wait();
  ctx.set_impl(impl_name(c.pd));
  return Status::ok();
}

// AVX-VNNI (CPUID.(EAX=7,ECX=1):EAX bit 4), read from CPUID: clang 14's __builtin_cpu_supports
// does not know the name.
bool cpu_has_avx_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4)) != 0;
#else
  return false;
#endif
}

// What is made from int8 weights (their halves, floats, rows), once per weights: a frozen buffer,
// or the same bytes (int8_weights_stamp). `what` names the kind in the cache key; the value is
// copied out under the entry's lock.
template <class T> struct FromInt8 {
  std::mutex mu;
  std::weak_ptr<Buffer> source;
  uint64_t stamp = 0;
  bool ready = false;
  T value;
};

template <class T, class Make> T made_from(OneDnnContext& dnn, const std::string& what, const Tensor& w, Make&& make) {
  const std::string key = what + "|" + std::to_string(reinterpret_cast<uintptr_t>(w.buffer().get())) + "|" +
                          std::to_string(w.byte_offset()) + "|" + nn::key_of(w.shape());
  auto h = dnn.cached_for<FromInt8<T>>(w.buffer(), key, [] { return std::make_shared<FromInt8<T>>(); });
  std::lock_guard<std::mutex> lock(h->mu);
  const uint64_t stamp = int8_weights_stamp(w);
  if (!h->ready || h->source.lock() != w.buffer() || h->stamp != stamp) {
    h->value = make();
    h->source = w.buffer();
    h->stamp = stamp;
    h->ready = true;
  }
  return h->value;
}

// Int8 weights in two halves for oneDNN's kernels without VNNI: hi = w / 2 (truncated), lo = w - hi,
// both within [-64, 64], so no pair of products saturates whichever channels a kernel pairs, and the
// two int32 convolutions add up to w's exactly. Fresh tensors each time the weights change: the
// reorders prepared from the old ones are cached by their buffers.
std::pair<Tensor, Tensor> halves_of(OneDnnContext& dnn, const Tensor& w) {
  return made_from<std::pair<Tensor, Tensor>>(dnn, "int8-halves", w, [&] {
    Tensor hi = Tensor::empty(DType::I8, w.shape()), lo = Tensor::empty(DType::I8, w.shape());
    const int8_t* src = w.data<int8_t>();
    for (int64_t i = 0; i < w.numel(); ++i) {
      hi.data<int8_t>()[i] = static_cast<int8_t>(src[i] / 2);
      lo.data<int8_t>()[i] = static_cast<int8_t>(src[i] - src[i] / 2);
    }
    hi.buffer()->freeze();
    lo.buffer()->freeze();
    return std::pair{hi, lo};
  });
}

// ---- activations past 127: the conv of the rest, plus a sparse correction ----
// Without VNNI the pairs saturate only where 255 meets large weights. With x cut to 127, a pair is
// at most 2 * 127 * 128 = 32512 whatever the weights, so one pass over min(x, 127) is exact; the
// few values past it (ReLU outputs quantized with zero point 0 have well under 1%) add
// (x - 127) * w[:, c, kh, kw] to the outputs their window reaches, the weights read as rows over
// the output channels.

// One activation past 127: batch n, channel c, position (h, w), excess x - 127.
struct Excess {
  int64_t n, c, h, w;
  int32_t r;
};

// The weights as rows over a group's output channels: [c][kh][kw][oc of the group].
std::shared_ptr<const std::vector<int8_t>> transposed_of(OneDnnContext& dnn, const Tensor& w, const IntConvPlan& p) {
  using Rows = std::shared_ptr<const std::vector<int8_t>>;
  return made_from<Rows>(dnn, "int8-rows|" + std::to_string(p.group), w, [&] {
    const int64_t mg = p.m / p.group, cg = p.c / p.group, taps = p.taps;
    auto rows = std::make_shared<std::vector<int8_t>>(static_cast<size_t>(p.c * taps * mg));
    const int8_t* src = w.data<int8_t>();  // [M][cg][taps]
    int8_t* dst = rows->data();            // written in order, read across
    for (int64_t c = 0; c < p.c; ++c) {
      const int64_t g = c / cg, ic = c % cg;
      for (int64_t k = 0; k < taps; ++k)
        for (int64_t ocl = 0; ocl < mg; ++ocl) *dst++ = src[((g * mg + ocl) * cg + ic) * taps + k];
    }
    return Rows(std::move(rows));
  });
}

// The values of a uint8 [N, C, H, W] x past 127, or false when there are more than `limit` of them.
bool excess_of(const Tensor& x, int64_t limit, std::vector<Excess>& out) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const uint8_t* px = x.data<uint8_t>();
  for (int64_t nch = 0; nch < N * C * H; ++nch) {
    const uint8_t* row = px + nch * W;
    uint8_t top = 0;
#pragma omp simd reduction(max : top)
    for (int64_t i = 0; i < W; ++i) top = row[i] > top ? row[i] : top;
    if (top <= 127) continue;
    for (int64_t i = 0; i < W; ++i) {
      if (row[i] <= 127) continue;
      if (static_cast<int64_t>(out.size()) >= limit) return false;
      out.push_back({nch / (C * H), (nch / H) % C, nch % H, i, row[i] - 127});
    }
  }
  return true;
}

// acc [N, OH, OW, M] += each excess times the weights its value meets. Threads split the output
// channels, so no two write the same accumulator.
void add_excess(const std::vector<Excess>& ex, const int8_t* rows, const IntConvPlan& p, int32_t* acc) {
  const ops::WindowGeometry& g = p.g;
  const int64_t KH = g.kernel[0], KW = g.kernel[1], OH = g.out[0], OW = g.out[1], M = p.m;
  const int64_t mg = M / p.group, cg = p.c / p.group;
  const auto work = static_cast<int64_t>(ex.size()) * p.taps * mg;
  const int threads = work > (1 << 16) ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(threads)
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t per = (M + nt - 1) / nt, lo = std::min(M, t * per), hi = std::min(M, lo + per);
    for (const Excess& e : ex) {
      const int64_t grp = e.c / cg, o0 = std::max(lo, grp * mg), o1 = std::min(hi, (grp + 1) * mg);
      if (o0 >= o1) continue;
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int64_t th = e.h + g.pads_begin[0] - kh * g.dilations[0];
        if (th < 0 || th % g.strides[0] != 0 || th / g.strides[0] >= OH) continue;
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t tw = e.w + g.pads_begin[1] - kw * g.dilations[1];
          if (tw < 0 || tw % g.strides[1] != 0 || tw / g.strides[1] >= OW) continue;
          int32_t* a = acc + ((e.n * OH + th / g.strides[0]) * OW + tw / g.strides[1]) * M;
          const int8_t* wr = rows + ((e.c * KH + kh) * KW + kw) * mg - grp * mg;
          const int32_t r = e.r;
#pragma omp simd
          for (int64_t oc = o0; oc < o1; ++oc) a[oc] += r * wr[oc];
        }
      }
    }
  }
}

// ---- few terms a sum: the integer conv as an exact f32 one ----
// Each product (x - zx) * w is within 255 * 128 = 32640, so a sum of at most 514 of them stays below
// 2^24 and every partial sum is an integer f32 holds exactly, in whatever order a kernel adds them.
// Convs with few terms a sum (ResNet's 3-channel 7x7 stem: 147) run as oneDNN's f32 conv on
// x - zx and w as floats where the int8 kernel would need halves: its activations (the image,
// zero point near 128) are mostly past 127.
constexpr int64_t kExactF32Terms = (int64_t{1} << 24) / (255 * 128);

// The int8 weights as floats (a fresh, frozen tensor each time the weights change).
Tensor floats_of(OneDnnContext& dnn, const Tensor& w) {
  return made_from<Tensor>(dnn, "int8-f32", w, [&] {
    Tensor f = Tensor::empty(DType::F32, w.shape());
    const int8_t* src = w.data<int8_t>();
    for (int64_t i = 0; i < w.numel(); ++i) f.data<float>()[i] = src[i];
    f.buffer()->freeze();
    return f;
  });
}

// x - zx as floats, channels last: [N, C, S] -> [N, S, C].
template <class Q> void shifted_channels_last(const Q* x, int64_t n, int64_t c, int64_t sp, int32_t zx, float* y) {
  const auto z = static_cast<float>(zx);
#pragma omp parallel for schedule(static) if (n * c * sp > (1 << 16))
  for (int64_t ns = 0; ns < n * sp; ++ns) {
    const Q* src = x + (ns / sp) * c * sp + ns % sp;
    float* dst = y + ns * c;
    for (int64_t ch = 0; ch < c; ++ch) dst[ch] = static_cast<float>(src[ch * sp]) - z;
  }
}

Status run_exact_f32(runtime::KernelContext& ctx, OneDnnContext& dnn, const Int8Conv& c, const Tensor& x,
                     const Tensor& w, const IntConvPlan& p, int32_t zx, int32_t* acc) {
  Tensor src_holder, scratch_holder;
  MS_ASSIGN_OR_RETURN(memory src, nn::make_scratchpad(ctx, c.pd.src_desc(), src_holder));
  auto* xs = static_cast<float*>(src.get_data_handle());
  if (x.dtype() == DType::U8)
    shifted_channels_last(x.data<uint8_t>(), p.batch, p.c, p.in_sp, zx, xs);
  else
    shifted_channels_last(x.data<int8_t>(), p.batch, p.c, p.in_sp, zx, xs);
  MS_ASSIGN_OR_RETURN(memory scratch, nn::make_scratchpad(ctx, c.pd.scratchpad_desc(), scratch_holder));
  MS_ASSIGN_OR_RETURN(memory wmem,
                      nn::prepared_weights(ctx, dnn, floats_of(dnn, w), c.user_weights, c.pd.weights_desc()));
  auto* sums = reinterpret_cast<float*>(acc);  // the f32 sums, then their int32 values in place
  memory dst(c.pd.dst_desc(), dnn.engine(), sums);
  c.prim.execute(dnn.stream(),
                 {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratch}});
  dnn.stream().wait();
  const int64_t n = numel(p.out);
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, sums + i, sizeof v);
    const auto q = static_cast<int32_t>(v);
    std::memcpy(acc + i, &q, sizeof q);
  }
  ctx.set_impl(impl_name(c.pd) + ":int8-as-exact-f32");
  return Status::ok();
}

}  // namespace

bool int8_pairs_may_saturate(const Tensor& w) {
  static const bool vnni = __builtin_cpu_supports("avx512vnni") || cpu_has_avx_vnni();
  if (vnni) return false;
  const auto scan = [&] {
    const int8_t* p = w.data<int8_t>();
    for (int64_t i = 0; i < w.numel(); ++i)
      if (p[i] > 64 || p[i] < -64) return true;
    return false;
  };
  if (!w.buffer() || !w.buffer()->frozen()) return scan();
  // A compiled graph's weights never change: their answer is kept, instead of reading every weight
  // on every call (twice a QLinearConv: the requantizing conv asks, then the int32 one).
  struct Answer {
    std::mutex mu;
    std::weak_ptr<Buffer> source;
    bool saturate = false;
  };
  const std::string key = std::to_string(reinterpret_cast<uintptr_t>(w.buffer().get())) + "|" +
                          std::to_string(w.byte_offset()) + "|" + std::to_string(w.numel());
  auto a = WeightsRegistry<Answer>::instance().entry(key);
  const std::lock_guard<std::mutex> lock(a->mu);
  if (a->source.lock() != w.buffer()) {
    a->saturate = scan();
    a->source = w.buffer();
  }
  return a->saturate;
}

Status conv_acc_onednn(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const IntConvPlan& p, int32_t zx,
                       int32_t* acc) {
  if ((x.dtype() != DType::U8 && x.dtype() != DType::I8) || w.dtype() != DType::I8 || x.shape().size() > 5)
    return ctx.unsupported_case("oneDNN int8 convolution needs uint8/int8 x and int8 w of rank 3-5");
  const bool halve = int8_pairs_may_saturate(w);
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  return nn::guard_onednn(ctx, "int8 convolution", [&]() -> Status {
    const bool has_zp = zx != 0;
    auto c = dnn.cached<Int8Conv>(key_of(x, w, p, has_zp), [&] { return make_primitive(dnn, x, w, p, has_zp); });
    if (c->reference) return ctx.unsupported_case("oneDNN has only its reference int8 convolution here");
    if (!halve) return run_primitive(ctx, dnn, *c, x, zx, {{&w, acc}});
    std::vector<Excess> ex;
    if (x.dtype() == DType::U8 && x.rank() == 4 && excess_of(x, x.numel() / 16, ex)) {
      MS_RETURN_IF_ERROR(run_primitive(ctx, dnn, *c, x, zx, {{&w, acc}}, /*clamp=*/true));
      if (!ex.empty()) add_excess(ex, transposed_of(dnn, w, p)->data(), p, acc);
      ctx.set_impl(impl_name(c->pd) + ":int8-cut127");
      return Status::ok();
    }
    if ((p.c / p.group) * p.taps <= kExactF32Terms) {
      auto f = dnn.cached<Int8Conv>("exact-f32|" + key_of(x, w, p, false),
                                    [&] { return make_primitive(dnn, x, w, p, false, /*f32=*/true); });
      if (!f->reference) return run_exact_f32(ctx, dnn, *f, x, w, p, zx, acc);
    }
    const auto [hi, lo] = halves_of(dnn, w);
    MS_ASSIGN_OR_RETURN(Tensor second, ctx.scratch(DType::I32, {numel(p.out)}));
    int32_t* s = second.data<int32_t>();
    MS_RETURN_IF_ERROR(run_primitive(ctx, dnn, *c, x, zx, {{&hi, acc}, {&lo, s}}));
    const int64_t n = second.numel();
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) acc[i] += s[i];
    ctx.set_impl(impl_name(c->pd) + ":int8-halves");
    return Status::ok();
  });
}

}  // namespace ms::cpu::quant
