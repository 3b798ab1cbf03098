// The elementwise ops' scalar math, written once: the eager CPU loops (backends/cpu/elementwise_*),
// the fused loop (backends/cpu/fused_elementwise.cpp) and the CUDA kernels (backends/cuda/
// elementwise.cu) all call these functions, so the three give the same values at the edges (NaN
// passes through, infinities do not turn into NaN, nothing overflows where the result is finite).
//
// Plain C++17 that includes nothing of the engine: nvcc compiles it into the .cu files, which never
// see the C++20 engine headers. Every function is host and device code there, and always inlined on
// the host so the loops that call it still vectorize.
//
// The table (kOps) is the one list of these ops: ONNX name, enum, arity, whether the math is a
// transcendental function (results of vectorized forms may differ in the last bits), and the float
// attributes an op reads, with their ONNX defaults, as `a` and `b` of apply_unary. Ops that also
// take integers (Relu, Neg, Abs, Sign, Erf, Shrink, Clip, the arithmetic) have their integer forms
// in the CPU kernels; the table is their floating-point math.
#pragma once

#include <cmath>
#include <cstdint>

// MS_HD: host and device code under nvcc. MS_EW_INLINE: that, always inlined.
#if defined(__CUDACC__)
#define MS_HD __host__ __device__
#define MS_EW_INLINE MS_HD __forceinline__
#elif defined(__GNUC__)
#define MS_HD
#define MS_EW_INLINE inline __attribute__((always_inline))
#else
#define MS_HD
#define MS_EW_INLINE inline
#endif

