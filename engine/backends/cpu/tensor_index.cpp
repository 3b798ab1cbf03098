// Index-driven kernels: Gather, GatherElements, GatherND, Compress, NonZero, OneHot, Unique. Indices
// are checked before anything is written; negative ones wrap, out-of-range ones are an error.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/backends/cpu/tensor_internal.h"

namespace ms::cpu::tensor {
namespace {

// Wraps a negative index; false when out of [-n, n).
inline bool wrap_index(int64_t& v, int64_t n) {
  if (v < 0) v += n;
  return v >= 0 && v < n;
}

Status index_error(runtime::KernelContext& ctx, int64_t v, int64_t n, const Shape& data) {
  return ctx.fail("index " + std::to_string(v) + " is out of range [" + std::to_string(-n) + ", " + std::to_string(n) +
                  ") for data " + shape_to_string(data));
}

Status gather_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, data.dtype()));
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), data.rank());
  const int64_t n = data.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= data.dim(i);
  for (int64_t i = axis + 1; i < data.rank(); ++i) inner *= data.dim(i);
  const int64_t count = idx.numel();
  // Small index lists (the shape-computation case) resolve on the stack.
  int64_t local[16];
  std::vector<int64_t> heap;
  int64_t* ids = local;
  if (count > 16) {
    heap.resize(static_cast<size_t>(count));
    ids = heap.data();
  }
  for (int64_t j = 0; j < count; ++j) {
    int64_t v = index_at(idx, j);
    if (!wrap_index(v, n)) return index_error(ctx, index_at(idx, j), n, data.shape());
    ids[j] = v;
  }
  const size_t row = static_cast<size_t>(inner) * es;
  const char* src = static_cast<const char*>(data.raw());
  char* dst = static_cast<char*>(out.raw());
  // A compiled graph plans one index with nothing before the axis as a view of the data
  // (compiler/views.h): the row is there already.
  if (outer == 1 && count == 1 && dst == src + static_cast<size_t>(ids[0]) * row) return Status::ok();
  for (int64_t o = 0; o < outer; ++o) {
    const char* base = src + static_cast<size_t>(o * n) * row;
    for (int64_t j = 0; j < count; ++j, dst += row) std::memcpy(dst, base + static_cast<size_t>(ids[j]) * row, row);
  }
  return Status::ok();
}

Status gather_elements_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, data.dtype()));
  const int64_t rank = data.rank();
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && idx.dim(d) > data.dim(d))
      return ctx.fail("indices " + shape_to_string(idx.shape()) + " exceed data " + shape_to_string(data.shape()));
  const Shape ds = contiguous_strides(data.shape());
  const int64_t n = data.dim(axis);
  const char* src = static_cast<const char*>(data.raw());
  char* dst = static_cast<char*>(out.raw());
  const int64_t axis_stride = ds[static_cast<size_t>(axis)];
  return for_each_axis_index(idx.shape(), ds, axis, [&](int64_t i, int64_t base) -> Status {
    int64_t v = index_at(idx, i);
    if (!wrap_index(v, n)) return index_error(ctx, index_at(idx, i), n, data.shape());
    std::memcpy(dst + static_cast<size_t>(i) * es, src + static_cast<size_t>(base + v * axis_stride) * es, es);
    return Status::ok();
  });
}

