// Private to the CPU reduction kernels: registration split by feature, accumulator types, safe
// integer arithmetic (wrapping, never UB), the [outer, reduced, inner] view every kernel works on,
// and a permuting copy for reductions over scattered axes.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/backends/cpu/cpu_backend.h"

namespace ms::ops::reduce {
struct EinsumBinding;
}

namespace ms::cpu::reduce {

void register_reduce_family_kernels(runtime::KernelRegistry& r);  // reduce.cpp
void register_index_kernels(runtime::KernelRegistry& r);          // reduce_index.cpp: ArgMax/Min, TopK, CumSum
void register_einsum_kernels(runtime::KernelRegistry& r);         // reduce_einsum.cpp: Einsum, Det

// Work (elements touched) below which a kernel stays on one thread: the fork costs more.
constexpr int64_t kParallelWork = int64_t{1} << 16;

// Accumulator of an element type: float for the half types (and f32), the widest integer for ints.
template <class T> struct AccOf {
  using type = std::conditional_t<std::is_same_v<T, double>, double,
                                  std::conditional_t<std::is_signed_v<T> && std::is_integral_v<T>, int64_t,
                                                     std::conditional_t<std::is_integral_v<T>, uint64_t, float>>>;
};
template <class T> using acc_t = typename AccOf<T>::type;

template <class A> constexpr bool kIntAcc = std::is_integral_v<A>;

// Integer sums and products wrap (as the reference does in fixed-width types) instead of
// overflowing, which would be undefined behaviour.
template <class A> inline A acc_add(A a, A b) {
  if constexpr (kIntAcc<A>)
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <class A> inline A acc_mul(A a, A b) {
  if constexpr (kIntAcc<A>)
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}
template <class A> inline A acc_abs(A a) {
  if constexpr (std::is_unsigned_v<A>)
    return a;
  else if constexpr (kIntAcc<A>)
    return a < 0 ? static_cast<A>(uint64_t{0} - static_cast<uint64_t>(a)) : a;
  else
    return std::abs(a);
}

template <class T> inline acc_t<T> widen(T x) { return static_cast<acc_t<T>>(x); }

// A double result into element type T: integers saturate (NaN -> 0) instead of the undefined
// out-of-range conversion.
template <class T> inline T narrow_real(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Comparisons that treat NaN as larger than everything, so sorts and arg-searches stay well-defined
// and NaN wins a max, as numpy's does.
template <class A> inline bool is_nan(A a) {
  if constexpr (kIntAcc<A>)
    return false;
  else
    return std::isnan(a);
}

// A tensor seen as [outer, reduced, inner] around one axis (or a contiguous block of axes).
struct Ori {
  int64_t outer = 1, red = 1, inner = 1;
};
inline Ori ori_around(const Shape& s, int64_t axis) {
  Ori v;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < axis)
      v.outer *= s[static_cast<size_t>(i)];
    else if (i == axis)
      v.red = s[static_cast<size_t>(i)];
    else
      v.inner *= s[static_cast<size_t>(i)];
  }
  return v;
}

// dst = src transposed: dst dim j is src dim perm[j]. Both row-major contiguous.
void permute_copy(const void* src, void* dst, size_t elem_size, const Shape& src_shape, const std::vector<int>& perm);

// Two-operand Einsum that is a batched matrix product, through Eigen's GEMM (f32/f64). False when
// the equation has another form; the caller then runs the generic index loop.
Expected<bool> einsum_gemm(runtime::KernelContext& ctx, const ops::reduce::EinsumBinding& b,
                           const std::vector<const Tensor*>& ins, Tensor& y);

// An axis from an input tensor (scalar or one-element 1-D). False when it holds no single value.
bool scalar_int_input(const Tensor& t, int64_t& v);

}  // namespace ms::cpu::reduce