namespace ms::ew {

// X(Name, arity, transcendental, attr_a, default_a, attr_b, default_b): one line per op, unary ops
// first. An attribute name of nullptr: the op reads none there. Gelu's `approximate` is a string
// ("none" | "tanh"), passed as a = 0 | 1; Clip's bounds are inputs from opset 11 on (attributes
// min/max before).
#define MS_EW_UNARY_OPS(X)                                                                   \
  X(Relu, 1, false, nullptr, 0.f, nullptr, 0.f)                                              \
  X(LeakyRelu, 1, false, "alpha", 0.01f, nullptr, 0.f)                                       \
  X(Elu, 1, true, "alpha", 1.f, nullptr, 0.f)                                                \
  X(Selu, 1, true, "alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f) \
  X(Celu, 1, true, "alpha", 1.f, nullptr, 0.f)                                               \
  X(HardSigmoid, 1, false, "alpha", 0.2f, "beta", 0.5f)                                      \
  X(HardSwish, 1, false, nullptr, 0.f, nullptr, 0.f)                                         \
  X(Softplus, 1, true, nullptr, 0.f, nullptr, 0.f)                                           \
  X(Softsign, 1, false, nullptr, 0.f, nullptr, 0.f)                                          \
  X(ThresholdedRelu, 1, false, "alpha", 1.f, nullptr, 0.f)                                   \
  X(Shrink, 1, false, "lambd", 0.5f, "bias", 0.f)                                            \
  X(Sigmoid, 1, true, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Tanh, 1, true, nullptr, 0.f, nullptr, 0.f)                                               \
  X(Gelu, 1, true, "approximate", 0.f, nullptr, 0.f)                                         \
  X(Swish, 1, true, "alpha", 1.f, nullptr, 0.f)                                              \
  X(Mish, 1, true, nullptr, 0.f, nullptr, 0.f)                                               \
  X(Clip, 1, false, "min", -INFINITY, "max", INFINITY)                                       \
  X(Exp, 1, true, nullptr, 0.f, nullptr, 0.f)                                                \
  X(Log, 1, true, nullptr, 0.f, nullptr, 0.f)                                                \
  X(Sqrt, 1, false, nullptr, 0.f, nullptr, 0.f)                                              \
  X(Reciprocal, 1, false, nullptr, 0.f, nullptr, 0.f)                                        \
  X(Neg, 1, false, nullptr, 0.f, nullptr, 0.f)                                               \
  X(Abs, 1, false, nullptr, 0.f, nullptr, 0.f)                                               \
  X(Sign, 1, false, nullptr, 0.f, nullptr, 0.f)                                              \
  X(Floor, 1, false, nullptr, 0.f, nullptr, 0.f)                                             \
  X(Ceil, 1, false, nullptr, 0.f, nullptr, 0.f)                                              \
  X(Round, 1, false, nullptr, 0.f, nullptr, 0.f)                                             \
  X(Erf, 1, true, nullptr, 0.f, nullptr, 0.f)                                                \
  X(Sin, 1, true, nullptr, 0.f, nullptr, 0.f)                                                \
  X(Cos, 1, true, nullptr, 0.f, nullptr, 0.f)                                                \
  X(Tan, 1, true, nullptr, 0.f, nullptr, 0.f)                                                \
  X(Asin, 1, true, nullptr, 0.f, nullptr, 0.f)                                               \
  X(Acos, 1, true, nullptr, 0.f, nullptr, 0.f)                                               \
  X(Atan, 1, true, nullptr, 0.f, nullptr, 0.f)                                               \
  X(Sinh, 1, true, nullptr, 0.f, nullptr, 0.f)                                               \
  X(Cosh, 1, true, nullptr, 0.f, nullptr, 0.f)                                               \
  X(Asinh, 1, true, nullptr, 0.f, nullptr, 0.f)                                              \
  X(Acosh, 1, true, nullptr, 0.f, nullptr, 0.f)                                              \
  X(Atanh, 1, true, nullptr, 0.f, nullptr, 0.f)
#define MS_EW_BINARY_OPS(X)                    \
  X(Add, 2, false, nullptr, 0.f, nullptr, 0.f) \
  X(Sub, 2, false, nullptr, 0.f, nullptr, 0.f) \
  X(Mul, 2, false, nullptr, 0.f, nullptr, 0.f) \
  X(Div, 2, false, nullptr, 0.f, nullptr, 0.f) \
  X(Pow, 2, true, nullptr, 0.f, nullptr, 0.f)  \
  X(Max, 2, false, nullptr, 0.f, nullptr, 0.f) \
  X(Min, 2, false, nullptr, 0.f, nullptr, 0.f) \
  X(PRelu, 2, false, nullptr, 0.f, nullptr, 0.f)
#define MS_EW_OPS(X) MS_EW_UNARY_OPS(X) MS_EW_BINARY_OPS(X)

enum class Op : uint8_t {
#define MS_EW_ENUM(Name, ...) Name,
  MS_EW_OPS(MS_EW_ENUM)
#undef MS_EW_ENUM
};

struct OpInfo {
  const char* name;
  Op op;
  int arity;            // 1: f(x, a, b); 2: f(x, y)
  bool transcendental;  // a libm function (or built from one): vectorized forms may differ in the last bits
  const char* attr_a;   // the float attribute passed as `a`, or nullptr
  float default_a;
  const char* attr_b;  // the float attribute passed as `b`, or nullptr
  float default_b;
};

inline constexpr OpInfo kOps[] = {
#define MS_EW_INFO(Name, arity, trans, an, ad, bn, bd) {#Name, Op::Name, arity, trans, an, ad, bn, bd},
    MS_EW_OPS(MS_EW_INFO)
#undef MS_EW_INFO
};
inline constexpr int kNumOps = static_cast<int>(sizeof(kOps) / sizeof(kOps[0]));

constexpr const OpInfo& info(Op op) { return kOps[static_cast<int>(op)]; }
constexpr const char* name(Op op) { return info(op).name; }

namespace detail {
constexpr bool same(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}
}  // namespace detail

// The op named `name` (an ONNX op type), or nullptr.
constexpr const OpInfo* find(const char* name) {
  for (const OpInfo& i : kOps)
    if (detail::same(i.name, name)) return &i;
  return nullptr;
}

static_assert(find("Gelu")->op == Op::Gelu && info(Op::PRelu).op == Op::PRelu && find("Nope") == nullptr,
              "the table is in the enum's order");

// ---- scalar math. T is float or double. ----

template <class T> MS_EW_INLINE T inf() { return static_cast<T>(INFINITY); }

// 0 > x ? 0 : x: NaN passes (and -0 stays), one max instruction on x86.
template <class T> MS_EW_INLINE T relu(T x) { return T(0) > x ? T(0) : x; }
template <class T> MS_EW_INLINE T leaky_relu(T x, T alpha) { return x < T(0) ? alpha * x : x; }
// Ops that combine a C library call with a condition are written as core(x) (the call, made
// unconditionally) and finish(x, core) (the selects): GCC 12 does not vectorize a loop that has both
// a call and a condition, so the CPU loops run the two as separate passes over a tile (core through
// the vector math library), while the scalar form is finish(x, core(x)).

// Elu: expm1 keeps the relative accuracy near 0 that exp(x) - 1 loses.
template <class T> MS_EW_INLINE T elu_core(T x) { return std::expm1(x); }
template <class T> MS_EW_INLINE T elu_finish(T x, T c, T alpha) { return x < T(0) ? alpha * c : x; }
template <class T> MS_EW_INLINE T elu(T x, T alpha) { return elu_finish(x, elu_core(x), alpha); }
// Selu: gamma * alpha * expm1(x) for x <= 0, gamma * x above.
template <class T> MS_EW_INLINE T selu_finish(T x, T c, T alpha, T gamma) {
  return x <= T(0) ? gamma * (alpha * c) : gamma * x;
}
template <class T> MS_EW_INLINE T selu(T x, T alpha, T gamma) { return selu_finish(x, elu_core(x), alpha, gamma); }
// Celu: max(0, x) + min(0, alpha * expm1(x / alpha)) with NaN passing through.
template <class T> MS_EW_INLINE T celu_core(T x, T alpha) { return std::expm1(x / alpha); }
template <class T> MS_EW_INLINE T celu_finish(T x, T c, T alpha) {
  const T e = alpha * c;
  return (x > T(0) ? x : T(0)) + (e < T(0) ? e : T(0)) + (x != x ? x : T(0));
}
template <class T> MS_EW_INLINE T celu(T x, T alpha) { return celu_finish(x, celu_core(x, alpha), alpha); }
// Clamp to [0, 1]; NaN passes.
template <class T> MS_EW_INLINE T clamp01(T v) { return v < T(0) ? T(0) : (v > T(1) ? T(1) : v); }
template <class T> MS_EW_INLINE T hard_sigmoid(T x, T alpha, T beta) { return clamp01(alpha * x + beta); }
// x * HardSigmoid(x) (alpha 1/6, beta 0.5), with x clamped at -3 first (0 below), so -inf gives
// -0, not -inf * 0. The forms here select values and then compute, rather than compute under a
// condition: GCC does not vectorize a conditional product (it may trap, under -ftrapping-math).
template <class T> MS_EW_INLINE T hard_swish(T x) {
  const T c = x < T(-3) ? T(-3) : x;
  return c * clamp01(c / T(6) + T(0.5));
}
// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): exp never overflows.
template <class T> MS_EW_INLINE T softplus_core(T x) { return std::log1p(std::exp(-std::fabs(x))); }
template <class T> MS_EW_INLINE T softplus_finish(T x, T c) { return (x > T(0) ? x : T(0)) + c; }
template <class T> MS_EW_INLINE T softplus(T x) { return softplus_finish(x, softplus_core(x)); }
template <class T> MS_EW_INLINE T max_finite();
template <> MS_EW_INLINE float max_finite<float>() { return 3.40282346638528859812e+38f; }
template <> MS_EW_INLINE double max_finite<double>() { return 1.79769313486231570815e+308; }
// x / (1 + |x|) over x clamped to the finite range: +-1 at +-inf (inf / inf would be NaN).
template <class T> MS_EW_INLINE T softsign(T x) {
  const T c = x < -max_finite<T>() ? -max_finite<T>() : (x > max_finite<T>() ? max_finite<T>() : x);
  return c / (T(1) + std::fabs(c));
}
template <class T> MS_EW_INLINE T thresholded_relu(T x, T alpha) { return x > alpha ? x : T(0); }
template <class T> MS_EW_INLINE T shrink(T x, T lambd, T bias) {
  return x < -lambd ? x + bias : (x > lambd ? x - bias : T(0));
}
// Sigmoid, stable in both tails: exp of -|x| never overflows, and e / (1 + e) keeps tiny results
// for x < 0.
template <class T> MS_EW_INLINE T sigmoid_core(T x) { return std::exp(-std::fabs(x)); }
template <class T> MS_EW_INLINE T sigmoid_finish(T x, T e) { return (x >= T(0) ? T(1) : e) / (T(1) + e); }
template <class T> MS_EW_INLINE T sigmoid(T x) { return sigmoid_finish(x, sigmoid_core(x)); }
template <class T> MS_EW_INLINE T tanh(T x) { return std::tanh(x); }
// Gelu: 0.5 x (1 + erf(x / sqrt 2)) as 0.5 x erfc(-x / sqrt 2): no cancellation in the negative tail.
template <class T> MS_EW_INLINE T gelu_erf_core(T x) { return std::erfc(x * T(-0.70710678118654752440)); }
template <class T> MS_EW_INLINE T gelu_erf_finish(T x, T c) {
  return x == -inf<T>() ? T(-0.0) : T(0.5) * x * c;  // not -inf * erfc(inf) = -inf * 0
}
template <class T> MS_EW_INLINE T gelu_erf(T x) { return gelu_erf_finish(x, gelu_erf_core(x)); }
// approximate="tanh": 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): no
// cancellation either.
template <class T> MS_EW_INLINE T gelu_tanh_arg(T x) {
  return T(1.5957691216057307118) * (x + T(0.044715) * x * x * x);  // 2u
}
template <class T> MS_EW_INLINE T gelu_tanh_core(T x) { return sigmoid_core(gelu_tanh_arg(x)); }
template <class T> MS_EW_INLINE T gelu_tanh_finish(T x, T c) {
  return x == -inf<T>() ? T(-0.0) : x * sigmoid_finish(gelu_tanh_arg(x), c);
}
template <class T> MS_EW_INLINE T gelu_tanh(T x) { return gelu_tanh_finish(x, gelu_tanh_core(x)); }
template <class T> MS_EW_INLINE T gelu(T x, T approximate) { return approximate != T(0) ? gelu_tanh(x) : gelu_erf(x); }
// Swish (opset 24; SiLU at alpha 1): x sigmoid(alpha x), the sigmoid in its stable form.
template <class T> MS_EW_INLINE T swish(T x, T alpha) { return x * sigmoid(alpha * x); }
// QuantizeLinear then DequantizeLinear with one scale s and zero point z onto the 8-bit grid
// [lo, hi], in float as those kernels compute them (the same bits): x / s, clamped where it
// saturates anyway (NaN to the low end), rounded half to even (adding and subtracting 1.5 * 2^23),
// plus z, saturated; then (q - z) * s. A fused elementwise chain's link for a QDQ model's
// fake-quantization between two float ops.
template <class T> MS_EW_INLINE T quantize_dequantize(T x, T s, T z, T lo, T hi) {
  T t = x / s;
  const T flo = lo - z - T(1), fhi = hi - z + T(1);
  t = t >= flo ? t : flo;
  t = t <= fhi ? t : fhi;
  const T magic = T(12582912);
  T q = ((t + magic) - magic) + z;
  q = q < lo ? lo : q;
  q = q > hi ? hi : q;
  return (q - z) * s;
}
// numpy's minimum(maximum(x, lo), hi): hi wins when lo > hi. NaN passes (x < lo and y > hi are false).
template <class T> MS_EW_INLINE T clip(T x, T lo, T hi) {
  const T y = x < lo ? lo : x;
  return y > hi ? hi : y;
}
// 0 and NaN stay.
template <class T> MS_EW_INLINE T sign(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x); }
// numpy maximum/minimum: NaN if either is, else std::max/std::min (the first of equal zeros).
template <class T> MS_EW_INLINE T max(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
template <class T> MS_EW_INLINE T min(T a, T b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
template <class T> MS_EW_INLINE T prelu(T x, T slope) { return x < T(0) ? slope * x : x; }

// f(x, a, b) of a unary op; an op of `kOp` known at compile time folds to its one function.
template <class T> MS_EW_INLINE T apply_unary(Op op, T x, T a = T(0), T b = T(0)) {
  switch (op) {
    case Op::Relu: return relu(x);
    case Op::LeakyRelu: return leaky_relu(x, a);
    case Op::Elu: return elu(x, a);
    case Op::Selu: return selu(x, a, b);
    case Op::Celu: return celu(x, a);
    case Op::HardSigmoid: return hard_sigmoid(x, a, b);
    case Op::HardSwish: return hard_swish(x);
    case Op::Softplus: return softplus(x);
    case Op::Softsign: return softsign(x);
    case Op::ThresholdedRelu: return thresholded_relu(x, a);
    case Op::Shrink: return shrink(x, a, b);
    case Op::Sigmoid: return sigmoid(x);
    case Op::Tanh: return ew::tanh(x);
    case Op::Gelu: return gelu(x, a);
    case Op::Swish: return swish(x, a);
    case Op::Mish: return x * ew::tanh(softplus(x));
    case Op::Clip: return clip(x, a, b);
    case Op::Exp: return std::exp(x);
    case Op::Log: return std::log(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Reciprocal: return T(1) / x;
    case Op::Neg: return -x;
    case Op::Abs: return std::fabs(x);
    case Op::Sign: return sign(x);
    case Op::Floor: return std::floor(x);
    case Op::Ceil: return std::ceil(x);
    case Op::Round: return std::rint(x);  // round half to even (the default rounding mode)
    case Op::Erf: return std::erf(x);
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Tan: return std::tan(x);
    case Op::Asin: return std::asin(x);
    case Op::Acos: return std::acos(x);
    case Op::Atan: return std::atan(x);
    case Op::Sinh: return std::sinh(x);
    case Op::Cosh: return std::cosh(x);
    case Op::Asinh: return std::asinh(x);
    case Op::Acosh: return std::acosh(x);
    case Op::Atanh: return std::atanh(x);
    default: return x;
  }
}

// Whether `op` is computed as finish(x, core(x)) (see above); Gelu's core depends on `a`.
constexpr bool has_core(Op op) {
  return op == Op::Elu || op == Op::Selu || op == Op::Celu || op == Op::Softplus || op == Op::Sigmoid || op == Op::Gelu;
}
template <class T> MS_EW_INLINE T apply_core(Op op, T x, T a = T(0), T b = T(0)) {
  switch (op) {
    case Op::Elu:
    case Op::Selu: return elu_core(x);
    case Op::Celu: return celu_core(x, a);
    case Op::Softplus: return softplus_core(x);
    case Op::Sigmoid: return sigmoid_core(x);
    case Op::Gelu: return a != T(0) ? gelu_tanh_core(x) : gelu_erf_core(x);
    default: return x;
  }
}
template <class T> MS_EW_INLINE T apply_finish(Op op, T x, T c, T a = T(0), T b = T(0)) {
  switch (op) {
    case Op::Elu: return elu_finish(x, c, a);
    case Op::Selu: return selu_finish(x, c, a, b);
    case Op::Celu: return celu_finish(x, c, a);
    case Op::Softplus: return softplus_finish(x, c);
    case Op::Sigmoid: return sigmoid_finish(x, c);
    case Op::Gelu: return a != T(0) ? gelu_tanh_finish(x, c) : gelu_erf_finish(x, c);
    default: return c;
  }
}

template <Op kOp, class T> MS_EW_INLINE T unary(T x, T a = T(0), T b = T(0)) {
  static_assert(info(kOp).arity == 1, "not a unary op");
  return apply_unary(kOp, x, a, b);
}

// f(a, b) of a binary op.
template <class T> MS_EW_INLINE T apply_binary(Op op, T a, T b) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Pow: return std::pow(a, b);
    case Op::Max: return ew::max(a, b);
    case Op::Min: return ew::min(a, b);
    case Op::PRelu: return prelu(a, b);
    default: return a;
  }
}

template <Op kOp, class T> MS_EW_INLINE T binary(T a, T b) {
  static_assert(info(kOp).arity == 2, "not a binary op");
  return apply_binary(kOp, a, b);
}

}  // namespace ms::ew