Status gather_nd_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, data.dtype()));
  const int64_t b = ctx.node().attr_int("batch_dims", 0);
  const int64_t last = idx.dim(-1);
  for (int64_t i = 0; i < b; ++i)
    if (idx.dim(i) != data.dim(i))
      return ctx.fail("batch dims of indices " + shape_to_string(idx.shape()) + " and data " +
                      shape_to_string(data.shape()) + " differ");
  int64_t batches = 1;
  for (int64_t i = 0; i < b; ++i) batches *= data.dim(i);
  const Shape ds = contiguous_strides(data.shape());
  int64_t slice = 1;
  for (int64_t i = b + last; i < data.rank(); ++i) slice *= data.dim(i);
  const int64_t batch_stride = b > 0 ? ds[static_cast<size_t>(b - 1)] : data.numel();
  const int64_t tuples = last > 0 ? idx.numel() / last : 0;
  const int64_t per_batch = batches > 0 ? tuples / batches : 0;
  const size_t row = static_cast<size_t>(slice) * es;
  const char* src = static_cast<const char*>(data.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t t = 0; t < tuples; ++t, dst += row) {
    int64_t off = (per_batch > 0 ? t / per_batch : 0) * batch_stride;
    for (int64_t k = 0; k < last; ++k) {
      const int64_t n = data.dim(b + k);
      int64_t v = index_at(idx, t * last + k);
      if (!wrap_index(v, n)) return index_error(ctx, index_at(idx, t * last + k), n, data.shape());
      off += v * ds[static_cast<size_t>(b + k)];
    }
    std::memcpy(dst, src + static_cast<size_t>(off) * es, row);
  }
  return Status::ok();
}

Status compress_kernel(runtime::KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, data.dtype()));
  // Bool bytes are read as bytes: a malformed model may hold values other than 0 and 1.
  const auto* c = cond.data<uint8_t>();
  const bool has_axis = ctx.node().has_attr("axis");
  // This kernel allocates its own output, so it cannot lean on inference having run.
  const int64_t axis = has_axis ? normalize_axis(ctx.node().attr_int("axis", 0), data.rank()) : 0;
  if (axis < 0 || (has_axis && data.rank() == 0))
    return ctx.fail("axis " + std::to_string(ctx.node().attr_int("axis", 0)) + " is out of range for " +
                    shape_to_string(data.shape()));
  if (cond.dtype() != DType::Bool || cond.rank() != 1) return ctx.fail("condition must be a 1-D bool tensor");
  const int64_t n = has_axis ? data.dim(axis) : data.numel();
  if (cond.numel() > n)
    return ctx.fail("condition has " + std::to_string(cond.numel()) + " entries for " + std::to_string(n) + " slices");
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.numel(); ++i)
    if (c[i]) keep.push_back(i);
  int64_t outer = 1, inner = 1;
  Shape shape{static_cast<int64_t>(keep.size())};
  if (has_axis) {
    shape = data.shape();
    shape[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
    for (int64_t i = 0; i < axis; ++i) outer *= data.dim(i);
    for (int64_t i = axis + 1; i < data.rank(); ++i) inner *= data.dim(i);
  }
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, data.dtype(), shape));
  const size_t row = static_cast<size_t>(inner) * es;
  const char* src = static_cast<const char*>(data.raw());
  char* dst = static_cast<char*>(out->raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : keep) {
      std::memcpy(dst, src + static_cast<size_t>(o * n + k) * row, row);
      dst += row;
    }
  return Status::ok();
}

Status nonzero_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> hits;
  const DType scan = x.dtype() == DType::Bool ? DType::U8 : x.dtype();
  const bool ok = visit_dtype(scan, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      if (p[i] != T(0)) hits.push_back(i);
  });
  if (!ok) return ctx.unsupported_case("NonZero does not support " + std::string(dtype_name(x.dtype())));
  const int64_t rank = std::max<int64_t>(x.rank(), 1);
  const auto nnz = static_cast<int64_t>(hits.size());
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::I64, {rank, nnz}));
  int64_t* o = out->data<int64_t>();
  const Shape st = x.rank() == 0 ? Shape{1} : contiguous_strides(x.shape());
  for (int64_t j = 0; j < nnz; ++j) {
    int64_t rem = hits[static_cast<size_t>(j)];
    for (int64_t d = 0; d < rank; ++d) {
      o[d * nnz + j] = rem / st[static_cast<size_t>(d)];
      rem %= st[static_cast<size_t>(d)];
    }
  }
  return Status::ok();
}

