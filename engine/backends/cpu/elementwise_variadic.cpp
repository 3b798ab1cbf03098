// Variadic Min/Max/Sum/Mean (folded pairwise into the output with broadcasting) and Where.
#include <cmath>
#include <cstring>

#include "engine/backends/cpu/elementwise_binary.h"
#include "engine/ops/elementwise_math.h"

namespace ms::cpu::elementwise {
namespace {

struct FoldBase {
  static constexpr Types kTypes = Types::Numeric;
  static constexpr bool kBoolOut = false;
  static constexpr bool kMixed = false;
  explicit FoldBase(const ir::Node&) {}
};

// Min/Max propagate NaN (numpy minimum/maximum, as the ONNX reference: the op table's forms); plain
// loops, since Eigen 3.4.0 max/min do not propagate NaN.
struct MaxOp : FoldBase {
  using FoldBase::FoldBase;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      return ew::binary<ew::Op::Max>(a, b);
    else
      return a < b ? b : a;
  }
};
struct MinOp : FoldBase {
  using FoldBase::FoldBase;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      return ew::binary<ew::Op::Min>(a, b);
    else
      return b < a ? b : a;
  }
};
struct SumOp : FoldBase {
  using FoldBase::FoldBase;
  template <class C> C operator()(C a, C b) const { return wrap_add(a, b); }
  template <class X, class Y> auto array(const X& a, const Y& b) const { return a + b; }
};

template <class Op, class T> Status fold_typed(runtime::KernelContext& ctx, const Op& op, Tensor& out, bool mean) {
  const size_t k = ctx.num_inputs();
  if (k == 1) {
    // Output has the input's shape: a copy.
    const Tensor& in = ctx.input(0);
    if (in.shape() != out.shape()) return ctx.fail("output shape differs from the single input's");
    if (out.nbytes()) std::memcpy(out.raw(), in.raw(), out.nbytes());
    ctx.set_impl("copy");
  } else {
    MS_RETURN_IF_ERROR((binary_apply<Op, T, T, T>(ctx, op, ctx.input(0), ctx.input(1), out)));
    for (size_t i = 2; i < k; ++i) MS_RETURN_IF_ERROR((binary_apply<Op, T, T, T>(ctx, op, out, ctx.input(i), out)));
  }
  if (mean && k > 1) {
    using C = compute_t<T>;
    const C scale = C(1) / static_cast<C>(k);
    T* o = out.data<T>();
    parallel_chunks(out.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = convert<T>(static_cast<C>(o[i]) * scale);
    });
  }
  return Status::ok();
}

template <class Op, bool Mean = false> Status fold_kernel(runtime::KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.fail("input " + std::to_string(i) + " is missing");
    if (ctx.input(i).dtype() != t) return dtype_mismatch(ctx, i, t);
  }
  Tensor* out = &ctx.output(0);
  if (!out->defined()) {
    Shape shape;
    MS_RETURN_IF_ERROR(broadcast_output_shape(ctx, shape));
    MS_RETURN_IF_ERROR(prepare_output(ctx, 0, t, shape, out));
  } else if (out->dtype() != t) {
    return ctx.fail("output is " + std::string(dtype_name(out->dtype())) + ", expected " + std::string(dtype_name(t)));
  }
  const Op op(ctx.node());
  Status st;
  bool ran = false;
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (accepts<T>(Types::Numeric)) {
      st = fold_typed<Op, T>(ctx, op, *out, Mean);
      ran = true;
    }
  });
  if (!ran) return unsupported_dtype(ctx, t);
  return st;
}

// Where only moves elements: dispatch on element size, not dtype.
template <class E> Status where_typed(runtime::KernelContext& ctx, Tensor& out) {
  const Tensor& tc = ctx.input(0);
  const Tensor& tx = ctx.input(1);
  const Tensor& ty = ctx.input(2);
  const bool* c = tc.data<bool>();
  const E* x = static_cast<const E*>(tx.raw());
  const E* y = static_cast<const E*>(ty.raw());
  E* o = static_cast<E*>(out.raw());
  const Shape& os = out.shape();
  bool par;
  if (tc.shape() == os && tx.shape() == os && ty.shape() == os) {
    par = parallel_chunks(out.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = c[i] ? x[i] : y[i];
    });
    ctx.set_impl(par ? "loop:omp" : "loop");
    return Status::ok();
  }
  BroadcastPlan<3> plan;
  if (!make_plan<3>(os, {&tc.shape(), &tx.shape(), &ty.shape()}, plan))
    return ctx.fail("cannot broadcast " + shape_to_string(tc.shape()) + ", " + shape_to_string(tx.shape()) + " and " +
                    shape_to_string(ty.shape()) + " to " + shape_to_string(os));
  par = for_each_row<3>(plan, [&](int64_t oo, const int64_t* io, int64_t len, const int64_t* st) {
    const bool* cr = c + io[0];
    const E* xr = x + io[1];
    const E* yr = y + io[2];
    E* orow = o + oo;
    for (int64_t i = 0; i < len; ++i) orow[i] = cr[i * st[0]] ? xr[i * st[1]] : yr[i * st[2]];
  });
  ctx.set_impl(par ? "loop:bcast:omp" : "loop:bcast");
  return Status::ok();
}

Status where_kernel(runtime::KernelContext& ctx) {
  if (ctx.input(0).dtype() != DType::Bool) return dtype_mismatch(ctx, 0, DType::Bool);
  const DType t = ctx.input(1).dtype();
  if (ctx.input(2).dtype() != t) return dtype_mismatch(ctx, 2, t);
  Tensor* out = &ctx.output(0);
  if (!out->defined()) {
    Shape shape;
    MS_RETURN_IF_ERROR(broadcast_output_shape(ctx, shape));
    MS_RETURN_IF_ERROR(prepare_output(ctx, 0, t, shape, out));
  } else if (out->dtype() != t) {
    return ctx.fail("output is " + std::string(dtype_name(out->dtype())) + ", expected " + std::string(dtype_name(t)));
  }
  if (out->numel() == 0) return Status::ok();
  switch (dtype_size(t)) {
    case 1: return where_typed<uint8_t>(ctx, *out);
    case 2: return where_typed<uint16_t>(ctx, *out);
    case 4: return where_typed<uint32_t>(ctx, *out);
    case 8: return where_typed<uint64_t>(ctx, *out);
    default: return unsupported_dtype(ctx, t);
  }
}

}  // namespace

void register_variadic_kernels(runtime::KernelRegistry& r) {
  r.add("Max", fold_kernel<MaxOp>);
  r.add("Min", fold_kernel<MinOp>);
  r.add("Sum", fold_kernel<SumOp>);
  r.add("Mean", fold_kernel<SumOp, true>);
  r.add("Where", where_kernel);
}

}  // namespace ms::cpu::elementwise
