// The one oneDNN convolution path (conv_onednn.h): Conv, ConvTranspose and FusedConv.
#include "engine/backends/cpu/conv_onednn.h"

#include <atomic>
#include <cstring>
#include <map>
#include <type_traits>
#include <variant>

#include "engine/backends/cpu/conv_depthwise.h"
#include "engine/backends/cpu/conv_strided.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/winograd.h"

namespace ms::cpu::nn {
namespace {

using dnnl::memory;

struct ConvPrimitive {
  dnnl::primitive_desc_base pd;
  dnnl::primitive prim;
  memory::desc user_weights;    // the ONNX weights tensor, seen with oneDNN's dims order
  size_t loop_tail = SIZE_MAX;  // post-ops from this index on run in our loop after the conv
};

// Index of the residual's Add among the post-ops, or SIZE_MAX.
size_t add_index(const ConvArgs& a) {
  if (a.post)
    for (size_t i = 0; i < a.post->size(); ++i)
      if ((*a.post)[i].kind == ops::PostOp::Kind::Add) return i;
  return SIZE_MAX;
}

// Whether oneDNN sums the residual (placed in dst first), or our loop adds it after the conv.
bool primitive_sums_residual(const ConvPrimitive& cp, const ConvArgs& a) {
  return a.residual && (cp.loop_tail == SIZE_MAX || add_index(a) < cp.loop_tail);
}

// The Winograd implementations of a case (none where oneDNN has no implementation for it): the
// index of each in oneDNN's list of implementations, the scratch bytes it takes, whether it uses
// F(4x4,3x3).
struct WinogradChoice {
  struct Impl {
    int index = 0;
    size_t scratch = 0;
    bool large_tiles = false;
  };
  std::vector<Impl> impls;
};

// What the primitive and the run depend on, derived once per call from the arguments.
struct ConvPlan {
  ConvProblem problem;        // descriptors the primitive is built from
  memory::desc user_weights;  // the weights tensor as it is in memory
  memory::desc x_mem, y_mem;  // the activations as they are in memory (plain or blocked)
  memory::desc bias_mem;
  Shape y_dnn;  // oneDNN's output: y, or its leading corner when cropped
  bool crop = false;
  std::string key;
};

memory::dims dnnl_dims(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

// nChw8c, nChw16c, or (block 0) channels-last.
memory::desc blocked_desc(const Shape& s, memory::data_type dt, int64_t block) {
  const auto tag = block == 0   ? memory::format_tag::nhwc
                   : block == 8 ? memory::format_tag::nChw8c
                                : memory::format_tag::nChw16c;
  return memory::desc(dnnl_dims(s), dt, tag);
}

// Plain desc of the ONNX weights in oneDNN's (g,) O, I, spatial order.
memory::desc user_weights_desc(const Tensor& w, int64_t group, bool transpose, int64_t m, memory::data_type dt) {
  const Shape k(w.shape().begin() + 2, w.shape().end());
  const int64_t taps = numel(k);
  const int64_t c_per_g = transpose ? w.dim(0) / group : w.dim(1);  // input channels per group
  const int64_t m_per_g = m / group;
  memory::dims dims, strides;
  if (group > 1) {
    dims = {group, m_per_g, c_per_g};
    strides = {m_per_g * c_per_g * taps, transpose ? taps : c_per_g * taps, transpose ? m_per_g * taps : taps};
  } else {
    dims = {m_per_g, c_per_g};
    strides = {transpose ? taps : c_per_g * taps, transpose ? m_per_g * taps : taps};
  }
  const Shape ks = contiguous_strides(k);
  dims.insert(dims.end(), k.begin(), k.end());
  strides.insert(strides.end(), ks.begin(), ks.end());
  return memory::desc(dims, dt, strides);
}

// y = the oneDNN output `part` (y's leading corner) with the positions past it set to the bias (or
// zero): a ConvTranspose whose output_padding exceeds its end padding writes rows no input reaches.
template <class T> void place_cropped(const Tensor& part, const Tensor* b, Tensor& y) {
  const int64_t planes = y.dim(0) * y.dim(1), c = y.dim(1);
  const Shape ys(y.shape().begin() + 2, y.shape().end()), ps(part.shape().begin() + 2, part.shape().end());
  const int64_t ny = numel(ys), np = numel(ps);
  const T* src = part.data<T>();
  T* dst = y.data<T>();
  auto fill_of = [&](int64_t plane) {  // the bias of the plane's channel, or zero
    if (!b) return T(0);
    return static_cast<T>(b->dtype() == DType::F32 ? b->data<float>()[plane % c]
                                                   : static_cast<float>(b->data<bf16>()[plane % c]));
  };
  if (ys.size() == 2) {  // rows: copy the part's, fill the rest (no division per element)
    const int64_t h = ys[0], w = ys[1], ph = ps[0], pw = ps[1];
#pragma omp parallel for schedule(static)
    for (int64_t pl = 0; pl < planes; ++pl) {
      const T fill = fill_of(pl);
      for (int64_t i = 0; i < h; ++i) {
        T* row = dst + pl * ny + i * w;
        if (i < ph) {
          std::copy(src + pl * np + i * pw, src + pl * np + i * pw + std::min(w, pw), row);
          std::fill(row + std::min(w, pw), row + w, fill);
        } else {
          std::fill(row, row + w, fill);
        }
      }
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T fill = fill_of(pl);
    for (int64_t i = 0; i < ny; ++i) {
      int64_t rest = i, src_i = 0, stride = 1;
      bool inside = true;
      for (int64_t d = static_cast<int64_t>(ys.size()) - 1; d >= 0; --d) {
        const int64_t pos = rest % ys[static_cast<size_t>(d)];
        rest /= ys[static_cast<size_t>(d)];
        if (pos >= ps[static_cast<size_t>(d)]) inside = false;
        src_i += pos * stride;
        stride *= ps[static_cast<size_t>(d)];
      }
      dst[pl * ny + i] = inside ? src[pl * np + src_i] : fill;
    }
  }
}

// oneDNN has no output_padding: it is less padding at the end. Where that goes negative (a
// ConvTranspose as the input gradient of a strided conv) oneDNN computes the smaller output and
// the rows past it, which no input reaches, are the bias.
Status set_extent(runtime::KernelContext& ctx, const ConvArgs& a, ConvPlan& plan) {
  std::vector<int64_t> pad_r = a.g.pads_end;
  plan.y_dnn = a.y.shape();
  for (size_t i = 0; i < pad_r.size(); ++i) {
    pad_r[i] -= a.g.output_padding[i];
    if (a.g.pads_begin[i] < 0 || (pad_r[i] < 0 && !a.transpose)) return ctx.unsupported_case("negative padding");
    if (pad_r[i] < 0) {
      plan.y_dnn[i + 2] += pad_r[i];
      pad_r[i] = 0;
      plan.crop = true;
      if (plan.y_dnn[i + 2] <= 0) return ctx.unsupported_case("output padding beyond the output");
    }
  }
  plan.problem.pad_r = dnnl_dims(pad_r);
  return Status::ok();
}

// The cache key: everything the primitive is built from.
std::string plan_key(const ConvArgs& a, const ConvPlan& plan) {
  const ConvLayout& l = a.layout;
  std::string key =
      std::string(a.transpose ? "deconv|" : "conv|") + std::string(dtype_name(a.x.dtype())) +
      (a.b ? std::string(dtype_name(a.b->dtype())) : "") + "|" + key_of(a.x.shape()) + "|" + key_of(a.w.shape()) + "|" +
      (a.b ? "b" : "") + "|" + key_of(a.g.strides) + "|" + key_of(a.g.dilations) + "|" + key_of(a.g.pads_begin) + "|" +
      key_of(std::vector<int64_t>(plan.problem.pad_r.begin(), plan.problem.pad_r.end())) + "|" +
      std::to_string(a.group) + "|" + key_of(plan.y_dnn) + (l.preferred ? "|any" : "") + (l.src_blocked ? "|sb" : "") +
      (l.dst_blocked ? "|db" : "") + (l.src_blocked || l.dst_blocked ? "|b" + std::to_string(l.block) : "");
  if (a.post) key += fused::post_ops_key(*a.post);
  return key;
}

Expected<ConvPlan> make_plan(runtime::KernelContext& ctx, const ConvArgs& a) {
  ConvPlan plan;
  MS_RETURN_IF_ERROR(set_extent(ctx, a, plan));
  const int64_t m = a.y.dim(1);
  const memory::data_type dt = to_dnnl(a.x.dtype());
  const ConvLayout& l = a.layout;
  plan.user_weights = user_weights_desc(a.w, a.group, a.transpose, m, dt);
  plan.x_mem = l.src_blocked ? blocked_desc(a.x.shape(), dt, l.block) : plain_desc(a.x.shape(), dt);
  plan.y_mem = l.dst_blocked ? blocked_desc(plan.y_dnn, dt, l.block) : plain_desc(plan.y_dnn, dt);
  if (a.b) plan.bias_mem = plain_desc({m}, to_dnnl(a.b->dtype()));
  ConvProblem& p = plan.problem;
  p.src =
      l.preferred && !l.src_blocked ? memory::desc(dnnl_dims(a.x.shape()), dt, memory::format_tag::any) : plan.x_mem;
  p.dst = l.preferred && !l.dst_blocked ? memory::desc(dnnl_dims(plan.y_dnn), dt, memory::format_tag::any) : plan.y_mem;
  p.weights = memory::desc(plan.user_weights.dims(), dt, memory::format_tag::any);
  p.bias = plan.bias_mem;
  p.alg = a.transpose ? dnnl::algorithm::deconvolution_direct : dnnl::algorithm::convolution_direct;
  p.strides = dnnl_dims(a.g.strides);
  p.dilations = dnnl_dims(a.g.dilations);
  for (auto& d : p.dilations) d -= 1;  // oneDNN counts the gaps
  p.pad_l = dnnl_dims(a.g.pads_begin);
  plan.key = plan_key(a, plan);
  return plan;
}

dnnl::primitive_attr conv_attr(const ConvArgs& a) {
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (a.post && !a.post->empty()) attr.set_post_ops(fused::onednn_post_ops(*a.post, /*sum_residual=*/true));
  return attr;
}

template <class Pd, class Prim>
std::shared_ptr<ConvPrimitive> primitive_of(const Pd& pd, const memory::desc& user_weights) {
  auto out = std::make_shared<ConvPrimitive>();
  out->prim = Prim(pd);
  out->pd = pd;
  out->user_weights = user_weights;
  return out;
}

// A first choice of oneDNN's whose scratch is this large may be passed over for a leaner one.
constexpr size_t kLargeConvScratch = size_t{256} << 10;

// The direct conv. oneDNN's first choice for a strided 1x1 conv copies the strided input for every
// thread (scratch as large as the output's planes times the threads), live beside the largest
// activations of a ResNet's downsampling blocks. Where that scratch does not fit the step's room
// (`lean`), on the preferred layouts, take a later jit implementation without that scratch when one
// takes the same activation layouts. The copy is worth its room: ResNet-50's stride-2 1x1 convs at
// one thread, 2.8 -> 2.0 ms (layers 2 and 3) with it.
dnnl::convolution_forward::primitive_desc direct_pd(dnnl::engine& eng, const ConvProblem& p,
                                                    const dnnl::primitive_attr& attr, bool preferred, bool lean) {
  dnnl::convolution_forward::primitive_desc pd = conv_forward_pd(eng, p, attr);
  const size_t scratch = pd.scratchpad_desc().get_size();
  if (!lean || !preferred || scratch < kLargeConvScratch) return pd;
  auto alt = conv_forward_pd(eng, p, attr, [&](const dnnl::primitive_desc& c) {
    const std::string impl = c.impl_info_str();
    return (impl.rfind("jit", 0) == 0 || impl.rfind("brg", 0) == 0) && c.src_desc() == pd.src_desc() &&
           c.dst_desc() == pd.dst_desc() && c.scratchpad_desc().get_size() * 8 <= scratch;
  });
  return alt ? *alt : pd;
}

// oneDNN's Winograd implementations for the case (F(2x2,3x3) and F(4x4,3x3) where the ISA has them)
// that take the activation layouts fixed at compile time, with their scratch: the transforms', plus
// the reorders at the op's boundary of activations not blocked already.
std::shared_ptr<WinogradChoice> winograd_impls(dnnl::engine& eng, const ConvPlan& plan, const ConvLayout& l,
                                               const dnnl::primitive_attr& attr) {
  auto c = std::make_shared<WinogradChoice>();
  ConvProblem p = plan.problem;
  p.alg = dnnl::algorithm::convolution_winograd;
  try {
    int index = 0;
    conv_forward_pd(eng, p, attr, [&](const dnnl::primitive_desc& pd) {
      const std::string impl = pd.impl_info_str();
      const bool layouts_ok =
          (!l.src_blocked || pd.src_desc() == plan.x_mem) && (!l.dst_blocked || pd.dst_desc() == plan.y_mem);
      const size_t bytes = pd.scratchpad_desc().get_size() + (l.src_blocked ? 0 : pd.src_desc().get_size()) +
                           (l.dst_blocked ? 0 : pd.dst_desc().get_size());
      if (layouts_ok && impl.find("wino") != std::string::npos)
        c->impls.push_back({index, bytes, impl.find("4x3") != std::string::npos});
      ++index;
      return false;  // see them all
    });
  } catch (const dnnl::error&) {
    c->impls.clear();  // no Winograd implementation for this case (ISA, shape or post-ops)
  }
  return c;
}

// Winograd (the conv-algorithm pass's mark at O2): F(2x2,3x3) needs 2.25x fewer multiplications
// than the direct conv, F(4x4,3x3) 4x, but they transform the activations through a scratch of up
// to tens of MiB. Winograd runs only where that scratch fits the room the memory plan leaves at
// this step (ctx.scratch_budget(): CompileOptions::scratch_over_lower_bound, scratch_min_room); otherwise, or where
// oneDNN has no Winograd implementation for the case, null (the direct conv runs).
std::shared_ptr<ConvPrimitive> winograd_primitive(runtime::KernelContext& ctx, OneDnnContext& dnn, const ConvPlan& plan,
                                                  const ConvArgs& a, const dnnl::primitive_attr& attr) {
  auto wino = dnn.cached<WinogradChoice>(plan.key + "|wino",
                                         [&] { return winograd_impls(dnn.engine(), plan, a.layout, attr); });
  // The larger tiles (F(4x4,3x3)) multiply least but need the most scratch, and cover a plane whose
  // sides are not multiples of 4 with padded tiles: they where the output's sides are multiples of 4
  // and at least kOneDnnLargeTilesMinSide and they fit, F(2x2,3x3) elsewhere where it fits, else the first
  // implementation that fits. ResNet-50, one thread: a 64-channel 56x56 conv 0.96 -> 0.81 ms with the
  // large tiles, a 256-channel 14x14 one 1.27 -> 1.53 ms with them (16x16 of padded tiles); in the
  // model at two threads (Intel Xeon) the 128-channel 28x28 convs 0.55 -> 0.46 ms with the small ones.
  const WinogradChoice::Impl* pick = nullptr;
  const auto& od = plan.problem.dst.data.dims;
  const bool large =
      od[2] % 4 == 0 && od[3] % 4 == 0 && od[2] >= kOneDnnLargeTilesMinSide && od[3] >= kOneDnnLargeTilesMinSide;
  for (const auto& im : wino->impls)
    if (im.scratch <= ctx.scratch_budget() && (!pick || (im.large_tiles == large && pick->large_tiles != large)))
      pick = &im;
  if (!pick) return nullptr;
  return dnn.cached<ConvPrimitive>(plan.key + "|wino" + std::to_string(pick->index), [&] {
    ConvProblem p = plan.problem;
    p.alg = dnnl::algorithm::convolution_winograd;
    int index = 0;
    auto pd =
        conv_forward_pd(dnn.engine(), p, attr, [&](const dnnl::primitive_desc&) { return index++ == pick->index; });
    if (!pd) throw dnnl::error(dnnl_unimplemented, "the Winograd implementation chosen is gone");
    return primitive_of<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(*pd, plan.user_weights);
  });
}

bool is_ref(const dnnl::primitive_desc_base& pd) { return std::string(pd.impl_info_str()).rfind("ref", 0) == 0; }
bool is_gemm(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).find("gemm") != std::string::npos;
}

// Where a grouped (depthwise) f32 conv's activations after its last Add include Swish or Sigmoid
// (and it is not one our depthwise kernel takes: conv_depthwise.h, for blocked values in and out),
// the primitive stops before the first of them and our loop (fused::apply_tail) runs the rest over
// the result: oneDNN 2.6's eltwise injector computes e^x and the division at ~0.5 ns a value at one
// thread, our loop at ~0.3 (simd_exp.h). EfficientNet-B0's depthwise 3x3 over [1,144,56,56] with
// its SiLU: ~400 us in one primitive, ~165 + ~140 us so, at one thread. (jit_dw takes swish on
// AVX2 too; at two threads EfficientNet-B0's 16 depthwise convs ran 2.21 ms with it against 2.32-2.43
// with the loop, so the choice is close there.) Other convs keep the activation in the
// primitive, where it is applied while the result is still in cache: EfficientNet-B0's 1x1 convs
// with SiLU (AVX2, sums of per-node minima over 30 runs) 6.19 -> 5.80 ms at two threads, the
// model's kernels 9.34 -> 9.03 ms (1 thread: 16.23 -> 16.06). Null where there is no such tail, the
// conv is not grouped, or the primitive without the tail is oneDNN's reference or gemm conv
// (direct_primitive's cuts apply then), or the result is blocked with padded channels.
std::shared_ptr<ConvPrimitive> without_slow_tail(OneDnnContext& dnn, const ConvPlan& plan, const ConvArgs& a,
                                                 bool lean) {
  if (!a.post || a.x.dtype() != DType::F32 || a.y.dtype() != DType::F32) return nullptr;
  if (plan.problem.weights.dims().size() < 5) return nullptr;  // not grouped: the injector stays
  // The loop runs over the output's values as they lie: a blocked one with padded channels has
  // more, which must stay zero.
  if (a.layout.dst_blocked && a.y.dim(1) % a.layout.block != 0) return nullptr;
  const size_t add = add_index(a);
  size_t cut = SIZE_MAX;
  for (size_t i = add == SIZE_MAX ? 0 : add + 1; i < a.post->size() && cut == SIZE_MAX; ++i) {
    const auto k = (*a.post)[i].kind;
    if (k == ops::PostOp::Kind::Swish || k == ops::PostOp::Kind::Sigmoid) cut = i;
  }
  if (cut == SIZE_MAX) return nullptr;
  dnnl::primitive_attr head = user_scratchpad_attr();
  head.set_post_ops(fused::onednn_post_ops({a.post->begin(), a.post->begin() + static_cast<std::ptrdiff_t>(cut)},
                                           /*sum_residual=*/true));
  auto pd = direct_pd(dnn.engine(), plan.problem, head, a.layout.preferred, lean);
  if (is_ref(pd) || is_gemm(pd)) return nullptr;
  auto cp = primitive_of<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(pd, plan.user_weights);
  cp->loop_tail = cut;
  return cp;
}

// Some post-op lists take oneDNN off its jit and gemm convs onto the reference one: an activation
// before the residual's sum (the sample conv.onnx's Relu then Add ran 55x slower than PyNative), or
// an activation its depthwise convs have no injector for (swish, gelu in 2.6). Then a tail of the
// post-ops is left out of the primitive and runs in our loop over the result (f32): first the
// activations after the last Add, else all of them, the residual included, where the layouts are
// plain. Activations are elementwise, so a blocked result (block | C, as conv-layout keeps it) is fine
// as it is.
std::shared_ptr<ConvPrimitive> direct_primitive(OneDnnContext& dnn, const ConvPlan& plan, const ConvArgs& a,
                                                const dnnl::primitive_attr& attr, bool lean) {
  if (auto cp = without_slow_tail(dnn, plan, a, lean)) return cp;
  auto pd = direct_pd(dnn.engine(), plan.problem, attr, a.layout.preferred, lean);
  auto cp = primitive_of<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(pd, plan.user_weights);
  // oneDNN's gemm-based conv applies eltwise post-ops in a slow pass of its own (LeNet-size convs
  // with a Relu ran 2.8x slower than the conv alone): the loop takes its trailing activations too.
  const bool gemm = is_gemm(pd);
  if (!a.post || a.post->empty() || a.x.dtype() != DType::F32 || !(is_ref(pd) || gemm)) return cp;
  std::vector<size_t> cuts;
  const size_t add = add_index(a);
  if (add != SIZE_MAX && add + 1 < a.post->size()) cuts.push_back(add + 1);
  if (!gemm && (add == SIZE_MAX || (!a.layout.dst_blocked && !a.layout.residual_blocked))) cuts.push_back(0);
  if (gemm && add == SIZE_MAX) cuts.push_back(0);
  for (size_t cut : cuts) {
    dnnl::primitive_attr head = user_scratchpad_attr();
    head.set_post_ops(fused::onednn_post_ops({a.post->begin(), a.post->begin() + static_cast<std::ptrdiff_t>(cut)},
                                             /*sum_residual=*/true));
    auto pd2 = direct_pd(dnn.engine(), plan.problem, head, a.layout.preferred, lean);
    if (is_ref(pd2)) continue;
    cp = primitive_of<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(pd2, plan.user_weights);
    cp->loop_tail = cut;
    break;
  }
  return cp;
}

std::shared_ptr<ConvPrimitive> conv_primitive(runtime::KernelContext& ctx, OneDnnContext& dnn, const ConvPlan& plan,
                                              const ConvArgs& a) {
  const dnnl::primitive_attr attr = conv_attr(a);
  if (a.winograd && a.layout.preferred && !a.transpose)
    if (auto cp = winograd_primitive(ctx, dnn, plan, a, attr)) return cp;
  auto first = dnn.cached<ConvPrimitive>(plan.key, [&] {
    if (a.transpose)
      return primitive_of<dnnl::deconvolution_forward::primitive_desc, dnnl::deconvolution_forward>(
          deconv_forward_pd(dnn.engine(), plan.problem, attr), plan.user_weights);
    return direct_primitive(dnn, plan, a, attr, /*lean=*/false);
  });
  const size_t scratch = first->pd.scratchpad_desc().get_size();
  if (a.transpose || scratch < kLargeConvScratch || scratch <= ctx.scratch_budget()) return first;
  return dnn.cached<ConvPrimitive>(plan.key + "|lean",
                                   [&] { return direct_primitive(dnn, plan, a, attr, /*lean=*/true); });
}

// The first `bytes` bytes at `t` (its layout's: a blocked value with padded channels has more than
// its shape's) in a tensor of its own, of t's type and shape.
Tensor copy_of(const Tensor& t, size_t bytes) {
  Tensor c(Buffer::host(bytes), t.dtype(), t.shape());
  std::memcpy(c.raw(), t.raw(), bytes);
  return c;
}

// A blocked result with padded channels takes the padded bytes: a value the memory plan placed has
// them; one allocated at its shape's size (memory planning off) gets a buffer that has.
void make_room(Tensor& y, size_t bytes) {
  if (y.buffer() && y.buffer()->bytes() >= y.byte_offset() + bytes) return;
  y = Tensor(Buffer::host(bytes), y.dtype(), y.shape());
}

// The sum post-op reads the residual from dst, in dst's layout: copy or reorder it there unless the
// memory plan put the output over it already (in place).
void place_residual(OneDnnContext& dnn, const ConvArgs& a, const ConvPlan& plan, memory& dst_mem) {
  const Tensor* r = a.residual;
  const memory::desc r_desc = a.layout.residual_blocked
                                  ? blocked_desc(r->shape(), plan.x_mem.data_type(), a.layout.block)
                                  : plain_desc(r->shape(), plan.x_mem.data_type());
  Tensor copy;
  if (r->raw() == dst_mem.get_data_handle() && r_desc != dst_mem.get_desc()) {
    copy = copy_of(*r, r_desc.get_size());  // in place but in another layout: reorder from a copy
    r = &copy;
  }
  if (r->raw() == dst_mem.get_data_handle()) return;
  if (r_desc == dst_mem.get_desc()) {
    std::memcpy(dst_mem.get_data_handle(), r->raw(), r_desc.get_size());
    return;
  }
  memory r_mem = wrap(*r, r_desc, dnn.engine());
  dnnl::reorder(r_mem, dst_mem).execute(dnn.stream(), r_mem, dst_mem);
}

// The memory objects, reorders and argument map of a conv's calls, made at the first call and
// pointed at each call's buffers after (making them took ~1 us of allocations a call).
struct ConvCall {
  memory x, y, bias, src, dst, scratch;  // the activations as in memory, the reorders' scratch
  dnnl::reorder to_src, to_y;
  std::unordered_map<int, memory> args;  // the primitive's, weights set per call
};

// A conv node's plan and primitive with the node and tensors they were made from (make_plan,
// conv_primitive): a call of the node that matches them (same_call) gets them without parsing the
// node, building a key or a descriptor.
struct ConvMemo {
  ConvMemo(const ir::Node& node, const ConvArgs& a, uint64_t budget, ConvPlan p, std::shared_ptr<ConvPrimitive> c)
      : op_type(node.op_type),
        domain(node.domain),
        attrs(node.attrs),
        residual(a.residual ? a.residual->shape() : Shape{}),
        r_type(a.residual ? a.residual->dtype() : DType::Undefined),
        x(a.x.shape()),
        w(a.w.shape()),
        y(a.y.shape()),
        x_type(a.x.dtype()),
        w_type(a.w.dtype()),
        b_type(a.b ? a.b->dtype() : DType::Undefined),
        g(a.g),
        group(a.group),
        transpose(a.transpose),
        post(a.post ? *a.post : std::vector<ops::PostOp>{}),
        has_post(a.post != nullptr),
        layout(a.layout),
        winograd(a.winograd),
        scratch_budget(budget),
        prefix(a.impl_prefix),
        plan(std::move(p)),
        cp(std::move(c)),
        impl(prefix + impl_name(cp->pd) + (plan.crop ? "+crop" : "") + (cp->loop_tail != SIZE_MAX ? "+loop-tail" : "")),
        src_desc(cp->pd.src_desc()),
        dst_desc(cp->pd.dst_desc()),
        scratch_desc(cp->pd.scratchpad_desc()),
        reorder_src(src_desc != plan.x_mem),
        reorder_dst(dst_desc != plan.y_mem),
        layouts_ok((!layout.src_blocked || !reorder_src) && (!layout.dst_blocked || !reorder_dst)) {}

  // The call again (conv_onednn_again): the node as it was (a node made later at its address, or
  // edited, differs in its attributes) and the tensors, without deriving anything from the node.
  bool same_call(const ir::Node& node, const ConvTensors& t, uint64_t budget, const char* impl_prefix) const {
    const DType rt = t.residual ? t.residual->dtype() : DType::Undefined;
    return t.x.shape() == x && t.w.shape() == w && t.y.shape() == y && t.x.dtype() == x_type && t.w.dtype() == w_type &&
           (t.b ? t.b->dtype() : DType::Undefined) == b_type && rt == r_type &&
           (!t.residual || t.residual->shape() == residual) && budget == scratch_budget &&
           std::strcmp(impl_prefix, prefix.c_str()) == 0 && node.op_type == op_type && node.domain == domain &&
           same_conv_attrs(node.attrs, attrs);
  }

  std::string op_type, domain;
  std::map<std::string, ir::Attribute> attrs;
  Shape residual;
  DType r_type;
  Shape x, w, y;
  DType x_type, w_type, b_type;
  ops::WindowGeometry g;
  int64_t group;
  bool transpose;
  std::vector<ops::PostOp> post;
  bool has_post;
  ConvLayout layout;
  bool winograd;
  uint64_t scratch_budget;
  std::string prefix;
  ConvPlan plan;
  std::shared_ptr<ConvPrimitive> cp;
  std::string impl;  // what the profiler shows
  // The primitive's descriptors, and how they compare with the activations' (each compare reads
  // ~1 KB of descriptor): made once.
  memory::desc src_desc, dst_desc, scratch_desc;
  size_t src_bytes = src_desc.get_size(), dst_bytes = dst_desc.get_size(), scratch_bytes = scratch_desc.get_size();
  size_t y_bytes = plan.y_mem.get_size();  // the output as it lies in memory
  bool reorder_src, reorder_dst, layouts_ok;
  // One call at a time uses `call`; a call of the node on another thread meanwhile makes its own.
  mutable std::atomic<bool> call_busy{false};
  mutable ConvCall call;
  // Weights reordered to the primitive's layout, kept for a frozen buffer (a compiled graph's
  // constant, which never changes): the lookup by a key of the buffer and the layout's bytes is
  // skipped while the call reads the same buffer at the same offset.
  std::weak_ptr<Buffer> w_source;
  size_t w_offset = 0;
  memory wmem;
  bool w_packed = false;  // wmem is a reordered copy, not the weights' own bytes

  void keep_weights(runtime::KernelContext& ctx, OneDnnContext& dnn, const Tensor& wt) {
    if (!wt.buffer() || !wt.buffer()->frozen()) return;
    auto m = prepared_weights(ctx, dnn, wt, cp->user_weights, cp->pd.weights_desc());
    if (!m) return;
    wmem = *m;
    w_source = wt.buffer();
    w_offset = wt.byte_offset();
    w_packed = cp->user_weights != cp->pd.weights_desc();
  }
  Expected<memory> weights(runtime::KernelContext& ctx, OneDnnContext& dnn, const Tensor& wt) const {
    if (wmem && wt.buffer() && wt.byte_offset() == w_offset && w_source.lock() == wt.buffer()) {
      if (w_packed) ctx.keeps_packed_copy_of(wt);
      return wmem;
    }
    return prepared_weights(ctx, dnn, wt, cp->user_weights, cp->pd.weights_desc());
  }
};

// The memo's ConvCall while this call holds it, or one of the call's own.
class ConvCallLease {
 public:
  explicit ConvCallLease(const ConvMemo& m) : m_(m), mine_(!m.call_busy.exchange(true, std::memory_order_acquire)) {}
  ~ConvCallLease() {
    if (mine_) m_.call_busy.store(false, std::memory_order_release);
  }
  ConvCallLease(const ConvCallLease&) = delete;
  ConvCallLease& operator=(const ConvCallLease&) = delete;
  ConvCall& call() { return mine_ ? m_.call : own_; }

 private:
  const ConvMemo& m_;
  bool mine_;
  ConvCall own_;
};

// Points `m` at `p`, making it (with layout `d`) the first time: a set_data_handle where a memory
// object was an allocation or two.
void point(memory& m, const memory::desc& d, dnnl::engine& eng, void* p) {
  if (m)
    m.set_data_handle(p);
  else
    m = memory(d, eng, p);
}

// Scratch of `bytes` from the step's room (ctx.scratch), held by `holder` until the primitive ran.
Status take_scratch(runtime::KernelContext& ctx, size_t bytes, Tensor& holder) {
  MS_ASSIGN_OR_RETURN(holder, ctx.scratch(DType::U8, {std::max<int64_t>(static_cast<int64_t>(bytes), 1)}));
  return Status::ok();
}

// Buffers of one run; the holders keep scratch bytes alive until the primitive ran.
struct ConvRun {
  Tensor part, src_holder, dst_holder, scratch_holder;
};

// Source, destination (with the residual placed) and their reorders at the op's boundary.
Status stage(runtime::KernelContext& ctx, OneDnnContext& dnn, const ConvMemo& m, const ConvArgs& a, ConvRun& run,
             ConvCall& cc) {
  const ConvPlan& plan = m.plan;
  if (!m.layouts_ok)
    return Status::error(ErrorCode::Internal,
                         "the convolution primitive does not take the blocked layout chosen at compile time");
  Tensor* target = &a.y;
  if (m.layout.dst_blocked) make_room(a.y, m.y_bytes);
  if (plan.crop) {
    MS_ASSIGN_OR_RETURN(run.part, ctx.scratch(a.y.dtype(), plan.y_dnn));
    target = &run.part;
  }
  point(cc.x, plan.x_mem, dnn.engine(), a.x.raw());
  point(cc.y, plan.y_mem, dnn.engine(), target->raw());
  if (m.reorder_src) {
    MS_RETURN_IF_ERROR(take_scratch(ctx, m.src_bytes, run.src_holder));
    point(cc.src, m.src_desc, dnn.engine(), run.src_holder.raw());
    if (!cc.to_src) cc.to_src = dnnl::reorder(cc.x, cc.src);
    cc.to_src.execute(dnn.stream(), cc.x, cc.src);
  }
  if (m.reorder_dst) {
    MS_RETURN_IF_ERROR(take_scratch(ctx, m.dst_bytes, run.dst_holder));
    point(cc.dst, m.dst_desc, dnn.engine(), run.dst_holder.raw());
  }
  if (primitive_sums_residual(*m.cp, a)) place_residual(dnn, a, plan, m.reorder_dst ? cc.dst : cc.y);
  return Status::ok();
}

Status run_conv(runtime::KernelContext& ctx, OneDnnContext& dnn, const ConvMemo& m, const ConvArgs& a) {
  const ConvPrimitive& cp = *m.cp;
  const ConvPlan& plan = m.plan;
  ConvCallLease lease(m);
  ConvCall& cc = lease.call();
  ConvRun run;
  // The loop adds the residual after the conv: keep it when the conv writes over it (in place).
  Tensor residual;
  if (a.residual && !primitive_sums_residual(cp, a))
    residual = a.residual->raw() == a.y.raw() ? a.residual->clone() : *a.residual;
  MS_RETURN_IF_ERROR(stage(ctx, dnn, m, a, run, cc));
  MS_ASSIGN_OR_RETURN(memory wmem, m.weights(ctx, dnn, a.w));
  MS_RETURN_IF_ERROR(take_scratch(ctx, m.scratch_bytes, run.scratch_holder));
  point(cc.scratch, m.scratch_desc, dnn.engine(), run.scratch_holder.raw());
  if (a.b) point(cc.bias, plan.bias_mem, dnn.engine(), a.b->raw());
  if (cc.args.empty()) {
    cc.args = {{DNNL_ARG_SRC, m.reorder_src ? cc.src : cc.x},
               {DNNL_ARG_DST, m.reorder_dst ? cc.dst : cc.y},
               {DNNL_ARG_SCRATCHPAD, cc.scratch}};
    if (a.b) cc.args.emplace(DNNL_ARG_BIAS, cc.bias);
  }
  cc.args[DNNL_ARG_WEIGHTS] = wmem;
  cp.prim.execute(dnn.stream(), cc.args);
  if (m.reorder_dst) {
    if (!cc.to_y) cc.to_y = dnnl::reorder(cc.dst, cc.y);
    cc.to_y.execute(dnn.stream(), cc.dst, cc.y);
  }
  dnn.stream().wait();
  if (plan.crop) {
    if (a.y.dtype() == DType::F32)
      place_cropped<float>(run.part, a.b, a.y);
    else
      place_cropped<bf16>(run.part, a.b, a.y);
  }
  if (cp.loop_tail != SIZE_MAX) {  // set only with f32 post-ops
    const std::vector<ops::PostOp> tail(a.post->begin() + static_cast<std::ptrdiff_t>(cp.loop_tail), a.post->end());
    fused::apply_tail(a.y.data<float>(), a.y.numel(), nullptr, 1, residual.defined() ? residual.data<float>() : nullptr,
                      tail);
  }
  ctx.set_impl(m.impl);
  return Status::ok();
}

// Our Winograd (winograd.h) for a conv the conv-algorithm pass marked, where oneDNN has no Winograd
// for the case (below AVX-512) or ours is the faster (winograd_preferred_over_onednn), and the
// transforms' scratch, with the reorders of activations not
// blocked already, fits the step's room; nullopt otherwise (the direct conv runs). A plain output
// is computed blocked, reordered, and the post-ops run over it after. It keeps no memo, so every
// call comes through here (~1 us of key and lookups against a conv of a millisecond or more).
std::optional<Status> own_winograd(runtime::KernelContext& ctx, OneDnnContext& dnn, const ConvPlan& plan,
                                   const ConvArgs& a) {
  const ConvLayout& l = a.layout;
  if (!a.winograd || a.transpose || a.group != 1 || plan.crop || !l.preferred || l.block == 0 ||
      a.g.pads_begin.size() != 2 || (a.residual && l.residual_blocked != l.dst_blocked))
    return std::nullopt;
  for (size_t i = 0; i < 2; ++i)
    if (a.g.strides[i] != 1 || a.g.dilations[i] != 1) return std::nullopt;
  Tensor src = a.x, dst = a.y;  // blocked: the activations, or scratch made below
  const WinogradConvArgs w{.x = src,
                           .w = a.w,
                           .b = a.b,
                           .residual = l.dst_blocked ? a.residual : nullptr,
                           .y = dst,
                           .pad_top = a.g.pads_begin[0],
                           .pad_left = a.g.pads_begin[1],
                           .block = l.block,
                           .post = l.dst_blocked ? a.post : nullptr};
  const size_t reorders = (l.src_blocked ? 0 : a.x.nbytes()) + (l.dst_blocked ? 0 : a.y.nbytes());
  // bf16: blocked on both sides, on AVX-512-BF16 without AMX (whose direct bf16 convs are faster).
  const bool bf16 = a.x.dtype() == DType::BF16;
  const bool bf16_products =
      bf16 && l.src_blocked && l.dst_blocked && cpu_backend(ctx).native_bf16() && !cpu_backend(ctx).bf16_matrix_units();
  if (!winograd_conv_applies(w, bf16_products) || winograd_scratch_bytes(w) + reorders > ctx.scratch_budget())
    return std::nullopt;
  const dnnl::primitive_attr attr = conv_attr(a);
  auto onednn =
      dnn.cached<WinogradChoice>(plan.key + "|wino", [&] { return winograd_impls(dnn.engine(), plan, l, attr); });
  if (!onednn->impls.empty() && !winograd_preferred_over_onednn(w)) return std::nullopt;
  dnn.set_memo(&ctx.node(), nullptr);  // an earlier direct conv's memo must not take the next call
  auto reorder = [&](const Tensor& from, bool to_blocked, Tensor& to) {
    const memory::desc plain = plain_desc(from.shape()),
                       blocked = blocked_desc(from.shape(), memory::data_type::f32, l.block);
    memory m_from = wrap(from, to_blocked ? plain : blocked, dnn.engine()),
           m_to = wrap(to, to_blocked ? blocked : plain, dnn.engine());
    dnnl::reorder(m_from, m_to).execute(dnn.stream(), m_from, m_to);
    dnn.stream().wait();
  };
  if (!l.src_blocked) {
    MS_ASSIGN_OR_RETURN(src, ctx.scratch(DType::F32, a.x.shape()));
    reorder(a.x, true, src);
  }
  if (!l.dst_blocked) {
    MS_ASSIGN_OR_RETURN(dst, ctx.scratch(DType::F32, a.y.shape()));
  }
  Tensor residual;  // plain, read after the reorder writes the output: a copy where it lies under it
  if (!l.dst_blocked && a.residual) residual = a.residual->raw() == a.y.raw() ? a.residual->clone() : *a.residual;
  MS_RETURN_IF_ERROR(winograd_conv(ctx, w, a.impl_prefix));
  if (!l.dst_blocked) {
    const std::string impl = ctx.impl();
    reorder(dst, false, a.y);
    if (a.post && !a.post->empty())
      fused::apply_tail(a.y.data<float>(), a.y.numel(), nullptr, 1,
                        residual.defined() ? residual.data<float>() : nullptr, *a.post);
    ctx.set_impl(impl);
  }
  return Status::ok();
}

const char* conv_what(bool transpose, bool fused) {
  return transpose ? "deconvolution" : fused ? "fused convolution" : "convolution";
}

}  // namespace

bool same_conv_attrs(const std::map<std::string, ir::Attribute>& o, const std::map<std::string, ir::Attribute>& attrs) {
  if (o.size() != attrs.size()) return false;
  for (auto i = o.begin(), j = attrs.begin(); i != o.end(); ++i, ++j) {
    if (i->first != j->first) return false;
    const auto& u = i->second.storage();
    const auto& v = j->second.storage();
    if (u.index() != v.index()) return false;
    const bool same = std::visit(
        [&](const auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float> || std::is_same_v<T, std::string> ||
                        std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<float>> ||
                        std::is_same_v<T, std::vector<std::string>>)
            return a == std::get<T>(v);
          else
            return false;
        },
        u);
    if (!same) return false;
  }
  return true;
}

bool onednn_conv_types(const Tensor& x, const Tensor& w, const Tensor* b, const Tensor& y) {
  return (x.dtype() == DType::F32 || x.dtype() == DType::BF16) && w.dtype() == x.dtype() && y.dtype() == x.dtype() &&
         (!b || b->dtype() == DType::F32 || b->dtype() == x.dtype());
}

Status conv_onednn(runtime::KernelContext& ctx, const ConvArgs& a) {
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  return guard_onednn(ctx, conv_what(a.transpose, a.post != nullptr), [&]() -> Status {
    // The kernels took the node's memo (conv_onednn_again) where it matched the call: a fresh one.
    if (depthwise_applies(a)) return depthwise_conv(ctx, a);
    MS_ASSIGN_OR_RETURN(ConvPlan plan, make_plan(ctx, a));
    // Ours refusing at run time (the packed sgemm failing) leaves the conv to oneDNN's direct one.
    if (std::optional<Status> own = plan.crop ? std::nullopt : direct_conv3x3(ctx, a);
        own && own->code() != ErrorCode::Unsupported) {
      dnn.set_memo(&ctx.node(), nullptr);  // an earlier oneDNN conv's memo must not take the next call
      return *own;
    }
    if (std::optional<Status> own = own_winograd(ctx, dnn, plan, a); own && own->code() != ErrorCode::Unsupported)
      return *own;
    std::shared_ptr<ConvPrimitive> cp = conv_primitive(ctx, dnn, plan, a);
    auto memo = std::make_shared<ConvMemo>(ctx.node(), a, ctx.scratch_budget(), std::move(plan), std::move(cp));
    memo->keep_weights(ctx, dnn, a.w);
    dnn.set_memo(&ctx.node(), memo);
    return run_conv(ctx, dnn, *memo, a);
  });
}

std::optional<Status> conv_onednn_again(runtime::KernelContext& ctx, const ConvTensors& t, const char* impl_prefix) {
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  auto memo = std::static_pointer_cast<const ConvMemo>(dnn.memo(&ctx.node()));
  if (!memo || !memo->same_call(ctx.node(), t, ctx.scratch_budget(), impl_prefix)) return std::nullopt;
  const ConvArgs a{.x = t.x,
                   .w = t.w,
                   .b = t.b,
                   .residual = t.residual,
                   .y = t.y,
                   .g = memo->g,
                   .group = memo->group,
                   .transpose = memo->transpose,
                   .post = memo->has_post ? &memo->post : nullptr,
                   .layout = memo->layout,
                   .winograd = memo->winograd,
                   .impl_prefix = memo->prefix.c_str()};
  return guard_onednn(ctx, conv_what(a.transpose, a.post != nullptr),
                      [&]() -> Status { return run_conv(ctx, dnn, *memo, a); });
}

}  // namespace ms::cpu::nn
