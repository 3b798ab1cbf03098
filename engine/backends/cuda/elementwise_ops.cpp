// Elementwise ops on CUDA (f32, f16, bf16): broadcasting binary arithmetic and every unary op of the
// op table (ops/elementwise_math.h), with the table's math. Other dtypes take the CPU fallback.
#include <cstring>
#include <string>

#include "engine/backends/cuda/ops_util.h"
#include "engine/ops/elementwise_params.h"

namespace ms::cuda {
namespace {

template <ew::Op kOp> Status binary(runtime::KernelContext& ctx) {
  const Tensor& a0 = ctx.input(0);
  const Tensor& b0 = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (!is_device_float(a0.dtype()) || b0.dtype() != a0.dtype() || !y.defined() || y.dtype() != a0.dtype())
    return cpu_fallback(ctx);
  StridedDesc d;
  if (!broadcast_desc(y.shape(), a0.shape(), b0.shape(), d)) return cpu_fallback(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* a, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* b, in.get(1));
  const bool same = a0.shape() == y.shape() && b0.shape() == y.shape();
  ctx.set_impl(same ? "cuda:binary" : "cuda:binary_broadcast");
  return launched(ctx,
                  cuda::binary(kOp, *scalar_type(y.dtype()), a->raw(), b->raw(), y.raw(), y.numel(), d, same,
                               cuda_backend(ctx).stream()),
                  "binary");
}

template <ew::Op kOp> Status unary(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  if (!is_device_float(x0.dtype())) return cpu_fallback(ctx);
  const ops::ElementwiseParams p = ops::elementwise_params(ctx.node(), kOp);
  float alpha = p.a, beta = p.b;
  if (kOp == ew::Op::Clip && ctx.opset() >= 11) {
    // Opset >= 11: min/max are optional scalar inputs (read on the host: constants or small).
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!ctx.has_input(i)) continue;
      const Tensor& t = ctx.input(i);
      if (t.dtype() != x0.dtype() || t.numel() != 1) return cpu_fallback(ctx);
      MS_ASSIGN_OR_RETURN(Tensor h, host_copy(ctx, t));
      const float v = static_cast<float>(h.at_double(0));
      (i == 1 ? alpha : beta) = v;
    }
  }
  Tensor& y = ctx.output(0);
  if (!y.defined() || y.dtype() != x0.dtype()) return cpu_fallback(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:unary");
  return launched(
      ctx,
      cuda::unary(kOp, *scalar_type(y.dtype()), x->raw(), y.raw(), y.numel(), alpha, beta, cuda_backend(ctx).stream()),
      "unary");
}

// Max, Min and Sum are variadic: two inputs run the binary kernel, one a copy; more stay on the CPU.
template <ew::Op kOp> Status variadic(runtime::KernelContext& ctx) {
  if (ctx.num_inputs() == 2 && ctx.has_input(0) && ctx.has_input(1)) return binary<kOp>(ctx);
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (ctx.num_inputs() != 1 || !is_device_float(x0.dtype()) || !y.defined()) return cpu_fallback(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:copy");
  if (y.raw() != x->raw() && x->nbytes())
    MS_CUDA_CHECK(cudaMemcpyAsync(y.raw(), x->raw(), x->nbytes(), cudaMemcpyDefault, cuda_backend(ctx).stream()));
  return Status::ok();
}

}  // namespace

void register_elementwise_ops(runtime::KernelRegistry& r) {
  // Every unary op of the table, and its binary ops (Max, Min and Sum variadic).
#define MS_UNARY(Name, ...) r.add(#Name, &unary<ew::Op::Name>);
  MS_EW_UNARY_OPS(MS_UNARY)
#undef MS_UNARY
  r.add("Add", &binary<ew::Op::Add>);
  r.add("Sub", &binary<ew::Op::Sub>);
  r.add("Mul", &binary<ew::Op::Mul>);
  r.add("Div", &binary<ew::Op::Div>);
  r.add("Pow", &binary<ew::Op::Pow>);
  r.add("PRelu", &binary<ew::Op::PRelu>);
  r.add("Max", &variadic<ew::Op::Max>);
  r.add("Min", &variadic<ew::Op::Min>);
  r.add("Sum", &variadic<ew::Op::Add>);
}

}  // namespace ms::cuda
