#include "engine/backends/cpu/qconv_onednn.h"

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/quant_internal.h"

namespace ms::cpu {
namespace {

using dnnl::memory;

memory::dims dims_of(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

struct QConvPrimitive {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::primitive prim;
  memory::desc user_src, user_dst, user_weights, bias;
};

// The operands, checked: what the int8 primitive can run.
struct QConvArgs {
  const Tensor *x = nullptr, *w = nullptr, *b = nullptr;
  Tensor* y = nullptr;
  float x_scale = 1, y_scale = 1;
  int32_t x_zero = 0, y_zero = 0;
  std::vector<float> out_scales;  // sx * sw[m] / sy, one or one per output channel
  int64_t group = 1;
};

bool scalar_f32(const Tensor& t) { return t.dtype() == DType::F32 && t.numel() == 1; }

Expected<QConvArgs> read_args(runtime::KernelContext& ctx) {
  QConvArgs a;
  a.x = &ctx.input(0);
  a.w = &ctx.input(3);
  a.b = ctx.has_input(8) ? &ctx.input(8) : nullptr;
  const Tensor &sx = ctx.input(1), &zx = ctx.input(2), &sw = ctx.input(4), &sy = ctx.input(6), &zy = ctx.input(7);
  if (a.x->rank() != 4 || a.w->dtype() != DType::I8 || (a.x->dtype() != DType::U8 && a.x->dtype() != DType::I8))
    return ctx.unsupported_case("int8 convolution takes 2-D u8/s8 activations and s8 weights");
  if (!scalar_f32(sx) || !scalar_f32(sy) || zx.numel() != 1 || zy.numel() != 1 || sw.dtype() != DType::F32)
    return ctx.unsupported_case("int8 convolution takes f32 scales and scalar activation zero points");
  if (ctx.has_input(5))
    for (int64_t i = 0; i < ctx.input(5).numel(); ++i)
      if (ctx.input(5).at_int(i) != 0) return ctx.unsupported_case("weights zero points other than 0");
  if (a.b && a.b->dtype() != DType::I32) return ctx.unsupported_case("bias must be int32");
  a.x_scale = sx.data<float>()[0];
  a.y_scale = sy.data<float>()[0];
  a.x_zero = static_cast<int32_t>(zx.at_int(0));
  a.y_zero = static_cast<int32_t>(zy.at_int(0));
  for (int64_t m = 0; m < sw.numel(); ++m) a.out_scales.push_back(a.x_scale * sw.data<float>()[m] / a.y_scale);
  a.group = ctx.node().attr_int("group", 1);
  return a;
}

// ONNX weights [M, C/g, kh, kw] as oneDNN's (g,) O, I, kh, kw: the same bytes.
memory::desc weights_desc(const Tensor& w, int64_t group) {
  if (group == 1) return plain_desc(w.shape(), memory::data_type::s8);
  Shape split{group, w.dim(0) / group};
  split.insert(split.end(), w.shape().begin() + 1, w.shape().end());
  return plain_desc(split, memory::data_type::s8);
}

std::shared_ptr<QConvPrimitive> make_primitive(OneDnnContext& dnn, const QConvArgs& a, const ops::WindowGeometry& g) {
  auto out = std::make_shared<QConvPrimitive>();
  out->user_src = plain_desc(a.x->shape(), to_dnnl(a.x->dtype()));
  out->user_dst = plain_desc(a.y->shape(), to_dnnl(a.y->dtype()));
  out->user_weights = weights_desc(*a.w, a.group);
  if (a.b) out->bias = plain_desc({a.y->dim(1)}, memory::data_type::s32);
  ConvProblem p;
  p.src = memory::desc(dims_of(a.x->shape()), to_dnnl(a.x->dtype()), memory::format_tag::any);
  p.dst = memory::desc(dims_of(a.y->shape()), to_dnnl(a.y->dtype()), memory::format_tag::any);
  p.weights = memory::desc(out->user_weights.dims(), memory::data_type::s8, memory::format_tag::any);
  p.bias = out->bias;
  p.strides = dims_of(g.strides);
  p.dilations = dims_of(g.dilations);
  for (auto& d : p.dilations) d -= 1;
  p.pad_l = dims_of(g.pads_begin);
  p.pad_r = dims_of(g.pads_end);
  dnnl::primitive_attr attr = nn::user_scratchpad_attr();
  // Per output channel: mask over dim 1 of dst (with groups the scales still index the M channels).
  attr.set_output_scales(a.out_scales.size() == 1 ? 0 : 1 << 1, a.out_scales);
  if (a.x_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {a.x_zero});
  if (a.y_zero != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {a.y_zero});
  out->pd = conv_forward_pd(dnn.engine(), p, attr);
  out->prim = dnnl::convolution_forward(out->pd);
  return out;
}

std::string key_of(const QConvArgs& a, const ops::WindowGeometry& g) {
  std::string k = "qconv|" + std::string(dtype_name(a.x->dtype())) + std::string(dtype_name(a.y->dtype())) + "|" +
                  nn::key_of(a.x->shape()) + "|" + nn::key_of(a.w->shape()) + "|" + (a.b ? "b" : "") + "|" +
                  nn::key_of(g.strides) + "|" + nn::key_of(g.dilations) + "|" + nn::key_of(g.pads_begin) + "|" +
                  nn::key_of(g.pads_end) + "|" + std::to_string(a.group) + "|" + std::to_string(a.x_zero) + "|" +
                  std::to_string(a.y_zero) + "|";
  // The scales are part of the primitive (oneDNN 2.x output scales are fixed at creation).
  k.append(reinterpret_cast<const char*>(a.out_scales.data()), a.out_scales.size() * sizeof(float));
  return k;
}

Status run(runtime::KernelContext& ctx, OneDnnContext& dnn, const QConvPrimitive& qp, const QConvArgs& a) {
  Tensor src_holder, dst_holder, scratch_holder;
  memory x_mem = wrap(*a.x, qp.user_src, dnn.engine());
  memory y_mem = wrap(*a.y, qp.user_dst, dnn.engine());
  memory src = x_mem, dst = y_mem;
  if (qp.pd.src_desc() != qp.user_src) {
    MS_ASSIGN_OR_RETURN(src, nn::make_scratchpad(ctx, qp.pd.src_desc(), src_holder));
    dnnl::reorder(x_mem, src).execute(dnn.stream(), x_mem, src);
  }
  const bool reorder_dst = qp.pd.dst_desc() != qp.user_dst;
  if (reorder_dst) {
    MS_ASSIGN_OR_RETURN(dst, nn::make_scratchpad(ctx, qp.pd.dst_desc(), dst_holder));
  }
  MS_ASSIGN_OR_RETURN(memory wmem, nn::prepared_weights(ctx, dnn, *a.w, qp.user_weights, qp.pd.weights_desc()));
  MS_ASSIGN_OR_RETURN(memory scratch, nn::make_scratchpad(ctx, qp.pd.scratchpad_desc(), scratch_holder));
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratch}};
  if (a.b) args.emplace(DNNL_ARG_BIAS, wrap(*a.b, qp.bias, dnn.engine()));
  qp.prim.execute(dnn.stream(), args);
  if (reorder_dst) dnnl::reorder(dst, y_mem).execute(dnn.stream(), dst, y_mem);
  dnn.stream().wait();
  ctx.set_impl("onednn:" + impl_name(qp.pd));
  return Status::ok();
}

}  // namespace

