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

Status conv_onednn(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                   const ops::WindowGeometry& g, int64_t group, bool transpose) {
  std::vector<int64_t> pad_r = g.pads_end;
  for (size_t i = 0; i < pad_r.size(); ++i) {
    pad_r[i] -= g.output_padding[i];  // oneDNN has no output_padding: it is less padding at the end
    if (pad_r[i] < 0 || g.pads_begin[i] < 0) return ctx.unsupported_case("negative padding");
  }
  const int64_t m = y.dim(1);
  const memory::data_type dt = to_dnnl(x.dtype());
  const memory::data_type bias_dt = b ? to_dnnl(b->dtype()) : dt;
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  const std::string key = std::string(transpose ? "deconv|" : "conv|") + std::string(dtype_name(x.dtype())) +
                          (b ? std::string(dtype_name(b->dtype())) : "") + "|" + key_of(x.shape()) + "|" + key_of(w.shape()) +
                          "|" + (b ? "b" : "") + "|" + key_of(g.strides) + "|" + key_of(g.dilations) + "|" +
                          key_of(g.pads_begin) + "|" + key_of(pad_r) + "|" + std::to_string(group) + "|" +
                          key_of(y.shape());
  return guard_onednn(ctx, transpose ? "deconvolution" : "convolution", [&]() -> Status {
    auto cp = dnn.cached<ConvPrimitive>(key, [&] {
      const memory::desc src = plain_desc(x.shape(), dt), dst = plain_desc(y.shape(), dt);
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
    Tensor scratch_holder;
    MS_ASSIGN_OR_RETURN(memory scratch, make_scratchpad(ctx, cp->pd.scratchpad_desc(), scratch_holder));
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(x, plain_desc(x.shape(), dt), dnn.engine())},
                                         {DNNL_ARG_WEIGHTS, wmem},
                                         {DNNL_ARG_DST, wrap(y, plain_desc(y.shape(), dt), dnn.engine())},
                                         {DNNL_ARG_SCRATCHPAD, scratch}};
    if (b) args.emplace(DNNL_ARG_BIAS, wrap(*b, plain_desc({m}, bias_dt), dnn.engine()));
    cp->prim.execute(dnn.stream(), args);
    dnn.stream().wait();
    ctx.set_impl(impl_name(cp->pd));
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
