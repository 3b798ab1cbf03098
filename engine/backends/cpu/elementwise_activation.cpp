// Activation kernels: the Relu family, Sigmoid/Tanh, Shrink and Clip. Attributes are read once per
// call from the node (ONNX defaults).
#include <cmath>
#include <limits>

#include "engine/backends/cpu/elementwise_unary.h"

namespace ms::cpu::elementwise {
namespace {

struct ReluOp : UnaryBase<Types::SignedNumeric> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const { return x > C(0) ? x : C(0); }
  template <class A> auto array(const A& x) const { return x.max(0.0f); }
};

struct LeakyReluOp {
  static constexpr Types kTypes = Types::Float;
  static constexpr bool kBoolOut = false;
  float alpha;
  explicit LeakyReluOp(const ir::Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <class C> C operator()(C x) const { return x < C(0) ? static_cast<C>(alpha) * x : x; }
  template <class A> auto array(const A& x) const { return (x < 0.0f).select(x * alpha, x); }
};

struct EluOp {
  static constexpr Types kTypes = Types::Float;
  static constexpr bool kBoolOut = false;
  float alpha;
  explicit EluOp(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class C> C operator()(C x) const { return x < C(0) ? static_cast<C>(alpha) * std::expm1(x) : x; }
};

struct SeluOp {
  static constexpr Types kTypes = Types::Float;
  static constexpr bool kBoolOut = false;
  float alpha, gamma;
  explicit SeluOp(const ir::Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)), gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <class C> C operator()(C x) const {
    return x <= C(0) ? static_cast<C>(gamma) * (static_cast<C>(alpha) * std::exp(x) - static_cast<C>(alpha))
                     : static_cast<C>(gamma) * x;
  }
};

struct CeluOp {
  static constexpr Types kTypes = Types::Float;
  static constexpr bool kBoolOut = false;
  float alpha;
  explicit CeluOp(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class C> C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    return std::max(C(0), x) + std::min(C(0), a * std::expm1(x / a));
  }
};

struct HardSigmoidOp {
  static constexpr Types kTypes = Types::Float;
  static constexpr bool kBoolOut = false;
  float alpha, beta;
  explicit HardSigmoidOp(const ir::Node& n) : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <class C> C operator()(C x) const {
    return std::max(C(0), std::min(C(1), static_cast<C>(alpha) * x + static_cast<C>(beta)));
  }
  template <class A> auto array(const A& x) const { return (x * alpha + beta).max(0.0f).min(1.0f); }
};

// x * HardSigmoid(x) with alpha 1/6, beta 0.5.
struct HardSwishOp : UnaryBase<Types::Float> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
  }
};

// log(1 + exp(x)) without overflow for large x.
struct SoftplusOp : UnaryBase<Types::Float> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};

struct SoftsignOp : UnaryBase<Types::Float> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const { return x / (C(1) + std::fabs(x)); }
  template <class A> auto array(const A& x) const { return x / (x.abs() + 1.0f); }
};

struct ThresholdedReluOp {
  static constexpr Types kTypes = Types::Float;
  static constexpr bool kBoolOut = false;
  float alpha;
  explicit ThresholdedReluOp(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class C> C operator()(C x) const { return x > static_cast<C>(alpha) ? x : C(0); }
};

// Shrink works on integers too: compare and shift in double, convert back.
struct ShrinkOp {
  static constexpr Types kTypes = Types::Numeric;
  static constexpr bool kBoolOut = false;
  float lambd, bias;
  explicit ShrinkOp(const ir::Node& n) : lambd(n.attr_float("lambd", 0.5f)), bias(n.attr_float("bias", 0.0f)) {}
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      const double d = static_cast<double>(x);
      const double r = d < -lambd ? d + bias : (d > lambd ? d - bias : 0.0);
      return convert<C>(r);
    } else {
      const C l = static_cast<C>(lambd), b = static_cast<C>(bias);
      return x < -l ? x + b : (x > l ? x - b : C(0));
    }
  }
};

// Stable in both tails.
struct SigmoidOp : UnaryBase<Types::Float> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    const C e = std::exp(x);
    return e / (C(1) + e);
  }
  template <class A> auto array(const A& x) const { return x.logistic(); }
};

struct TanhOp : UnaryBase<Types::Float> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const { return std::tanh(x); }
  template <class A> auto array(const A& x) const { return x.tanh(); }
};

// Clip: bounds from attributes (opset < 11) or optional scalar inputs; NaN passes through.
template <class C>
struct ClipOp {
  static constexpr Types kTypes = Types::Numeric;
  static constexpr bool kBoolOut = false;
  C lo, hi;
  C operator()(C x) const { return x < lo ? lo : (x > hi ? hi : x); }
};

template <class T>
Status clip_typed(runtime::KernelContext& ctx) {
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
  r.add("LeakyRelu", unary_kernel<LeakyReluOp>);
  r.add("Elu", unary_kernel<EluOp>);
  r.add("Selu", unary_kernel<SeluOp>);
  r.add("Celu", unary_kernel<CeluOp>);
  r.add("HardSigmoid", unary_kernel<HardSigmoidOp>);
  r.add("HardSwish", unary_kernel<HardSwishOp>);
  r.add("Softplus", unary_kernel<SoftplusOp>);
  r.add("Softsign", unary_kernel<SoftsignOp>);
  r.add("ThresholdedRelu", unary_kernel<ThresholdedReluOp>);
  r.add("Shrink", unary_kernel<ShrinkOp>);
  r.add("Sigmoid", unary_kernel<SigmoidOp>);
  r.add("Tanh", unary_kernel<TanhOp>);
  r.add("Clip", clip_kernel);
}

}  // namespace ms::cpu::elementwise
