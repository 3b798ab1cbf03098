// The binary kernel template: dtype dispatch, the three fast paths (same shape, scalar operand,
// merged broadcast plan whose rows are contiguous) and the general strided loop. An op is a small
// struct:
//   static constexpr Types kTypes;        element types it runs on
//   static constexpr bool kBoolOut;       output is bool (comparisons) instead of the input type
//   static constexpr bool kMixed;         exponent may have its own dtype (Pow)
//   explicit Op(const ir::Node&);         reads attributes once per call
//   C operator()(CA a, CB b) const;       one element in compute types
//   auto array(a, b) const;               optional: Eigen array expression for f32
#pragma once

#include <Eigen/Core>

#include "engine/backends/cpu/elementwise_broadcast.h"
#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu::elementwise {

template <class Op>
concept HasArrayForm = requires(const Op& op, const Eigen::Map<const Eigen::ArrayXf>& m) {
  op.array(m, m);
};

// o = op(a, b) over bf16 with strides 0 or 1 (the output may be an input: element by element).
template <class Op>
MS_SIMD_CLONES void binary_bf16_range(const Op& op, const bf16* a, int64_t sa, const bf16* b, int64_t sb, bf16* o,
                                      int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) o[i] = f32_to_bf16(op(bf16_to_f32(a[i * sa]), bf16_to_f32(b[i * sb])));
}

template <class Op, class A, class B, class O>
constexpr bool kEigenBinary =
    std::is_same_v<A, float>&& std::is_same_v<B, float>&& std::is_same_v<O, float>&& HasArrayForm<Op>;

// One row: o[i] = op(a[i*sa], b[i*sb]).
template <class Op, class A, class B, class O>
inline void binary_row(const Op& op, const A* a, int64_t sa, const B* b, int64_t sb, O* o, int64_t n) {
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  if constexpr (kEigenBinary<Op, A, B, O>) {
    using In = Eigen::Map<const Eigen::ArrayXf>;
    Eigen::Map<Eigen::ArrayXf> out(o, n);
    if (sa == 1 && sb == 1) {
      out = op.array(In(a, n), In(b, n));
      return;
    }
    if (sa == 0 && sb == 1) {
      out = op.array(Eigen::ArrayXf::Constant(n, *a), In(b, n));
      return;
    }
    if (sa == 1 && sb == 0) {
      out = op.array(In(a, n), Eigen::ArrayXf::Constant(n, *b));
      return;
    }
  }
  if constexpr (std::is_same_v<A, bf16> && std::is_same_v<B, bf16> && std::is_same_v<O, bf16>) {
    // Mixed precision: integer-arithmetic conversions, the common strides marked for SIMD and built
    // for AVX-512/AVX2 too.
    if (sa <= 1 && sb <= 1) {
      binary_bf16_range(op, a, sa, b, sb, o, n);
      return;
    }
  }
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(op(static_cast<CA>(a[i]), static_cast<CB>(b[i])));
  } else if (sa == 0 && sb == 1) {
    const CA av = static_cast<CA>(*a);
    for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(op(av, static_cast<CB>(b[i])));
  } else if (sa == 1 && sb == 0) {
    const CB bv = static_cast<CB>(*b);
    for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(op(static_cast<CA>(a[i]), bv));
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(op(static_cast<CA>(a[i * sa]), static_cast<CB>(b[i * sb])));
  }
}

