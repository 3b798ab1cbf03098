// ScatterElements (and the deprecated Scatter), ScatterND: copy data to the output, then write the
// updates at the indexed places, optionally reducing (add, mul, max, min; opset 16/18).
#include <algorithm>

#include "engine/backends/cpu/tensor_internal.h"

namespace ms::cpu::tensor {
namespace {

enum class Reduction { None, Add, Mul, Max, Min };

Expected<Reduction> read_reduction(runtime::KernelContext& ctx) {
  const std::string r = ctx.node().attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  return ctx.fail("reduction '" + r + "' is not supported");
}

template <class T> void apply(T* dst, const T* src, int64_t n, Reduction red) {
  for (int64_t i = 0; i < n; ++i) {
    switch (red) {
      case Reduction::None: dst[i] = src[i]; break;
      case Reduction::Add: dst[i] = static_cast<T>(dst[i] + src[i]); break;
      case Reduction::Mul: dst[i] = static_cast<T>(dst[i] * src[i]); break;
      case Reduction::Max: dst[i] = src[i] > dst[i] ? src[i] : dst[i]; break;
      case Reduction::Min: dst[i] = src[i] < dst[i] ? src[i] : dst[i]; break;
    }
  }
}

// dst[0..n) (op)= src[0..n) for the dtype; plain byte copy without reduction.
void update(DType t, size_t es, void* dst, const void* src, int64_t n, Reduction red) {
  if (red == Reduction::None) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      bool* d = static_cast<bool*>(dst);
      const bool* s = static_cast<const bool*>(src);
      for (int64_t i = 0; i < n; ++i)
        d[i] = (red == Reduction::Add || red == Reduction::Max) ? (d[i] || s[i]) : (d[i] && s[i]);
    } else {
      apply(static_cast<T*>(dst), static_cast<const T*>(src), n, red);
    }
  });
}

Status scatter_elements_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, data.dtype()));
  MS_ASSIGN_OR_RETURN(Reduction red, read_reduction(ctx));
  if (idx.shape() != upd.shape())
    return ctx.fail("indices " + shape_to_string(idx.shape()) + " and updates " + shape_to_string(upd.shape()) +
                    " differ");
  const int64_t rank = data.rank();
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && idx.dim(d) > data.dim(d))
      return ctx.fail("indices " + shape_to_string(idx.shape()) + " exceed data " + shape_to_string(data.shape()));
  const int64_t n = data.dim(axis);
  for (int64_t i = 0; i < idx.numel(); ++i) {
    const int64_t v = index_at(idx, i);
    if (v < -n || v >= n)
      return ctx.fail("index " + std::to_string(v) + " is out of range for axis " + std::to_string(axis) + " of " +
                      shape_to_string(data.shape()));
  }
  copy_if_distinct(data, out);
  const Shape ds = contiguous_strides(data.shape());
  char* dst = static_cast<char*>(out.raw());
  const char* src = static_cast<const char*>(upd.raw());
  const int64_t axis_stride = ds[static_cast<size_t>(axis)];
  return for_each_axis_index(idx.shape(), ds, axis, [&](int64_t i, int64_t base) -> Status {
    int64_t v = index_at(idx, i);
    if (v < 0) v += n;
    update(data.dtype(), es, dst + static_cast<size_t>(base + v * axis_stride) * es, src + static_cast<size_t>(i) * es,
           1, red);
    return Status::ok();
  });
}

Status scatter_nd_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, data.dtype()));
  MS_ASSIGN_OR_RETURN(Reduction red, read_reduction(ctx));
  if (idx.rank() < 1) return ctx.fail("indices must have rank >= 1");
  const int64_t last = idx.dim(-1);
  if (last < 1 || last > data.rank())
    return ctx.fail("indices " + shape_to_string(idx.shape()) + " do not fit data " + shape_to_string(data.shape()));
  int64_t slice = 1;
  for (int64_t i = last; i < data.rank(); ++i) slice *= data.dim(i);
  const int64_t tuples = idx.numel() / last;
  if (upd.numel() != tuples * slice)
    return ctx.fail("updates " + shape_to_string(upd.shape()) + " do not match indices " +
                    shape_to_string(idx.shape()) + " and data " + shape_to_string(data.shape()));
  const Shape ds = contiguous_strides(data.shape());
  std::vector<int64_t> offs(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t k = 0; k < last; ++k) {
      const int64_t n = data.dim(k);
      int64_t v = index_at(idx, t * last + k);
      if (v < 0) v += n;
      if (v < 0 || v >= n)
        return ctx.fail("index " + std::to_string(index_at(idx, t * last + k)) + " is out of range for dim " +
                        std::to_string(k) + " of " + shape_to_string(data.shape()));
      off += v * ds[static_cast<size_t>(k)];
    }
    offs[static_cast<size_t>(t)] = off;
  }
  copy_if_distinct(data, out);
  char* dst = static_cast<char*>(out.raw());
  const char* src = static_cast<const char*>(upd.raw());
  for (int64_t t = 0; t < tuples; ++t)
    update(data.dtype(), es, dst + static_cast<size_t>(offs[static_cast<size_t>(t)]) * es,
           src + static_cast<size_t>(t * slice) * es, slice, red);
  return Status::ok();
}

}  // namespace

void register_scatter_kernels(runtime::KernelRegistry& r) {
  r.add("ScatterElements", scatter_elements_kernel);
  r.add("Scatter", scatter_elements_kernel);
  r.add("ScatterND", scatter_nd_kernel);
}

}  // namespace ms::cpu::tensor
