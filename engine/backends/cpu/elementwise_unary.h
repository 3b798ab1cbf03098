// The unary kernel template. An op is a small struct:
//   static constexpr Types kTypes;    element types it runs on
//   static constexpr bool kBoolOut;   output is bool (IsNaN, IsInf) instead of the input type
//   explicit Op(const ir::Node&);     reads attributes once per call
//   C operator()(C x) const;          one element in the compute type (float for f16/bf16)
//   auto array(x) const;              optional: Eigen array expression, used for f32
#pragma once

#include <Eigen/Core>

#include <algorithm>

#include "engine/backends/cpu/bf16_convert.h"
#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/elementwise_table_loop.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/ops/elementwise_params.h"

namespace ms::cpu::elementwise {

template <class Op>
concept HasUnaryArrayForm = requires(const Op& op, const Eigen::Map<const Eigen::ArrayXf>& m) {
  op.array(m);
};

template <class Op, class T, class O>
constexpr bool kEigenUnary = std::is_same_v<T, float>&& std::is_same_v<O, float>&& HasUnaryArrayForm<Op>;

// Mixed precision: widened and rounded back with integer arithmetic, marked for SIMD and built for
// AVX-512/AVX2 too (Relu over 8x64x112x112 bf16 was 18 ms through Eigen's scalar conversions; the
// baseline SSE loop left a ResNet-50 training step's bf16 Sign 3x slower than the f32 one).
template <class Op>
MS_SIMD_CLONES void unary_bf16_range(const Op& op, const bf16* __restrict x, bf16* __restrict y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(op(bf16_to_f32(x[i])));
}

template <class Op>
concept IsTableOp = requires {
  Op::kTableOp;
};

// f32: marked for SIMD, as at -O2 GCC does not vectorize a loop that needs an alias check (y may be
// x, which is safe element by element): Sign over 8x64x112x112 random values 15.4 -> 0.8 ms (the
// scalar loop branched on every sign). Built for AVX-512/AVX2 too, like the bf16 loop; table ops
// run the table's loop (their library calls vectorized, ops/elementwise_math.h).
template <class Op> MS_SIMD_CLONES void unary_f32_range(const Op& op, const float* x, float* y, int64_t n) {
  if constexpr (IsTableOp<Op>) {
    table_unary_f32<Op::kTableOp>(x, y, n, op.a, op.b);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
  }
}

template <class Op, class T, class O> inline void unary_range(const Op& op, const T* x, O* y, int64_t n) {
  if constexpr (kEigenUnary<Op, T, O>) {
    Eigen::Map<Eigen::ArrayXf>(y, n) = op.array(Eigen::Map<const Eigen::ArrayXf>(x, n));
  } else if constexpr (std::is_same_v<T, float> && std::is_same_v<O, float>) {
    unary_f32_range(op, x, y, n);
  } else if constexpr (std::is_same_v<T, bf16> && std::is_same_v<O, bf16> && IsTableOp<Op>) {
    // Table ops in chunks: widened, the f32 loop (its vectorized math), rounded back. Element by
    // element a bf16 Gelu called the scalar erf: 3.9 ns a value against 0.46 in f32 (a bf16
    // transformer encoder's 12 Gelus, 18.5 ms a run).
    constexpr int64_t kChunk = 1024;
    alignas(64) float buf[kChunk];
    for (int64_t b = 0; b < n; b += kChunk) {
      const int64_t m = std::min(kChunk, n - b);
      widen_bf16(x + b, buf, m);
      table_unary_f32<Op::kTableOp>(buf, buf, m, op.a, op.b);
      round_to_bf16(buf, y + b, m);
    }
  } else if constexpr (std::is_same_v<T, bf16> && std::is_same_v<O, bf16>) {
    if (x == y) {  // in place
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(op(bf16_to_f32(x[i])));
    } else {
      unary_bf16_range(op, x, y, n);
    }
  } else {
    using C = compute_t<T>;
    for (int64_t i = 0; i < n; ++i) y[i] = convert<O>(op(static_cast<C>(x[i])));
  }
}

// y = op(x) for an already-constructed op (Clip builds its op from inputs).
template <class Op> Status unary_apply(runtime::KernelContext& ctx, const Op& op) {
  const Tensor& x = ctx.input(0);
  const DType ot = Op::kBoolOut ? DType::Bool : x.dtype();
  Tensor* y = nullptr;
  MS_RETURN_IF_ERROR(prepare_output(ctx, 0, ot, x.shape(), y));
  const int64_t n = x.numel();
  bool ran = false, par = false, eigen = false;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (accepts<T>(Op::kTypes)) {
      using O = std::conditional_t<Op::kBoolOut, bool, T>;
      const T* xp = x.data<T>();
      O* yp = y->data<O>();
      ran = true;
      eigen = kEigenUnary<Op, T, O>;
      par = parallel_chunks(n, [&](int64_t b, int64_t e) { unary_range(op, xp + b, yp + b, e - b); });
    }
  });
  if (!ran) return unsupported_dtype(ctx, x.dtype());
  ctx.set_impl(eigen ? (par ? "eigen:omp" : "eigen") : (par ? "loop:omp" : "loop"));
  return Status::ok();
}

template <class Op> Status unary_kernel(runtime::KernelContext& ctx) { return unary_apply(ctx, Op(ctx.node())); }

// Base for ops without attributes.
template <Types Set, bool BoolOut = false> struct UnaryBase {
  static constexpr Types kTypes = Set;
  static constexpr bool kBoolOut = BoolOut;
  explicit UnaryBase(const ir::Node&) {}
};

// An op of the table (ops/elementwise_math.h): its floating-point math, its attributes from the node.
template <ew::Op kOp, Types Set = Types::Float> struct TableOp {
  static constexpr ew::Op kTableOp = kOp;
  static constexpr Types kTypes = Set;
  static constexpr bool kBoolOut = false;
  float a = 0, b = 0;
  explicit TableOp(const ir::Node& n) {
    const ops::ElementwiseParams p = ops::elementwise_params(n, kOp);
    a = p.a;
    b = p.b;
  }
  template <class C> C operator()(C x) const { return ew::unary<kOp>(x, static_cast<C>(a), static_cast<C>(b)); }
};

}  // namespace ms::cpu::elementwise
