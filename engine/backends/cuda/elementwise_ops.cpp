// Elementwise ops on CUDA (f32): broadcasting binary arithmetic and every unary op of the op table
// (ops/elementwise_math.h), with the table's math. Other dtypes take the CPU fallback.
#include <cstring>
#include <string>

#include "engine/backends/cuda/ops_util.h"
#include "engine/ops/elementwise_params.h"

namespace ms::cuda {
namespace {

template <ew::Op kOp> Status binary(runtime::KernelContext& ctx) {
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
  return launched(ctx,
                  binary_f32(kOp, a->data<float>(), b->data<float>(), y.data<float>(), y.numel(), d, same,
                             cuda_backend(ctx).stream()),
                  "binary");
}

template <ew::Op kOp> Status unary(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  if (x0.dtype() != DType::F32) return cpu_fallback(ctx);
  const ops::ElementwiseParams p = ops::elementwise_params(ctx.node(), kOp);
  float alpha = p.a, beta = p.b;
  if (kOp == ew::Op::Clip && ctx.opset() >= 11) {
    // Opset >= 11: min/max are optional scalar inputs (read on the host: constants or small).
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!ctx.has_input(i)) continue;
      const Tensor& t = ctx.input(i);
      if (t.dtype() != DType::F32 || t.numel() != 1) return cpu_fallback(ctx);
      MS_ASSIGN_OR_RETURN(Tensor h, host_copy(ctx, t));
      const float v = h.data<float>()[0];
      (i == 1 ? alpha : beta) = v;
    }
  }
  Tensor& y = ctx.output(0);
  if (!y.defined()) return cpu_fallback(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:unary");
  return launched(ctx,
                  unary_f32(kOp, x->data<float>(), y.data<float>(), y.numel(), alpha, beta, cuda_backend(ctx).stream()),
                  "unary");
}

}  // namespace

void register_elementwise_ops(runtime::KernelRegistry& r) {
  // Every unary op of the table, and its two-input binary ops (Max and Min are variadic in ONNX:
  // they stay on the CPU fallback).
#define MS_UNARY(Name, ...) r.add(#Name, &unary<ew::Op::Name>);
  MS_EW_UNARY_OPS(MS_UNARY)
#undef MS_UNARY
  r.add("Add", &binary<ew::Op::Add>);
  r.add("Sub", &binary<ew::Op::Sub>);
  r.add("Mul", &binary<ew::Op::Mul>);
  r.add("Div", &binary<ew::Op::Div>);
  r.add("Pow", &binary<ew::Op::Pow>);
  r.add("PRelu", &binary<ew::Op::PRelu>);
}

}  // namespace ms::cuda
