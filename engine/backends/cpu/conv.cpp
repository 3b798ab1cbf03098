// Conv and ConvTranspose kernels: f32 and bf16 (mixed precision: bf16 src and weights, f32
// accumulation inside oneDNN, bf16 dst) with 1-3 spatial axes through oneDNN (plain activations,
// weights in the layout the primitive picks, reordered once and cached), the rest through the
// reference loops in conv_ref.cpp.
#include "engine/backends/cpu/nn_onednn.h"

namespace ms::cpu::nn {
namespace {

using dnnl::memory;

struct ConvPrimitive {
  dnnl::primitive_desc_base pd;
  dnnl::primitive prim;
  memory::desc user_weights;  // the ONNX weights tensor, seen with oneDNN's dims order
};

memory::dims dnnl_dims(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

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
template <class T>
void place_cropped(const Tensor& part, const Tensor* b, Tensor& y) {
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

Status conv_onednn(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                   const ops::WindowGeometry& g, int64_t group, bool transpose) {
  // oneDNN has no output_padding: it is less padding at the end. Where that goes negative (a
  // ConvTranspose as the input gradient of a strided conv) oneDNN computes the smaller output and
  // the rows past it, which no input reaches, are the bias.
  std::vector<int64_t> pad_r = g.pads_end;
  Shape y_dnn = y.shape();
  bool crop = false;
  for (size_t i = 0; i < pad_r.size(); ++i) {
    pad_r[i] -= g.output_padding[i];
    if (g.pads_begin[i] < 0 || (pad_r[i] < 0 && !transpose)) return ctx.unsupported_case("negative padding");
    if (pad_r[i] < 0) {
      y_dnn[i + 2] += pad_r[i];
      pad_r[i] = 0;
      crop = true;
      if (y_dnn[i + 2] <= 0) return ctx.unsupported_case("output padding beyond the output");
    }
  }
  const int64_t m = y.dim(1);
  const memory::data_type dt = to_dnnl(x.dtype());
  const memory::data_type bias_dt = b ? to_dnnl(b->dtype()) : dt;
  // bf16: activations in the layout the primitive prefers (its direct avx512_core_bf16 conv works
  // on blocked layouts; over plain nchw oneDNN takes a gemm-based conv), reordered at the op's
  // boundary, except a forward 1x1 conv: over plain nchw it is a plain matrix product, and the
  // reorders would cost more (ResNet-50 batch-8 mixed-precision training step, 2 cores: its 1x1
  // convs 156-166 ms blocked, 108-114 ms plain; the transposed 1x1 ones gain nothing).
  // f32 keeps the plain layouts (the fused convs take the blocked ones), and takes the blocked
  // ones where the layout pass chose them (activation_layout=blocked on a lone 3x3 ConvTranspose).
  bool pointwise = true;
  for (int64_t k : g.kernel) pointwise = pointwise && k == 1;
  const bool any_layout = (x.dtype() == DType::BF16 && (transpose || !pointwise)) ||
                          ctx.node().attr_string("activation_layout", "") == "blocked";
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  const std::string key = std::string(transpose ? "deconv|" : "conv|") + std::string(dtype_name(x.dtype())) +
                          (b ? std::string(dtype_name(b->dtype())) : "") + "|" + key_of(x.shape()) + "|" + key_of(w.shape()) +
                          "|" + (b ? "b" : "") + "|" + key_of(g.strides) + "|" + key_of(g.dilations) + "|" +
                          key_of(g.pads_begin) + "|" + key_of(pad_r) + "|" + std::to_string(group) + "|" +
                          key_of(y_dnn) + (any_layout ? "|any" : "");
  return guard_onednn(ctx, transpose ? "deconvolution" : "convolution", [&]() -> Status {
    auto cp = dnn.cached<ConvPrimitive>(key, [&] {
      const memory::desc src = any_layout ? memory::desc(dnnl_dims(x.shape()), dt, memory::format_tag::any)
                                          : plain_desc(x.shape(), dt);
      const memory::desc dst = any_layout ? memory::desc(dnnl_dims(y_dnn), dt, memory::format_tag::any)
                                          : plain_desc(y_dnn, dt);
      const memory::desc user_w = user_weights_desc(w, group, transpose, m, dt);
      const memory::desc any_w(user_w.dims(), dt, memory::format_tag::any);
      const memory::desc bias = b ? plain_desc({m}, bias_dt) : memory::desc();
      memory::dims dil = dnnl_dims(g.dilations);
      for (auto& d : dil) d -= 1;  // oneDNN counts the gaps
      const auto prop = dnnl::prop_kind::forward_inference;
      const dnnl::primitive_attr attr = user_scratchpad_attr();
      auto out = std::make_shared<ConvPrimitive>();
      if (transpose) {
        dnnl::deconvolution_forward::desc d(prop, dnnl::algorithm::deconvolution_direct, src, any_w, bias, dst,
                                            dnnl_dims(g.strides), dil, dnnl_dims(g.pads_begin), dnnl_dims(pad_r));
        dnnl::deconvolution_forward::primitive_desc pd(d, attr, dnn.engine());
        out->prim = dnnl::deconvolution_forward(pd);
        out->pd = pd;
      } else {
        dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct, src, any_w, bias, dst,
                                          dnnl_dims(g.strides), dil, dnnl_dims(g.pads_begin), dnnl_dims(pad_r));
        dnnl::convolution_forward::primitive_desc pd(d, attr, dnn.engine());
        out->prim = dnnl::convolution_forward(pd);
        out->pd = pd;
      }
      out->user_weights = user_w;
      return out;
    });
    MS_ASSIGN_OR_RETURN(memory wmem, prepared_weights(ctx, dnn, w, cp->user_weights, cp->pd.weights_desc()));
    Tensor scratch_holder, src_holder, dst_holder, part;
    MS_ASSIGN_OR_RETURN(memory scratch, make_scratchpad(ctx, cp->pd.scratchpad_desc(), scratch_holder));
    Tensor* target = &y;
    if (crop) {
      MS_ASSIGN_OR_RETURN(part, ctx.scratch(y.dtype(), y_dnn));
      target = &part;
    }
    const memory::desc x_plain = plain_desc(x.shape(), dt), y_plain = plain_desc(y_dnn, dt);
    memory x_mem = wrap(x, x_plain, dnn.engine()), y_mem = wrap(*target, y_plain, dnn.engine());
    memory src_mem = x_mem, dst_mem = y_mem;
    if (cp->pd.src_desc() != x_plain) {
      MS_ASSIGN_OR_RETURN(src_mem, make_scratchpad(ctx, cp->pd.src_desc(), src_holder));
      dnnl::reorder(x_mem, src_mem).execute(dnn.stream(), x_mem, src_mem);
    }
    const bool reorder_dst = cp->pd.dst_desc() != y_plain;
    if (reorder_dst) {
      MS_ASSIGN_OR_RETURN(dst_mem, make_scratchpad(ctx, cp->pd.dst_desc(), dst_holder));
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_mem},
                                         {DNNL_ARG_WEIGHTS, wmem},
                                         {DNNL_ARG_DST, dst_mem},
                                         {DNNL_ARG_SCRATCHPAD, scratch}};
    if (b) args.emplace(DNNL_ARG_BIAS, wrap(*b, plain_desc({m}, bias_dt), dnn.engine()));
    cp->prim.execute(dnn.stream(), args);
    if (reorder_dst) dnnl::reorder(dst_mem, y_mem).execute(dnn.stream(), dst_mem, y_mem);
    dnn.stream().wait();
    if (crop) {
      if (y.dtype() == DType::F32) place_cropped<float>(part, b, y);
      else place_cropped<bf16>(part, b, y);
    }
    ctx.set_impl(impl_name(cp->pd) + (crop ? "+crop" : ""));
    return Status::ok();
  });
}

Status conv_kernel(runtime::KernelContext& ctx, bool transpose) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  MS_ASSIGN_OR_RETURN(ops::WindowGeometry g,
                      geometry(ctx, transpose ? ops::WindowKind::ConvTranspose : ops::WindowKind::Conv, x.shape(),
                               Shape(w.shape().begin() + 2, w.shape().end())));
  const int64_t group = ctx.node().attr_int("group", 1);
  if (y.numel() == 0) return Status::ok();
  if (x.numel() == 0) {  // nothing to convolve: the output is the bias (or zero)
    std::memset(y.raw(), 0, y.nbytes());
    if (!b) return Status::ok();
  }
  const bool onednn_type = (x.dtype() == DType::F32 || x.dtype() == DType::BF16) && w.dtype() == x.dtype() &&
                           y.dtype() == x.dtype() && (!b || b->dtype() == DType::F32 || b->dtype() == x.dtype());
  if (onednn_type && g.spatial() <= 3 && x.numel() > 0) {
    Status s = conv_onednn(ctx, x, w, b, y, g, group, transpose);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  return transpose ? conv_transpose_reference(ctx, x, w, b, y, g, group) : conv_reference(ctx, x, w, b, y, g, group);
}

}  // namespace

void register_conv_kernels(runtime::KernelRegistry& r) {
  r.add("Conv", [](runtime::KernelContext& c) { return conv_kernel(c, false); });
  r.add("ConvTranspose", [](runtime::KernelContext& c) { return conv_kernel(c, true); });
}

}  // namespace ms::cpu::nn