Status onehot_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& idx = ctx.input(0);
  const Tensor& values = ctx.input(2);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, values.dtype()));
  if (values.numel() != 2) return ctx.fail("values must have two elements [off, on]");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), out.rank());
  const int64_t depth = out.dim(axis);
  int64_t prefix = 1, suffix = 1;
  for (int64_t i = 0; i < axis; ++i) prefix *= out.dim(i);
  for (int64_t i = axis + 1; i < out.rank(); ++i) suffix *= out.dim(i);
  const char* off = static_cast<const char*>(values.raw());
  const char* on = off + es;
  fill_pattern(out.raw(), out.numel(), off, es);
  char* o = static_cast<char*>(out.raw());
  for (int64_t p = 0; p < prefix; ++p)
    for (int64_t s = 0; s < suffix; ++s) {
      auto v = static_cast<int64_t>(idx.at_double(p * suffix + s));
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;  // out-of-range classes stay all "off" (ONNX)
      std::memcpy(o + static_cast<size_t>((p * depth + v) * suffix + s) * es, on, es);
    }
  return Status::ok();
}

// --- Unique ----------------------------------------------------------------------------------------

// X seen as [outer, n, inner] around the axis (n = numel, outer = inner = 1 without one): the n items
// are the slices x[:, k, :], compared as their outer*inner values in order, lexicographically.
struct UniqueView {
  int64_t outer = 1, n = 0, inner = 1;
};

// Where the items fall after de-duplication. `order` lists the output items (sorted ascending, or in
// order of first occurrence); per output item: its first occurrence and count; per input item: the
// output item it equals.
struct UniqueResult {
  std::vector<int64_t> first, counts, inverse;
};

template <class T> inline bool nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
    return Eigen::numext::isnan(v);
  else
    return false;
}
// A total order: NaN after every number and equal to NaN (numpy's unique merges NaNs).
template <class T> inline int compare_values(T a, T b) {
  const bool an = nan_value(a), bn = nan_value(b);
  if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
  return a < b ? -1 : (b < a ? 1 : 0);
}

template <class T> UniqueResult unique_items(const T* rows, int64_t n, int64_t len, bool sorted) {
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t j = 0; j < len; ++j)
      if (int c = compare_values(rows[a * len + j], rows[b * len + j])) return c;
    return 0;
  };
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) perm[static_cast<size_t>(k)] = k;
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  UniqueResult r;
  r.inverse.assign(static_cast<size_t>(n), 0);
  for (size_t s = 0; s < perm.size(); ++s) {
    if (s == 0 || cmp(perm[s - 1], perm[s]) != 0) {
      r.first.push_back(perm[s]);  // stable: the run starts with the first occurrence
      r.counts.push_back(0);
    }
    r.counts.back() += 1;
    r.inverse[static_cast<size_t>(perm[s])] = static_cast<int64_t>(r.first.size()) - 1;
  }
  if (!sorted) {
    // Renumber the groups by first occurrence.
    std::vector<int64_t> by_first(r.first.size()), rank(r.first.size());
    for (size_t u = 0; u < by_first.size(); ++u) by_first[u] = static_cast<int64_t>(u);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return r.first[static_cast<size_t>(a)] < r.first[static_cast<size_t>(b)]; });
    UniqueResult o;
    for (size_t u = 0; u < by_first.size(); ++u) {
      rank[static_cast<size_t>(by_first[u])] = static_cast<int64_t>(u);
      o.first.push_back(r.first[static_cast<size_t>(by_first[u])]);
      o.counts.push_back(r.counts[static_cast<size_t>(by_first[u])]);
    }
    for (int64_t v : r.inverse) o.inverse.push_back(rank[static_cast<size_t>(v)]);
    return o;
  }
  return r;
}

