// Elementwise ops on CUDA (f32): broadcasting binary arithmetic and unary activations. Other dtypes
// take the CPU fallback.
#include <cstring>
#include <string>

#include "engine/backends/cuda/ops_util.h"

namespace ms::cuda {
namespace {

template <BinaryOp kOp>
Status binary(runtime::KernelContext& ctx) {
  const Tensor& a0 = ctx.input(0);
  const Tensor& b0 = ctx.input(1);
  if (a0.dtype() != DType::F32 || b0.dtype() != DType::F32) return cpu_fallback(ctx);
  Tensor& y = ctx.output(0);
  if (!y.defined()) return cpu_fallback(ctx);
  StridedDesc d;
  d.rank = static_cast<int>(y.shape().size());
  if (!broadcast_strides(y.shape(), a0.shape(), d.a) || !broadcast_strides(y.shape(), b0.shape(), d.b))
    return cpu_fallback(ctx);
  for (int k = 0; k < d.rank; ++k) d.dims[k] = y.shape()[static_cast<size_t>(k)];
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* a, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* b, in.get(1));
  const bool same = a0.shape() == y.shape() && b0.shape() == y.shape();
  ctx.set_impl(same ? "cuda:binary" : "cuda:binary_broadcast");
  return launched(ctx, binary_f32(kOp, a->data<float>(), b->data<float>(), y.data<float>(), y.numel(), d, same,
                                  cuda_backend(ctx).stream()),
                  "binary");
}

template <UnaryOp kOp>
Status unary(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  if (x0.dtype() != DType::F32) return cpu_fallback(ctx);
  const ir::Node& n = ctx.node();
  float alpha = 0, beta = 0;
  switch (kOp) {
    case UnaryOp::LeakyRelu: alpha = n.attr_float("alpha", 0.01f); break;
    case UnaryOp::Elu: alpha = n.attr_float("alpha", 1.0f); break;
    case UnaryOp::HardSigmoid:
      alpha = n.attr_float("alpha", 0.2f);
      beta = n.attr_float("beta", 0.5f);
      break;
    case UnaryOp::Clip: {
      // Opset >= 11: min/max are optional scalar inputs (read on the host: constants or small).
      alpha = n.attr_float("min", -3.402823466e38f);
      beta = n.attr_float("max", 3.402823466e38f);
      for (size_t i : {size_t{1}, size_t{2}}) {
        if (!ctx.has_input(i)) continue;
        const Tensor& t = ctx.input(i);
        if (t.dtype() != DType::F32 || t.numel() != 1) return cpu_fallback(ctx);
        MS_ASSIGN_OR_RETURN(Tensor h, host_copy(ctx, t));
        const float v = h.data<float>()[0];
        (i == 1 ? alpha : beta) = v;
      }
      break;
    }
    default: break;
  }
  Tensor& y = ctx.output(0);
  if (!y.defined()) return cpu_fallback(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:unary");
  return launched(ctx, unary_f32(kOp, x->data<float>(), y.data<float>(), y.numel(), alpha, beta, cuda_backend(ctx).stream()),
                  "unary");
}

}  // namespace

void register_elementwise_ops(runtime::KernelRegistry& r) {
  r.add("Add", &binary<BinaryOp::Add>);
  r.add("Sub", &binary<BinaryOp::Sub>);
  r.add("Mul", &binary<BinaryOp::Mul>);
  r.add("Div", &binary<BinaryOp::Div>);
  r.add("Pow", &binary<BinaryOp::Pow>);
  r.add("PRelu", &binary<BinaryOp::PRelu>);
  r.add("Relu", &unary<UnaryOp::Relu>);
  r.add("Sigmoid", &unary<UnaryOp::Sigmoid>);
  r.add("Tanh", &unary<UnaryOp::Tanh>);
  r.add("Exp", &unary<UnaryOp::Exp>);
  r.add("Log", &unary<UnaryOp::Log>);
  r.add("Sqrt", &unary<UnaryOp::Sqrt>);
  r.add("Neg", &unary<UnaryOp::Neg>);
  r.add("Abs", &unary<UnaryOp::Abs>);
  r.add("Erf", &unary<UnaryOp::Erf>);
  r.add("Gelu", &unary<UnaryOp::Gelu>);
  r.add("Reciprocal", &unary<UnaryOp::Reciprocal>);
  r.add("Floor", &unary<UnaryOp::Floor>);
  r.add("Ceil", &unary<UnaryOp::Ceil>);
  r.add("Softplus", &unary<UnaryOp::Softplus>);
  r.add("Sin", &unary<UnaryOp::Sin>);
  r.add("Cos", &unary<UnaryOp::Cos>);
  r.add("LeakyRelu", &unary<UnaryOp::LeakyRelu>);
  r.add("Elu", &unary<UnaryOp::Elu>);
  r.add("Clip", &unary<UnaryOp::Clip>);
  r.add("HardSigmoid", &unary<UnaryOp::HardSigmoid>);
  r.add("HardSwish", &unary<UnaryOp::HardSwish>);
  r.add("Sign", &unary<UnaryOp::Sign>);
}

}  // namespace ms::cuda