// out = op(a, b) with broadcasting; `out` has the broadcast shape. Sets the impl name.
template <class Op, class A, class B, class O>
Status binary_apply(runtime::KernelContext& ctx, const Op& op, const Tensor& ta, const Tensor& tb, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  const A* a = ta.data<A>();
  const B* b = tb.data<B>();
  O* o = out.data<O>();
  constexpr bool eigen = kEigenBinary<Op, A, B, O>;
  const Shape& os = out.shape();
  bool par = false;
  if (ta.shape() == os && tb.shape() == os) {
    par = parallel_chunks(n, [&](int64_t s, int64_t e) { binary_row(op, a + s, 1, b + s, 1, o + s, e - s); });
    ctx.set_impl(eigen ? (par ? "eigen:omp" : "eigen") : (par ? "loop:omp" : "loop"));
    return Status::ok();
  }
  if (tb.numel() == 1 && ta.shape() == os) {
    par = parallel_chunks(n, [&](int64_t s, int64_t e) { binary_row(op, a + s, 1, b, 0, o + s, e - s); });
    ctx.set_impl(eigen ? (par ? "eigen:scalar:omp" : "eigen:scalar") : (par ? "loop:scalar:omp" : "loop:scalar"));
    return Status::ok();
  }
  if (ta.numel() == 1 && tb.shape() == os) {
    par = parallel_chunks(n, [&](int64_t s, int64_t e) { binary_row(op, a, 0, b + s, 1, o + s, e - s); });
    ctx.set_impl(eigen ? (par ? "eigen:scalar:omp" : "eigen:scalar") : (par ? "loop:scalar:omp" : "loop:scalar"));
    return Status::ok();
  }
  BroadcastPlan<2> plan;
  if (!make_plan<2>(os, {&ta.shape(), &tb.shape()}, plan))
    return ctx.fail("cannot broadcast " + shape_to_string(ta.shape()) + " and " + shape_to_string(tb.shape()) + " to " +
                    shape_to_string(os));
  par = for_each_row<2>(plan, [&](int64_t oo, const int64_t* io, int64_t len, const int64_t* st) {
    binary_row(op, a + io[0], st[0], b + io[1], st[1], o + oo, len);
  });
  ctx.set_impl(eigen ? (par ? "eigen:bcast:omp" : "eigen:bcast") : (par ? "loop:bcast:omp" : "loop:bcast"));
  return Status::ok();
}

// Output shape when the executor did not preallocate (slow path only).
inline Status broadcast_output_shape(runtime::KernelContext& ctx, Shape& shape) {
  shape.clear();
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (!broadcast_shapes(shape, ctx.input(i).shape(), shape))
      return ctx.fail("inputs do not broadcast: " + shape_to_string(shape) + " vs " +
                      shape_to_string(ctx.input(i).shape()));
  }
  return Status::ok();
}

template <class Op> Status binary_kernel(runtime::KernelContext& ctx) {
  const Tensor& ta = ctx.input(0);
  const Tensor& tb = ctx.input(1);
  const DType at = ta.dtype();
  if (!Op::kMixed && tb.dtype() != at) return dtype_mismatch(ctx, 1, at);
  const DType ot = Op::kBoolOut ? DType::Bool : at;
  Tensor* out = &ctx.output(0);
  if (!out->defined()) {
    Shape shape;
    MS_RETURN_IF_ERROR(broadcast_output_shape(ctx, shape));
    MS_RETURN_IF_ERROR(prepare_output(ctx, 0, ot, shape, out));
  } else if (out->dtype() != ot) {
    return ctx.fail("output is " + std::string(dtype_name(out->dtype())) + ", expected " + std::string(dtype_name(ot)));
  }
  const Op op(ctx.node());
  // The error Status is only built when no instantiation ran: no string work on the fast path.
  Status st;
  bool ran = false;
  visit_dtype(at, [&](auto tag) {
    using A = typename decltype(tag)::type;
    if constexpr (accepts<A>(Op::kTypes)) {
      using O = std::conditional_t<Op::kBoolOut, bool, A>;
      if constexpr (Op::kMixed) {
        visit_dtype(tb.dtype(), [&](auto tag_b) {
          using B = typename decltype(tag_b)::type;
          if constexpr (accepts<B>(Op::kTypes)) {
            st = binary_apply<Op, A, B, O>(ctx, op, ta, tb, *out);
            ran = true;
          }
        });
      } else {
        st = binary_apply<Op, A, A, O>(ctx, op, ta, tb, *out);
        ran = true;
      }
    }
  });
  if (!ran) return unsupported_dtype(ctx, Op::kMixed && accepts_dtype(at, Op::kTypes) ? tb.dtype() : at);
  return st;
}

}  // namespace ms::cpu::elementwise
