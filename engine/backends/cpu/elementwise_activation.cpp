// Activation kernels: the Relu family, Sigmoid/Tanh, Gelu, Shrink and Clip, their math from the op
// table (ops/elementwise_math.h). Attributes are read once per call from the node (ONNX defaults).
#include <cmath>
#include <limits>

#include "engine/backends/cpu/elementwise_unary.h"

namespace ms::cpu::elementwise {
namespace {

struct ReluOp : TableOp<ew::Op::Relu, Types::SignedNumeric> {
  using TableOp::TableOp;
  template <class C> C operator()(C x) const { return ew::relu(x); }
};

// Shrink works on integers too: compare and shift in double, convert back.
struct ShrinkOp : TableOp<ew::Op::Shrink, Types::Numeric> {
  using TableOp::TableOp;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>)
      return convert<C>(ew::shrink(static_cast<double>(x), double{a}, double{b}));
    else
      return ew::shrink(x, static_cast<C>(a), static_cast<C>(b));
  }
};

// Clip: bounds from attributes (opset < 11) or optional scalar inputs; NaN passes through.
template <class C> struct ClipOp {
  static constexpr Types kTypes = Types::Numeric;
  static constexpr bool kBoolOut = false;
  C lo, hi;
  C operator()(C x) const { return ew::clip(x, lo, hi); }
};

template <class T> Status clip_typed(runtime::KernelContext& ctx) {
  using C = compute_t<T>;
  // Unbounded by default: -inf/+inf for floats so infinities pass through unchanged.
  using L = std::numeric_limits<C>;
  ClipOp<C> op{L::has_infinity ? -L::infinity() : L::lowest(), L::has_infinity ? L::infinity() : L::max()};
  if (ctx.opset() < 11) {
    if (ctx.node().has_attr("min")) op.lo = convert<C>(ctx.node().attr_float("min", 0.0f));
    if (ctx.node().has_attr("max")) op.hi = convert<C>(ctx.node().attr_float("max", 0.0f));
  } else {
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& b = ctx.input(i);
      if (b.dtype() != ctx.input(0).dtype()) return dtype_mismatch(ctx, i, ctx.input(0).dtype());
      if (b.numel() < 1) return ctx.fail(std::string(i == 1 ? "min" : "max") + " is empty");
      (i == 1 ? op.lo : op.hi) = static_cast<C>(b.data<T>()[0]);
    }
  }
  const Tensor& x = ctx.input(0);
  Tensor* y = nullptr;
  MS_RETURN_IF_ERROR(prepare_output(ctx, 0, x.dtype(), x.shape(), y));
  const T* xp = x.data<T>();
  T* yp = y->data<T>();
  const bool par = parallel_chunks(x.numel(), [&](int64_t b, int64_t e) { unary_range(op, xp + b, yp + b, e - b); });
  ctx.set_impl(par ? "loop:omp" : "loop");
  return Status::ok();
}

Status clip_kernel(runtime::KernelContext& ctx) {
  Status st;
  bool ran = false;
  visit_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (accepts<T>(Types::Numeric)) {
      st = clip_typed<T>(ctx);
      ran = true;
    }
  });
  if (!ran) return unsupported_dtype(ctx, ctx.input(0).dtype());
  return st;
}

}  // namespace

void register_activation_kernels(runtime::KernelRegistry& r) {
  r.add("Relu", unary_kernel<ReluOp>);
  r.add("LeakyRelu", unary_kernel<TableOp<ew::Op::LeakyRelu>>);
  r.add("Elu", unary_kernel<TableOp<ew::Op::Elu>>);
  r.add("Selu", unary_kernel<TableOp<ew::Op::Selu>>);
  r.add("Celu", unary_kernel<TableOp<ew::Op::Celu>>);
  r.add("HardSigmoid", unary_kernel<TableOp<ew::Op::HardSigmoid>>);
  r.add("HardSwish", unary_kernel<TableOp<ew::Op::HardSwish>>);
  r.add("Softplus", unary_kernel<TableOp<ew::Op::Softplus>>);
  r.add("Softsign", unary_kernel<TableOp<ew::Op::Softsign>>);
  r.add("ThresholdedRelu", unary_kernel<TableOp<ew::Op::ThresholdedRelu>>);
  r.add("Shrink", unary_kernel<ShrinkOp>);
  r.add("Sigmoid", unary_kernel<TableOp<ew::Op::Sigmoid>>);
  r.add("Tanh", unary_kernel<TableOp<ew::Op::Tanh>>);
  r.add("Gelu", unary_kernel<TableOp<ew::Op::Gelu>>);
  r.add("Swish", unary_kernel<TableOp<ew::Op::Swish>>);
  r.add("Mish", unary_kernel<TableOp<ew::Op::Mish>>);
  r.add("Clip", clip_kernel);
}

}  // namespace ms::cpu::elementwise
