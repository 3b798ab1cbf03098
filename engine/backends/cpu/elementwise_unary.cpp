// Unary math and logic kernels, their floating-point math from the op table (ops/elementwise_math.h).
// f32 runs the table's loop (elementwise_table_loop.h), or Eigen's for the exact Reciprocal, Floor,
// Ceil and Round; other dtypes a plain loop in the compute type.
#include <cmath>

#include "engine/backends/cpu/elementwise_unary.h"

namespace ms::cpu::elementwise {
namespace {

// Exact table ops with an Eigen array method of the same result, used for f32 (ONNX Round is
// round-half-to-even: rint, not Eigen's round()); faster than the baseline build's library calls
// for floor/ceil/rint. Not Eigen's transcendental functions: sqrt(inf) = NaN and 0 for denormals,
// exp clamped at -88.7 (exp(-inf) = 2.9e-39), log of a denormal = -87.3, tanh up to 6 ulp off; the
// table's loops vectorize those through the vector math library instead.
#define MS_FLOAT_UNARY(Name, array_method)                                       \
  struct Name##Op : TableOp<ew::Op::Name> {                                      \
    using TableOp::TableOp;                                                      \
    template <class A> auto array(const A& x) const { return x.array_method(); } \
  };

MS_FLOAT_UNARY(Reciprocal, inverse)
MS_FLOAT_UNARY(Floor, floor)
MS_FLOAT_UNARY(Ceil, ceil)
MS_FLOAT_UNARY(Round, rint)
#undef MS_FLOAT_UNARY

struct NegOp : UnaryBase<Types::SignedNumeric> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>)
      return wrap_sub(C(0), x);
    else
      return ew::unary<ew::Op::Neg>(x);
  }
  template <class A> auto array(const A& x) const { return -x; }
};

struct AbsOp : UnaryBase<Types::Numeric> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else if constexpr (std::is_integral_v<C>)
      return x < 0 ? wrap_sub(C(0), x) : x;
    else
      return ew::unary<ew::Op::Abs>(x);
  }
  template <class A> auto array(const A& x) const { return x.abs(); }
};

// Erf is defined for integer inputs too (erf(int) rounded back to the type: -1, 0 or 1).
struct ErfOp : UnaryBase<Types::Numeric> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>)
      return convert<C>(std::erf(static_cast<double>(x)));
    else
      return ew::unary<ew::Op::Erf>(x);
  }
};

// Sign keeps NaN (numpy) and gives 0 for 0.
struct SignOp : UnaryBase<Types::Numeric> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return x > 0 ? C(1) : C(0);
    else
      return ew::sign(x);
  }
};

struct NotOp : UnaryBase<Types::Bool> {
  using UnaryBase::UnaryBase;
  bool operator()(bool x) const { return !x; }
};

struct IsNaNOp : UnaryBase<Types::Float, true> {
  using UnaryBase::UnaryBase;
  template <class C> bool operator()(C x) const { return std::isnan(x); }
};

struct IsInfOp {
  static constexpr Types kTypes = Types::Float;
  static constexpr bool kBoolOut = true;
  bool negative, positive;
  explicit IsInfOp(const ir::Node& n)
      : negative(n.attr_int("detect_negative", 1) != 0), positive(n.attr_int("detect_positive", 1) != 0) {}
  template <class C> bool operator()(C x) const {
    return std::isinf(x) && ((x > 0 && positive) || (x < 0 && negative));
  }
};

}  // namespace

void register_unary_kernels(runtime::KernelRegistry& r) {
  r.add("Sqrt", unary_kernel<TableOp<ew::Op::Sqrt>>);
  r.add("Reciprocal", unary_kernel<ReciprocalOp>);
  r.add("Exp", unary_kernel<TableOp<ew::Op::Exp>>);
  r.add("Log", unary_kernel<TableOp<ew::Op::Log>>);
  r.add("Floor", unary_kernel<FloorOp>);
  r.add("Ceil", unary_kernel<CeilOp>);
  r.add("Round", unary_kernel<RoundOp>);
  r.add("Sin", unary_kernel<TableOp<ew::Op::Sin>>);
  r.add("Cos", unary_kernel<TableOp<ew::Op::Cos>>);
  r.add("Tan", unary_kernel<TableOp<ew::Op::Tan>>);
  r.add("Asin", unary_kernel<TableOp<ew::Op::Asin>>);
  r.add("Acos", unary_kernel<TableOp<ew::Op::Acos>>);
  r.add("Atan", unary_kernel<TableOp<ew::Op::Atan>>);
  r.add("Sinh", unary_kernel<TableOp<ew::Op::Sinh>>);
  r.add("Cosh", unary_kernel<TableOp<ew::Op::Cosh>>);
  r.add("Asinh", unary_kernel<TableOp<ew::Op::Asinh>>);
  r.add("Acosh", unary_kernel<TableOp<ew::Op::Acosh>>);
  r.add("Atanh", unary_kernel<TableOp<ew::Op::Atanh>>);
  r.add("Neg", unary_kernel<NegOp>);
  r.add("Abs", unary_kernel<AbsOp>);
  r.add("Erf", unary_kernel<ErfOp>);
  r.add("Sign", unary_kernel<SignOp>);
  r.add("Not", unary_kernel<NotOp>);
  r.add("IsNaN", unary_kernel<IsNaNOp>);
  r.add("IsInf", unary_kernel<IsInfOp>);
}

}  // namespace ms::cpu::elementwise
