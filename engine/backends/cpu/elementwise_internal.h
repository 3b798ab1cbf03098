// Private toolkit of the CPU elementwise kernels (backends/cpu/elementwise*.cpp): dtype classes,
// numpy-like conversions without undefined behaviour, wrapping integer arithmetic, a chunked OpenMP
// loop and the output check every kernel does first.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu::elementwise {

// Per-file registration, called by register_elementwise_kernels (elementwise.cpp).
void register_unary_kernels(runtime::KernelRegistry& r);       // elementwise_unary.cpp
void register_activation_kernels(runtime::KernelRegistry& r);  // elementwise_activation.cpp
void register_arith_kernels(runtime::KernelRegistry& r);       // elementwise_arith.cpp
void register_compare_kernels(runtime::KernelRegistry& r);     // elementwise_compare.cpp
void register_variadic_kernels(runtime::KernelRegistry& r);    // elementwise_variadic.cpp
void register_cast_kernels(runtime::KernelRegistry& r);        // elementwise_cast.cpp

// Below this many elements a kernel runs on the calling thread: waking a thread team costs more
// than the work.
constexpr int64_t kParallelThreshold = int64_t{1} << 16;
constexpr int64_t kParallelChunk = int64_t{1} << 14;

template <class T> inline constexpr bool is_half_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

// bf16 <-> f32 with plain integer arithmetic (round to nearest even, NaN kept quiet with its sign,
// as Eigen's conversion), so loops over them vectorize.
inline float bf16_to_f32(bf16 h) {
  const uint32_t u = static_cast<uint32_t>(Eigen::numext::bit_cast<uint16_t>(h)) << 16;
  return Eigen::numext::bit_cast<float>(u);
}
inline bf16 f32_to_bf16(float f) {
  const uint32_t u = Eigen::numext::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u & 0x80000000u) ? 0xffc0u : 0x7fc0u;
  return Eigen::numext::bit_cast<bf16>(static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded));
}

// Type arithmetic is done in: float for f16/bf16, the type itself otherwise.
template <class T> using compute_t = std::conditional_t<is_half_v<T>, float, T>;

// Which element types a kernel is instantiated for (mirrors the schema's dtype sets).
enum class Types : uint8_t { Float, SignedNumeric, Numeric, Integer, Bool, Any };

template <class T> constexpr bool accepts(Types set) {
  constexpr bool flt = std::is_floating_point_v<T> || is_half_v<T>;
  constexpr bool boolean = std::is_same_v<T, bool>;
  constexpr bool integer = std::is_integral_v<T> && !boolean;
  switch (set) {
    case Types::Float: return flt;
    case Types::SignedNumeric: return flt || (integer && std::is_signed_v<T>);
    case Types::Numeric: return flt || integer;
    case Types::Integer: return integer;
    case Types::Bool: return boolean;
    case Types::Any: return true;
  }
  return false;
}

inline bool accepts_dtype(DType t, Types set) {
  bool ok = false;
  visit_dtype(t, [&](auto tag) { ok = accepts<typename decltype(tag)::type>(set); });
  return ok;
}

// Float -> integer as numpy's astype does on x86 (truncation toward zero; NaN and out-of-range give
// the "integer indefinite" value, narrower types wrap from int32/int64), with no UB.
template <class To, class From> inline To float_to_int(From v) {
  const double d = static_cast<double>(v);
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (d >= 0 && d < 18446744073709551616.0) return static_cast<uint64_t>(d);
    if (d < 0 && d > -9223372036854775808.0) return static_cast<uint64_t>(static_cast<int64_t>(d));
    return uint64_t{1} << 63;
  } else if constexpr (sizeof(To) == 8 || std::is_same_v<To, uint32_t>) {
    if (!(d > -9223372036854775809.0 && d < 9223372036854775808.0)) return static_cast<To>(INT64_MIN);
    return static_cast<To>(static_cast<int64_t>(d));
  } else {
    if (!(d > -2147483649.0 && d < 2147483648.0)) return static_cast<To>(INT32_MIN);
    return static_cast<To>(static_cast<int32_t>(d));
  }
}

// Any supported element type (or its compute type) -> To.
template <class To, class From> inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_half_v<From>)
      return static_cast<float>(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (is_half_v<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return float_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Integer +, -, * wrap (as numpy does) instead of being UB on overflow.
template <class T> using wide_unsigned_t = std::make_unsigned_t<decltype(T() + T())>;

template <class T> inline T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<wide_unsigned_t<T>>(a) + static_cast<wide_unsigned_t<T>>(b));
  else
    return a + b;
}
template <class T> inline T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<wide_unsigned_t<T>>(a) - static_cast<wide_unsigned_t<T>>(b));
  else
    return a - b;
}
template <class T> inline T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<wide_unsigned_t<T>>(a) * static_cast<wide_unsigned_t<T>>(b));
  else
    return a * b;
}

// Runs f(begin, end) over [0, n): on this thread for small n, in chunks across the OpenMP team
// otherwise. Returns whether it went parallel.
template <class F> inline bool parallel_chunks(int64_t n, F&& f) {
  if (n < kParallelThreshold) {
    f(int64_t{0}, n);
    return false;
  }
  const int64_t chunks = (n + kParallelChunk - 1) / kParallelChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) f(c * kParallelChunk, std::min(n, (c + 1) * kParallelChunk));
  return true;
}

// Output i, preallocated by the executor (checked against the expected dtype and shape); when the
// executor could not preallocate it, allocated here.
inline Status prepare_output(runtime::KernelContext& ctx, size_t i, DType dtype, const Shape& shape, Tensor*& out) {
  Tensor& t = ctx.output(i);
  if (t.defined()) {
    if (t.dtype() != dtype || t.shape() != shape)
      return ctx.fail("output " + std::to_string(i) + " was allocated as " + std::string(dtype_name(t.dtype())) +
                      shape_to_string(t.shape()) + ", the kernel computes " + std::string(dtype_name(dtype)) +
                      shape_to_string(shape));
    out = &t;
    return Status::ok();
  }
  auto r = ctx.allocate_output(i, dtype, shape);
  if (!r) return std::move(r).take_status();
  out = *r;
  return Status::ok();
}

// Dtype of a kernel's input does not match what the schema promised (an executor bug or a graph
// that skipped inference); refuse rather than read memory as the wrong type.
inline Status dtype_mismatch(runtime::KernelContext& ctx, size_t i, DType expected) {
  return ctx.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.input(i).dtype())) +
                  ", expected " + std::string(dtype_name(expected)));
}
inline Status unsupported_dtype(runtime::KernelContext& ctx, DType t) {
  return ctx.unsupported_case("no CPU kernel for dtype " + std::string(dtype_name(t)));
}

}  // namespace ms::cpu::elementwise