Status qlinear_conv_onednn(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(QConvArgs a, read_args(ctx));
  const DType yt = ctx.input(7).dtype();
  if (a.x->numel() == 0 || (yt != DType::U8 && yt != DType::I8)) return ctx.unsupported_case("empty or not 8-bit");
  if (quant::int8_pairs_may_saturate(*a.w)) return ctx.unsupported_case("weights past 64 without VNNI (inexact pairs)");
  if (a.w->rank() != 4 || a.w->dim(0) % a.group != 0 || a.x->dim(1) != a.w->dim(1) * a.group)
    return ctx.unsupported_case("weights do not match the input channels");  // the reference loops say why
  MS_ASSIGN_OR_RETURN(ops::WindowGeometry g, nn::geometry(ctx, ops::WindowKind::Conv, a.x->shape(),
                                                          Shape(a.w->shape().begin() + 2, a.w->shape().end())));
  for (size_t i = 0; i < g.pads_begin.size(); ++i)
    if (g.pads_begin[i] < 0 || g.pads_end[i] < 0 || g.out[i] <= 0) return ctx.unsupported_case("padding");
  if (a.out_scales.size() != 1 && static_cast<int64_t>(a.out_scales.size()) != a.w->dim(0))
    return ctx.unsupported_case("w_scale per output channel");
  if (a.b && (a.b->rank() != 1 || a.b->numel() != a.w->dim(0))) return ctx.unsupported_case("bias per output channel");
  MS_ASSIGN_OR_RETURN(a.y, ctx.allocate_output(0, yt, Shape{a.x->dim(0), a.w->dim(0), g.out[0], g.out[1]}));
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  return nn::guard_onednn(ctx, "int8 convolution", [&]() -> Status {
    auto qp = dnn.cached<QConvPrimitive>(key_of(a, g), [&] { return make_primitive(dnn, a, g); });
    return run(ctx, dnn, *qp, a);
  });
}

}  // namespace ms::cpu