// The items as contiguous rows of outer*inner values (a copy unless they already are).
template <class T> UniqueResult unique_typed(const Tensor& x, const UniqueView& v, bool sorted) {
  const T* p = static_cast<const T*>(x.raw());
  const int64_t len = v.outer * v.inner;
  if (v.outer == 1) return unique_items(p, v.n, len, sorted);
  std::vector<T> rows(static_cast<size_t>(v.n * len));
  for (int64_t k = 0; k < v.n; ++k)
    for (int64_t o = 0; o < v.outer; ++o)
      std::copy(p + (o * v.n + k) * v.inner, p + (o * v.n + k + 1) * v.inner, rows.begin() + k * len + o * v.inner);
  return unique_items(rows.data(), v.n, len, sorted);
}

bool output_wanted(runtime::KernelContext& ctx, size_t i) {
  return i < ctx.num_outputs() && i < ctx.node().outputs.size() && !ctx.node().outputs[i].empty();
}

Status write_index_output(runtime::KernelContext& ctx, size_t i, const std::vector<int64_t>& v) {
  if (!output_wanted(ctx, i)) return Status::ok();
  MS_ASSIGN_OR_RETURN(Tensor * t, ctx.allocate_output(i, DType::I64, {static_cast<int64_t>(v.size())}));
  if (!v.empty()) std::memcpy(t->raw(), v.data(), v.size() * sizeof(int64_t));
  return Status::ok();
}

Status unique_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool has_axis = ctx.node().has_attr("axis");
  const int64_t axis_attr = ctx.node().attr_int("axis", 0);
  const int64_t axis = has_axis ? normalize_axis(axis_attr, x.rank()) : 0;
  if (axis < 0)
    return ctx.fail("attribute 'axis' = " + std::to_string(axis_attr) + " is out of range for X " +
                    shape_to_string(x.shape()));
  UniqueView v;
  v.n = x.numel();
  if (has_axis) {
    v.n = x.dim(axis);
    for (int64_t a = 0; a < x.rank(); ++a)
      if (a != axis) (a < axis ? v.outer : v.inner) *= x.dim(a);
  }
  const bool sorted = ctx.node().attr_int("sorted", 1) != 0;
  UniqueResult r;
  const DType scan = x.dtype() == DType::Bool ? DType::U8 : x.dtype();  // bools compare as their 0/1 bytes
  const bool ok = visit_dtype(scan, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) r = unique_typed<T>(x, v, sorted);
  });
  if (!ok) return ctx.unsupported_case("Unique does not support dtype " + std::string(dtype_name(x.dtype())));
  const auto u = static_cast<int64_t>(r.first.size());
  Shape ys{u};
  if (has_axis) {
    ys = x.shape();
    ys[static_cast<size_t>(axis)] = u;
  }
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), ys));
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const char*>(x.raw());
  auto* dst = static_cast<char*>(y->raw());
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t j = 0; j < u; ++j)
      std::memcpy(dst + static_cast<size_t>((o * u + j) * v.inner) * es,
                  src + static_cast<size_t>((o * v.n + r.first[static_cast<size_t>(j)]) * v.inner) * es,
                  static_cast<size_t>(v.inner) * es);
  MS_RETURN_IF_ERROR(write_index_output(ctx, 1, r.first));
  MS_RETURN_IF_ERROR(write_index_output(ctx, 2, r.inverse));
  MS_RETURN_IF_ERROR(write_index_output(ctx, 3, r.counts));
  ctx.set_impl("stable_sort");
  return Status::ok();
}

}  // namespace

void register_scatter_kernels(runtime::KernelRegistry& r);  // tensor_scatter.cpp

void register_index_kernels(runtime::KernelRegistry& r) {
  r.add("Gather", gather_kernel);
  r.add("GatherElements", gather_elements_kernel);
  r.add("GatherND", gather_nd_kernel);
  r.add("Compress", compress_kernel);
  r.add("NonZero", nonzero_kernel);
  r.add("OneHot", onehot_kernel);
  r.add("Unique", unique_kernel);
  register_scatter_kernels(r);
}

}  // namespace ms::cpu::tensor
