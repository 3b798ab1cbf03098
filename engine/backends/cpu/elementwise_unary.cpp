// Unary math and logic kernels. f32 goes through Eigen's vectorized functions where Eigen has one
// that matches the C library closely; everything else is a plain loop in the compute type.
#include <cmath>

#include "engine/backends/cpu/elementwise_unary.h"

namespace ms::cpu::elementwise {
namespace {

// A float-only op with a scalar function and an Eigen array method of the same meaning.
#define MS_FLOAT_UNARY(Name, scalar_expr, array_method)                           \
  struct Name : UnaryBase<Types::Float> {                                          \
    using UnaryBase::UnaryBase;                                                    \
    template <class C> C operator()(C x) const { return scalar_expr; }             \
    template <class A> auto array(const A& x) const { return x.array_method(); }   \
  };

MS_FLOAT_UNARY(SqrtOp, std::sqrt(x), sqrt)
MS_FLOAT_UNARY(ReciprocalOp, C(1) / x, inverse)
MS_FLOAT_UNARY(ExpOp, std::exp(x), exp)
MS_FLOAT_UNARY(LogOp, std::log(x), log)
MS_FLOAT_UNARY(FloorOp, std::floor(x), floor)
MS_FLOAT_UNARY(CeilOp, std::ceil(x), ceil)
// ONNX Round is round-half-to-even: rint in the default rounding mode (Eigen's round() is not).
MS_FLOAT_UNARY(RoundOp, std::rint(x), rint)
MS_FLOAT_UNARY(SinOp, std::sin(x), sin)
MS_FLOAT_UNARY(CosOp, std::cos(x), cos)
#undef MS_FLOAT_UNARY

// Float-only ops where a plain loop over the C library is used for every dtype.
#define MS_FLOAT_UNARY_SCALAR(Name, scalar_expr)                                   \
  struct Name : UnaryBase<Types::Float> {                                          \
    using UnaryBase::UnaryBase;                                                    \
    template <class C> C operator()(C x) const { return scalar_expr; }             \
  };

MS_FLOAT_UNARY_SCALAR(TanOp, std::tan(x))
MS_FLOAT_UNARY_SCALAR(AsinOp, std::asin(x))
MS_FLOAT_UNARY_SCALAR(AcosOp, std::acos(x))
MS_FLOAT_UNARY_SCALAR(AtanOp, std::atan(x))
MS_FLOAT_UNARY_SCALAR(SinhOp, std::sinh(x))
MS_FLOAT_UNARY_SCALAR(CoshOp, std::cosh(x))
MS_FLOAT_UNARY_SCALAR(AsinhOp, std::asinh(x))
MS_FLOAT_UNARY_SCALAR(AcoshOp, std::acosh(x))
MS_FLOAT_UNARY_SCALAR(AtanhOp, std::atanh(x))
#undef MS_FLOAT_UNARY_SCALAR

struct NegOp : UnaryBase<Types::SignedNumeric> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const { return wrap_sub(C(0), x); }
  template <class A> auto array(const A& x) const { return -x; }
};

struct AbsOp : UnaryBase<Types::Numeric> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_integral_v<C>) return x < 0 ? wrap_sub(C(0), x) : x;
    else return std::fabs(x);
  }
  template <class A> auto array(const A& x) const { return x.abs(); }
};

// Erf is defined for integer inputs too (erf(int) rounded back to the type: -1, 0 or 1).
struct ErfOp : UnaryBase<Types::Numeric> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return convert<C>(std::erf(static_cast<double>(x)));
    else return std::erf(x);
  }
};

// Sign keeps NaN (numpy) and gives 0 for 0.
struct SignOp : UnaryBase<Types::Numeric> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x > 0 ? C(1) : C(0);
    else return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);
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
  r.add("Sqrt", unary_kernel<SqrtOp>);
  r.add("Reciprocal", unary_kernel<ReciprocalOp>);
  r.add("Exp", unary_kernel<ExpOp>);
  r.add("Log", unary_kernel<LogOp>);
  r.add("Floor", unary_kernel<FloorOp>);
  r.add("Ceil", unary_kernel<CeilOp>);
  r.add("Round", unary_kernel<RoundOp>);
  r.add("Sin", unary_kernel<SinOp>);
  r.add("Cos", unary_kernel<CosOp>);
  r.add("Tan", unary_kernel<TanOp>);
  r.add("Asin", unary_kernel<AsinOp>);
  r.add("Acos", unary_kernel<AcosOp>);
  r.add("Atan", unary_kernel<AtanOp>);
  r.add("Sinh", unary_kernel<SinhOp>);
  r.add("Cosh", unary_kernel<CoshOp>);
  r.add("Asinh", unary_kernel<AsinhOp>);
  r.add("Acosh", unary_kernel<AcoshOp>);
  r.add("Atanh", unary_kernel<AtanhOp>);
  r.add("Neg", unary_kernel<NegOp>);
  r.add("Abs", unary_kernel<AbsOp>);
  r.add("Erf", unary_kernel<ErfOp>);
  r.add("Sign", unary_kernel<SignOp>);
  r.add("Not", unary_kernel<NotOp>);
  r.add("IsNaN", unary_kernel<IsNaNOp>);
  r.add("IsInf", unary_kernel<IsInfOp>);
}

}  // namespace ms::cpu::elementwise
