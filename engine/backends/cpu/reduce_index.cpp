// ArgMax, ArgMin, TopK, CumSum and CumProd: each works on the [outer, axis, inner] view around its axis.
#include <omp.h>

#include <algorithm>

#include "engine/backends/cpu/reduce_internal.h"

namespace ms::cpu::reduce {
namespace {

constexpr int64_t kIndexBlock = 256;

Status axis_of(runtime::KernelContext& ctx, int64_t axis, int64_t rank, int64_t& out) {
  out = axis < 0 ? axis + rank : axis;
  if (out < 0 || out >= rank)
    return ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return Status::ok();
}

// --- ArgMax / ArgMin ------------------------------------------------------------------------------

// Whether v replaces the current best. NaN beats numbers (numpy); ties go to the first index, or the
// last with select_last_index.
template <bool Max, class A> inline bool better(A v, A best, bool last) {
  if (is_nan(best)) return last && is_nan(v);
  if (is_nan(v)) return true;
  if constexpr (Max)
    return last ? v >= best : v > best;
  else
    return last ? v <= best : v < best;
}

template <bool Max, class T> void arg_loop(const T* x, int64_t* y, const Ori& v, bool last) {
  using A = acc_t<T>;
  const int64_t blocks = (v.inner + kIndexBlock - 1) / kIndexBlock;
#pragma omp parallel for schedule(static) if (v.outer * blocks > 1 && v.outer * v.red * v.inner >= kParallelWork)
  for (int64_t t = 0; t < v.outer * blocks; ++t) {
    const int64_t o = t / blocks, i0 = (t % blocks) * kIndexBlock, len = std::min(kIndexBlock, v.inner - i0);
    const T* base = x + o * v.red * v.inner + i0;
    A best[kIndexBlock];
    int64_t* idx = y + o * v.inner + i0;
    for (int64_t i = 0; i < len; ++i) {
      best[i] = widen(base[i]);
      idx[i] = 0;
    }
    for (int64_t r = 1; r < v.red; ++r) {
      const T* p = base + r * v.inner;
      for (int64_t i = 0; i < len; ++i) {
        const A val = widen(p[i]);
        if (better<Max>(val, best[i], last)) {
          best[i] = val;
          idx[i] = r;
        }
      }
    }
  }
}

template <bool Max> Status arg_kernel(runtime::KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (!is_numeric(x.dtype()))
    return ctx.unsupported_case(node.op_type + " does not support dtype " + std::string(dtype_name(x.dtype())));
  int64_t axis = 0;
  MS_RETURN_IF_ERROR(axis_of(ctx, node.attr_int("axis", 0), x.rank(), axis));
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool last = node.attr_int("select_last_index", 0) != 0;
  Shape out = x.shape();
  if (keepdims)
    out[static_cast<size_t>(axis)] = 1;
  else
    out.erase(out.begin() + axis);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::I64, out));
  const Ori v = ori_around(x.shape(), axis);
  if (y->numel() == 0) return Status::ok();
  if (v.red == 0)
    return ctx.fail(node.op_type + " over axis " + std::to_string(axis) + " of size 0 (input shape " +
                    shape_to_string(x.shape()) + ")");
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) arg_loop<Max>(x.data<T>(), y->data<int64_t>(), v, last);
  });
  ctx.set_impl("loop");
  return Status::ok();
}

// --- TopK -----------------------------------------------------------------------------------------

template <class T> void topk_loop(const T* x, T* values, int64_t* indices, const Ori& v, int64_t k, bool largest) {
  using A = acc_t<T>;
  struct Item {
    A v;
    int64_t i;
  };
  // A strict weak order even with NaN (ranked above every number); equal values keep index order.
  auto before = [largest](const Item& a, const Item& b) {
    const bool an = is_nan(a.v), bn = is_nan(b.v);
    if (an || bn) {
      if (an && bn) return a.i < b.i;
      return largest ? an : bn;
    }
    if (a.v != b.v) return largest ? a.v > b.v : a.v < b.v;
    return a.i < b.i;
  };
  const int64_t lines = v.outer * v.inner;
#pragma omp parallel if (lines > 1 && lines * v.red >= kParallelWork)
  {
    std::vector<Item> buf(static_cast<size_t>(v.red));
#pragma omp for schedule(static)
    for (int64_t line = 0; line < lines; ++line) {
      const int64_t o = line / v.inner, i = line % v.inner;
      const T* src = x + o * v.red * v.inner + i;
      for (int64_t r = 0; r < v.red; ++r) buf[static_cast<size_t>(r)] = Item{widen(src[r * v.inner]), r};
      std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), before);
      const int64_t base = o * k * v.inner + i;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t r = buf[static_cast<size_t>(j)].i;
        values[base + j * v.inner] = src[r * v.inner];
        indices[base + j * v.inner] = r;
      }
    }
  }
}

