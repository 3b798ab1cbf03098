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

// One link of a FusedElementwise chain as the kernel runs it; `dt` follows the chain's Casts. False
// with `skip` for a Cast to f32 (values stay as they are).
Status chain_link(runtime::KernelContext& ctx, const std::string& name, int64_t arity, ChainDesc& d, DType& dt,
                  bool& skip) {
  const int k = d.links;
  if (name == "Cast") {
    const auto to = dtype_from_onnx(static_cast<int>(d.alpha[k]));
    if (!to || (*to != DType::F32 && *to != DType::BF16))
      return ctx.fail("a Cast link converts between f32 and bf16 only");
    dt = *to;
    skip = *to == DType::F32;
    d.kind[k] = kChainRoundBf16;
  } else if (name == "Square") {
    d.kind[k] = kChainSquare;
  } else if (name == "QuantizeDequantizeU8" || name == "QuantizeDequantizeS8") {
    if (dt != DType::F32) return ctx.fail("a QuantizeDequantize link runs on f32 only");
    d.kind[k] = name == "QuantizeDequantizeS8" ? kChainQdqS8 : kChainQdqU8;
  } else if (const ew::OpInfo* op = ew::find(name.c_str()); op && op->arity == arity) {
    d.kind[k] = static_cast<int>(op->op);
  } else {
    return ctx.fail("unknown chain op '" + name + "' of arity " + std::to_string(arity));
  }
  return Status::ok();
}

// FusedElementwise (the fuse-elementwise pass's chains; not the reducing ones) in one kernel: every
// link's math from the op table, as the CPU's loop computes it, one pass over the output.
Status fused_elementwise(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const auto* names = n.attrs.count("chain") ? n.attrs.at("chain").get_if<std::vector<std::string>>() : nullptr;
  const auto arity = n.attr_ints("chain_arity"), side = n.attr_ints("chain_side");
  const auto alphas = n.attr_floats("chain_alphas"), betas = n.attr_floats("chain_betas");
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (!names || arity.size() != names->size() || side.size() != names->size())
    return ctx.fail("chain attributes disagree");
  if (n.attrs.count("reduce") || names->size() > static_cast<size_t>(kMaxChainLinks) || !y.defined() ||
      !is_device_float(x0.dtype()) || !is_device_float(y.dtype()) || x0.shape() != y.shape() ||
      x0.rank() > static_cast<int64_t>(kMaxRank))
    return cpu_fallback(ctx);
  ChainDesc d;
  d.rank = static_cast<int>(x0.rank());
  for (int a = 0; a < d.rank; ++a) d.dims[a] = x0.shape()[static_cast<size_t>(a)];
  DeviceInputs in(ctx);
  DType dt = x0.dtype();
  size_t next = 1;
  for (size_t i = 0; i < names->size(); ++i) {
    d.alpha[d.links] = i < alphas.size() ? alphas[i] : 0.f;
    d.beta[d.links] = i < betas.size() ? betas[i] : 0.f;
    d.side[d.links] = static_cast<int>(side[i]);
    d.operand[d.links] = -1;
    bool skip = false;
    MS_RETURN_IF_ERROR(chain_link(ctx, (*names)[i], arity[i], d, dt, skip));
    if (arity[i] == 2) {
      if (next >= ctx.num_inputs() || d.operands >= kMaxChainOperands) return cpu_fallback(ctx);
      MS_ASSIGN_OR_RETURN(const Tensor* t, in.get(next));
      const int o = d.operands++;
      if (!is_device_float(t->dtype()) || !broadcast_strides(x0.shape(), t->shape(), d.stride[o]))
        return cpu_fallback(ctx);
      d.ptr[o] = t->raw();
      d.type[o] = static_cast<int>(*scalar_type(t->dtype()));
      d.operand[d.links] = o;
      ++next;
    }
    if (!skip) ++d.links;
  }
  if (dt != y.dtype()) return ctx.fail("the output is not the chain's " + std::string(dtype_name(dt)));
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  ctx.set_impl("cuda:elementwise_chain");
  return launched(ctx,
                  elementwise_chain(*scalar_type(x0.dtype()), x->raw(), *scalar_type(y.dtype()), y.raw(), y.numel(), d,
                                    cuda_backend(ctx).stream()),
                  "elementwise chain");
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
  r.add("FusedElementwise", &fused_elementwise, ops::kFusedDomain);
}

}  // namespace ms::cuda
