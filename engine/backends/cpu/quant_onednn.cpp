// The int8 convolution of QLinearConv and ConvInteger through oneDNN: x (uint8/int8, reordered to
// channels last) with its zero point as oneDNN's runtime source zero point, int8 weights reordered
// once into the primitive's layout (nn::prepared_weights), int32 accumulators out (channels last).
// Bias and requantization stay in quant_int.cpp, in float64 as the ONNX reference does.
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/quant_internal.h"
#include "engine/backends/cpu/weights_registry.h"

namespace ms::cpu::quant {
namespace {

using dnnl::memory;

struct Int8Conv {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  memory::desc user_weights;  // the ONNX weights, (g,) O, I, spatial, contiguous
  bool reference = false;     // oneDNN's reference implementation: the caller's loops are faster
};

memory::dims dims_of(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

memory::format_tag channels_last(size_t rank) {
  return rank == 3 ? memory::format_tag::nwc : rank == 4 ? memory::format_tag::nhwc : memory::format_tag::ndhwc;
}

memory::desc weights_desc(const Tensor& w, int64_t group) {
  memory::dims dims;
  if (group > 1)
    dims = {group, w.dim(0) / group};
  else
    dims = {w.dim(0)};
  dims.insert(dims.end(), w.shape().begin() + 1, w.shape().end());
  memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return memory::desc(dims, memory::data_type::s8, strides);
}

std::string key_of(const Tensor& x, const Tensor& w, const IntConvPlan& p, bool has_zp) {
  std::string k = "qconv|" + std::string(dtype_name(x.dtype())) + "|" + nn::key_of(x.shape()) + "|" +
                  nn::key_of(w.shape()) + "|" + nn::key_of(p.g.strides) + "|" + nn::key_of(p.g.dilations) + "|" +
                  nn::key_of(p.g.pads_begin) + "|" + nn::key_of(p.g.pads_end) + "|" + std::to_string(p.group);
  return k + (has_zp ? "|zp" : "");
}

std::shared_ptr<Int8Conv> make_primitive(OneDnnContext& dnn, const Tensor& x, const Tensor& w, const IntConvPlan& p,
                                         bool has_zp) {
  ConvProblem prob;
  const memory::format_tag tag = channels_last(x.shape().size());
  const memory::data_type src_t = x.dtype() == DType::U8 ? memory::data_type::u8 : memory::data_type::s8;
  prob.src = memory::desc(dims_of(x.shape()), src_t, tag);
  memory::dims wd = weights_desc(w, p.group).dims();
  prob.weights = memory::desc(wd, memory::data_type::s8, memory::format_tag::any);
  prob.dst = memory::desc(dims_of(p.out), memory::data_type::s32, tag);
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
  c->user_weights = weights_desc(w, p.group);
  c->reference = std::string(c->pd.impl_info_str()).rfind("ref", 0) == 0;
  return c;
}

// One weights tensor and the int32 accumulators its conv writes.
struct Int8ConvRun {
  const Tensor* w;
  int32_t* acc;
};

// x reordered once to the primitive's layout, then one execution per run (the whole weights, or
// their two halves).
Status run_primitive(runtime::KernelContext& ctx, OneDnnContext& dnn, const Int8Conv& c, const Tensor& x, int32_t zx,
                     std::initializer_list<Int8ConvRun> runs) {
  const memory::data_type src_t = c.pd.src_desc().data_type();
  memory x_plain(memory::desc(dims_of(x.shape()), src_t, contiguous_strides(x.shape())), dnn.engine(), x.raw());
  Tensor src_holder, scratch_holder;
  MS_ASSIGN_OR_RETURN(memory src, nn::make_scratchpad(ctx, c.pd.src_desc(), src_holder));
  dnnl::reorder(x_plain, src).execute(dnn.stream(), x_plain, src);
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

// Int8 weights in two halves for oneDNN's kernels without VNNI: hi = w / 2 (truncated), lo = w - hi,
// both within [-64, 64], so no pair of products saturates whichever channels a kernel pairs, and the
// two int32 convolutions add up to w's exactly. Made once per weights (frozen, or the same bytes).
struct HalvedInt8 {
  std::mutex mu;
  std::weak_ptr<Buffer> source;
  uint64_t stamp = 0;
  Tensor hi, lo;
};

// (hi, lo), copies taken under the entry's lock.
std::pair<Tensor, Tensor> halves_of(OneDnnContext& dnn, const Tensor& w) {
  const std::string key = "int8-halves|" + std::to_string(reinterpret_cast<uintptr_t>(w.buffer().get())) + "|" +
                          std::to_string(w.byte_offset()) + "|" + nn::key_of(w.shape());
  auto h = dnn.cached<HalvedInt8>(key, [] { return std::make_shared<HalvedInt8>(); });
  std::lock_guard<std::mutex> lock(h->mu);
  const uint64_t stamp = int8_weights_stamp(w);
  if (!h->hi.defined() || h->source.lock() != w.buffer() || h->stamp != stamp) {
    // Fresh tensors each time: the reorders prepared from the old ones are cached by their buffers.
    Tensor hi = Tensor::empty(DType::I8, w.shape()), lo = Tensor::empty(DType::I8, w.shape());
    const int8_t* src = w.data<int8_t>();
    for (int64_t i = 0; i < w.numel(); ++i) {
      hi.data<int8_t>()[i] = static_cast<int8_t>(src[i] / 2);
      lo.data<int8_t>()[i] = static_cast<int8_t>(src[i] - src[i] / 2);
    }
    hi.buffer()->freeze();
    lo.buffer()->freeze();
    h->hi = std::move(hi);
    h->lo = std::move(lo);
    h->source = w.buffer();
    h->stamp = stamp;
  }
  return {h->hi, h->lo};
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