Status topk_kernel(runtime::KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (!is_numeric(x.dtype()))
    return ctx.unsupported_case("TopK does not support dtype " + std::string(dtype_name(x.dtype())));
  int64_t k = 0;
  if (ctx.has_input(1)) {
    if (!scalar_int_input(ctx.input(1), k))
      return ctx.fail("k (input 1) must hold one integer, got " + std::string(dtype_name(ctx.input(1).dtype())) +
                      shape_to_string(ctx.input(1).shape()));
  } else {
    k = node.attr_int("k", -1);
  }
  int64_t axis = 0;
  MS_RETURN_IF_ERROR(axis_of(ctx, node.attr_int("axis", -1), x.rank(), axis));
  const int64_t n = x.dim(axis);
  if (k < 0 || k > n)
    return ctx.fail("k = " + std::to_string(k) + " must be in [0, " + std::to_string(n) + "] (axis " +
                    std::to_string(axis) + " of input shape " + shape_to_string(x.shape()) + ")");
  Shape out = x.shape();
  out[static_cast<size_t>(axis)] = k;
  MS_ASSIGN_OR_RETURN(Tensor * values, ctx.allocate_output(0, x.dtype(), out));
  MS_ASSIGN_OR_RETURN(Tensor * indices, ctx.allocate_output(1, DType::I64, out));
  if (values->numel() == 0) return Status::ok();
  const bool largest = node.attr_int("largest", 1) != 0;
  // `sorted = 0` leaves the order unspecified; sorted output is a valid answer and costs little more.
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      topk_loop(x.data<T>(), values->data<T>(), indices->data<int64_t>(), ori_around(x.shape(), axis), k, largest);
  });
  ctx.set_impl("partial_sort");
  return Status::ok();
}

// --- CumSum / CumProd ------------------------------------------------------------------------------

// Running sum (or product) along the axis; `exclusive` leaves out the element itself (the first
// output is then 0, or 1 for the product), `reverse` runs from the end. Integers wrap.
template <bool Prod, class T> void scan_loop(const T* x, T* y, const Ori& v, bool exclusive, bool reverse) {
  using A = acc_t<T>;
  const int64_t blocks = (v.inner + kIndexBlock - 1) / kIndexBlock;
#pragma omp parallel for schedule(static) if (v.outer * blocks > 1 && v.outer * v.red * v.inner >= kParallelWork)
  for (int64_t t = 0; t < v.outer * blocks; ++t) {
    const int64_t o = t / blocks, i0 = (t % blocks) * kIndexBlock, len = std::min(kIndexBlock, v.inner - i0);
    A acc[kIndexBlock];
    for (int64_t i = 0; i < len; ++i) acc[i] = A(Prod ? 1 : 0);
    for (int64_t rr = 0; rr < v.red; ++rr) {
      const int64_t r = reverse ? v.red - 1 - rr : rr;
      const int64_t off = (o * v.red + r) * v.inner + i0;
      for (int64_t i = 0; i < len; ++i) {
        const A val = widen(x[off + i]);
        if (exclusive) y[off + i] = static_cast<T>(acc[i]);
        acc[i] = Prod ? acc_mul(acc[i], val) : acc_add(acc[i], val);
        if (!exclusive) y[off + i] = static_cast<T>(acc[i]);
      }
    }
  }
}

template <bool Prod> Status scan_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const char* op = Prod ? "CumProd" : "CumSum";
  if (!is_numeric(x.dtype()))
    return ctx.unsupported_case(std::string(op) + " does not support dtype " + std::string(dtype_name(x.dtype())));
  int64_t a = 0;
  if (!scalar_int_input(ctx.input(1), a))
    return ctx.fail("axis (input 1) must hold one integer, got " + std::string(dtype_name(ctx.input(1).dtype())) +
                    shape_to_string(ctx.input(1).shape()));
  int64_t axis = 0;
  MS_RETURN_IF_ERROR(axis_of(ctx, a, x.rank(), axis));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.shape()));
  const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      scan_loop<Prod>(x.data<T>(), y->data<T>(), ori_around(x.shape(), axis), exclusive, reverse);
  });
  ctx.set_impl("loop");
  return Status::ok();
}

}  // namespace

void register_index_kernels(runtime::KernelRegistry& r) {
  r.add("ArgMax", arg_kernel<true>);
  r.add("ArgMin", arg_kernel<false>);
  r.add("TopK", topk_kernel);
  r.add("CumSum", scan_kernel<false>);
  r.add("CumProd", scan_kernel<true>);
}

}  // namespace ms::cpu::reduce
