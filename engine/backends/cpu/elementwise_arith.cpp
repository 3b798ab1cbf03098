// Arithmetic binary kernels: Add Sub Mul Div Pow Mod BitShift PRelu (numpy broadcasting).
#include <cmath>

#include "engine/backends/cpu/elementwise_binary.h"
#include "engine/ops/elementwise_math.h"

namespace ms::cpu::elementwise {
namespace {

struct NumericOp {
  static constexpr Types kTypes = Types::Numeric;
  static constexpr bool kBoolOut = false;
  static constexpr bool kMixed = false;
  explicit NumericOp(const ir::Node&) {}
};

struct AddOp : NumericOp {
  using NumericOp::NumericOp;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return wrap_add(a, b);
    else
      return ew::binary<ew::Op::Add>(a, b);
  }
  template <class X, class Y> auto array(const X& a, const Y& b) const { return a + b; }
};
struct SubOp : NumericOp {
  using NumericOp::NumericOp;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return wrap_sub(a, b);
    else
      return ew::binary<ew::Op::Sub>(a, b);
  }
  template <class X, class Y> auto array(const X& a, const Y& b) const { return a - b; }
};
struct MulOp : NumericOp {
  using NumericOp::NumericOp;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return wrap_mul(a, b);
    else
      return ew::binary<ew::Op::Mul>(a, b);
  }
  template <class X, class Y> auto array(const X& a, const Y& b) const { return a * b; }
};
// Integer division truncates (C semantics, as onnxruntime); x/0 gives 0 and MIN/-1 wraps instead
// of trapping.
struct DivOp : NumericOp {
  using NumericOp::NumericOp;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>)
        if (b == -1) return wrap_sub(C(0), a);
      return static_cast<C>(a / b);
    } else {
      return ew::binary<ew::Op::Div>(a, b);
    }
  }
  template <class X, class Y> auto array(const X& a, const Y& b) const { return a / b; }
};

// Mod: fmod=1 -> C fmod (sign of the dividend); fmod=0 -> Python/numpy mod (sign of the divisor).
struct ModOp : NumericOp {
  bool fmod;
  explicit ModOp(const ir::Node& n) : NumericOp(n), fmod(n.attr_int("fmod", 0) != 0) {}
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;
        C r = static_cast<C>(a % b);
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
        return r;
      } else {
        return static_cast<C>(a % b);
      }
    } else {
      C r = std::fmod(a, b);
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  }
};

// Pow: base and exponent dtypes may differ; the result has the base's type.
template <class I> I int_pow(I base, int64_t e) {
  if (e < 0) {
    // Only |base| == 1 has a non-zero integer result.
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<I>)
      if (base == -1) return (e % 2 == 0) ? 1 : -1;
    return 0;
  }
  I r = 1;
  while (e > 0) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return r;
}

struct PowOp : NumericOp {
  static constexpr bool kMixed = true;
  using NumericOp::NumericOp;
  template <class C, class D> C operator()(C a, D b) const {
    if constexpr (std::is_integral_v<C> && std::is_integral_v<D>) {
      if constexpr (std::is_unsigned_v<D>) {
        return int_pow(a, b > static_cast<D>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(b));
      } else {
        return int_pow(a, static_cast<int64_t>(b));
      }
    } else if constexpr (std::is_integral_v<C>) {
      return convert<C>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    } else if constexpr (std::is_same_v<C, D>) {
      return ew::binary<ew::Op::Pow>(a, b);
    } else {
      return static_cast<C>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
  // No Eigen form: std::pow keeps results identical across the fast and broadcast paths.
};

// BitShift (the reference's rules): LEFT shifts the unsigned representation; RIGHT is arithmetic
// for signed types (the sign bit fills in). A shift amount outside [0, bit width) gives 0, or -1 for
// a RIGHT shift of a negative value.
struct BitShiftOp {
  static constexpr Types kTypes = Types::Integer;
  static constexpr bool kBoolOut = false;
  static constexpr bool kMixed = false;
  bool left;
  explicit BitShiftOp(const ir::Node& n) : left(n.attr_string("direction", "") == "LEFT") {}
  template <class C> C operator()(C a, C b) const {
    using U = wide_unsigned_t<C>;
    constexpr int bits = static_cast<int>(sizeof(C) * 8);
    bool out_of_range = static_cast<uint64_t>(b) >= static_cast<uint64_t>(bits);
    if constexpr (std::is_signed_v<C>) out_of_range = out_of_range || b < 0;
    if (out_of_range) {
      if constexpr (std::is_signed_v<C>)
        if (!left && a < 0) return C(-1);
      return 0;
    }
    if constexpr (std::is_signed_v<C>)
      if (!left) return static_cast<C>(a >> b);  // arithmetic shift (C++20)
    const U ua = static_cast<U>(static_cast<std::make_unsigned_t<C>>(a));
    return static_cast<C>(left ? (ua << b) : (ua >> b));
  }
};

// PRelu: x < 0 ? slope * x : x, slope broadcast to x.
struct PReluOp {
  static constexpr Types kTypes = Types::SignedNumeric;
  static constexpr bool kBoolOut = false;
  static constexpr bool kMixed = false;
  explicit PReluOp(const ir::Node&) {}
  template <class C> C operator()(C x, C slope) const {
    if constexpr (std::is_integral_v<C>)
      return x < C(0) ? wrap_mul(slope, x) : x;
    else
      return ew::binary<ew::Op::PRelu>(x, slope);
  }
  template <class X, class Y> auto array(const X& x, const Y& slope) const { return (x < 0.0f).select(x * slope, x); }
};

}  // namespace

void register_arith_kernels(runtime::KernelRegistry& r) {
  r.add("Add", binary_kernel<AddOp>);
  r.add("Sub", binary_kernel<SubOp>);
  r.add("Mul", binary_kernel<MulOp>);
  r.add("Div", binary_kernel<DivOp>);
  r.add("Mod", binary_kernel<ModOp>);
  r.add("Pow", binary_kernel<PowOp>);
  r.add("BitShift", binary_kernel<BitShiftOp>);
  r.add("PRelu", binary_kernel<PReluOp>);
}

}  // namespace ms::cpu::elementwise
