// Layout kernels: Transpose, Concat, Split, Slice, Tile, Expand, Pad. Each one is a strided copy
// (see strided_copy: contiguous runs become memcpy) or an index-map gather.
#include <algorithm>

#include "engine/backends/cpu/byte_transpose.h"
#include "engine/backends/cpu/tensor_internal.h"
#include "engine/ops/tensor_internal.h"

namespace ms::cpu::tensor {
namespace {

// perm = (0..a-1, b..r-1, a..b-1) with a < b < r (negative entries normalized): the axes [a, b)
// and [b, r) trade places, a batched 2-D transpose of [a..b) x [b..r) matrices.
bool swaps_two_runs(std::vector<int64_t> perm, int64_t r, int64_t& a, int64_t& b) {
  if (static_cast<int64_t>(perm.size()) != r) return false;
  for (auto& p : perm) p = p < 0 ? p + r : p;
  a = 0;
  while (a < r && perm[static_cast<size_t>(a)] == a) ++a;
  if (a >= r) return false;
  b = perm[static_cast<size_t>(a)];
  if (b <= a || b >= r) return false;
  for (int64_t i = 0; i < r - b; ++i)
    if (perm[static_cast<size_t>(a + i)] != b + i) return false;
  for (int64_t i = 0; i < b - a; ++i)
    if (perm[static_cast<size_t>(a + (r - b) + i)] != a + i) return false;
  return true;
}

Status transpose_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  const auto rank = static_cast<int64_t>(in.rank());
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  const Shape is = contiguous_strides(in.shape());
  Shape src(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t p =
        perm[static_cast<size_t>(i)] < 0 ? perm[static_cast<size_t>(i)] + rank : perm[static_cast<size_t>(i)];
    src[static_cast<size_t>(i)] = is[static_cast<size_t>(p)];
  }
  // A compiled graph plans a transpose that only moves dims of size 1 as a view of its input
  // (compiler/views.h): the bytes are in order already.
  if (out.raw() == in.raw() && ops::tensor::moves_only_unit_dims(in.shape(), perm)) return Status::ok();
  // 8-bit tensors (a QDQ model's attention keys, [1, S, H, D] -> [1, H, D, S]) whose permutation
  // swaps two runs of axes: batched 2-D byte transposes instead of the element-wise strided copy.
  int64_t a = 0, b = 0;
  if (es == 1 && swaps_two_runs(perm, rank, a, b)) {
    const auto span = [&](int64_t from, int64_t to) {
      return numel(Shape(in.shape().begin() + from, in.shape().begin() + to));
    };
    transpose_bytes(static_cast<const uint8_t*>(in.raw()), static_cast<uint8_t*>(out.raw()), span(0, a), span(a, b),
                    span(b, rank));
    return Status::ok();
  }
  strided_copy(out.raw(), in.raw(), out.shape(), contiguous_strides(out.shape()), src, es);
  return Status::ok();
}

Status concat_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, out.dtype()));
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), out.rank());
  const Shape os = contiguous_strides(out.shape());
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    char* dst = static_cast<char*>(out.raw()) + static_cast<size_t>(offset * os[static_cast<size_t>(axis)]) * es;
    // A compiled graph may have planned the input inside the output already (memory_plan: `within`).
    if (in.raw() != dst) strided_copy(dst, in.raw(), in.shape(), os, contiguous_strides(in.shape()), es);
    offset += in.dim(axis);
  }
  return Status::ok();
}

Status split_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& in = ctx.input(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), in.rank());
  const Shape is = contiguous_strides(in.shape());
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    Tensor& out = ctx.output(i);
    const char* src =
        static_cast<const char*>(in.raw()) + static_cast<size_t>(offset * is[static_cast<size_t>(axis)]) * es;
    strided_copy(out.raw(), src, out.shape(), contiguous_strides(out.shape()), is, es);
    offset += out.dim(axis);
  }
  if (offset != in.dim(axis)) return ctx.fail("split outputs do not cover input " + shape_to_string(in.shape()));
  return Status::ok();
}

Status slice_kernel(runtime::KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MS_ASSIGN_OR_RETURN(SliceGeometry g, slice_geometry(ctx));
  Tensor& out = ctx.output(0);
  if (!out.defined()) {
    auto o = ctx.allocate_output(0, in.dtype(), g.shape);
    if (!o) return std::move(o).take_status();
  } else if (out.shape() != g.shape) {
    return ctx.fail("output " + shape_to_string(out.shape()) + " does not match slice " + shape_to_string(g.shape));
  }
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  if (numel(g.shape) == 0) return Status::ok();
  const char* from = static_cast<const char*>(in.raw()) + static_cast<size_t>(g.base) * es;
  // A compiled graph plans a contiguous slice as a view of its input (compiler/views.h): nothing to copy.
  if (ctx.output(0).raw() == from) return Status::ok();
  strided_copy(ctx.output(0).raw(), from, g.shape, contiguous_strides(g.shape), g.src_strides, es);
  return Status::ok();
}

Status tile_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  // View the output as [rep0, d0, rep1, d1, ...]; the source steps 0 over the repeat dims.
  const size_t rank = in.shape().size();
  const Shape is = contiguous_strides(in.shape());
  const Shape os = contiguous_strides(out.shape());
  Shape shape(2 * rank), ds(2 * rank), ss(2 * rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = in.shape()[i];
    shape[2 * i] = d == 0 ? 0 : out.shape()[i] / d;
    shape[2 * i + 1] = d;
    ds[2 * i] = d * os[i];
    ds[2 * i + 1] = os[i];
    ss[2 * i] = 0;
    ss[2 * i + 1] = is[i];
  }
  if (out.numel() == 0) return Status::ok();
  strided_copy(out.raw(), in.raw(), shape, ds, ss, es);
  return Status::ok();
}

Status expand_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  const size_t rank = out.shape().size();
  const size_t lead = rank - in.shape().size();
  const Shape is = contiguous_strides(in.shape());
  Shape ss(rank, 0);
  for (size_t i = lead; i < rank; ++i) {
    const int64_t d = in.shape()[i - lead];
    if (d != 1 && d != out.shape()[i])
      return ctx.fail("cannot expand " + shape_to_string(in.shape()) + " to " + shape_to_string(out.shape()));
    ss[i] = d == 1 ? 0 : is[i - lead];
  }
  strided_copy(out.raw(), in.raw(), out.shape(), contiguous_strides(out.shape()), ss, es);
  return Status::ok();
}

Status pad_kernel(runtime::KernelContext& ctx) {
  MS_RETURN_IF_ERROR(ensure_outputs(ctx));
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  MS_ASSIGN_OR_RETURN(size_t es, element_size(ctx, in.dtype()));
  const std::string mode = ctx.node().attr_string("mode", "constant");
  const auto rank = static_cast<int64_t>(in.rank());
  std::vector<int64_t> pads, axes;
  const bool has_axes = ctx.opset() >= 11 && ctx.has_input(3);
  if (ctx.opset() < 11) {
    pads = ctx.node().attr_ints(ctx.node().has_attr("pads") ? "pads" : "paddings");
  } else {
    pads = ctx.input(1).to_int_vector();
    if (has_axes) axes = ctx.input(3).to_int_vector();
  }
  std::vector<int64_t> full;
  std::string err;
  if (!ops::tensor::expand_pads(pads, has_axes ? &axes : nullptr, rank, full, err)) return ctx.fail(err);
  if (std::all_of(full.begin(), full.end(), [](int64_t p) { return p == 0; }) && out.shape() == in.shape()) {
    copy_if_distinct(in, out);  // a compiled graph plans it as a view of its input (compiler/views.h)
    return Status::ok();
  }
  alignas(16) unsigned char fill[16] = {0};
  if (ctx.opset() < 11) {
    store_double(in.dtype(), ctx.node().attr_float("value", 0.f), fill);
  } else if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    std::memcpy(fill, ctx.input(2).raw(), es);
  }
  if (mode == "constant") {
    fill_pattern(out.raw(), out.numel(), fill, es);
    Shape shape(static_cast<size_t>(rank));
    int64_t src_off = 0, dst_off = 0;
    const Shape is = contiguous_strides(in.shape()), os = contiguous_strides(out.shape());
    for (int64_t i = 0; i < rank; ++i) {
      const auto u = static_cast<size_t>(i);
      const int64_t b = full[u], e = full[static_cast<size_t>(i + rank)];
      shape[u] = in.shape()[u] - std::max<int64_t>(0, -b) - std::max<int64_t>(0, -e);
      if (shape[u] <= 0) return Status::ok();  // everything cropped away: all padding
      src_off += std::max<int64_t>(0, -b) * is[u];
      dst_off += std::max<int64_t>(0, b) * os[u];
    }
    strided_copy(static_cast<char*>(out.raw()) + static_cast<size_t>(dst_off) * es,
                 static_cast<const char*>(in.raw()) + static_cast<size_t>(src_off) * es, shape, os, is, es);
    return Status::ok();
  }
  std::vector<std::vector<int64_t>> maps(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) {
    const auto u = static_cast<size_t>(i);
    const int64_t n = in.shape()[u], b = full[u];
    if (n == 0 && out.shape()[u] > 0) return ctx.fail("cannot " + mode + "-pad an empty axis");
    auto& m = maps[u];
    m.resize(static_cast<size_t>(out.shape()[u]));
    for (int64_t o = 0; o < out.shape()[u]; ++o) {
      int64_t x = o - b;
      if (mode == "wrap") {
        x = ((x % n) + n) % n;
      } else if (mode == "edge" || n == 1) {
        x = std::clamp<int64_t>(x, 0, n - 1);
      } else {  // reflect without repeating the edge: period 2(n-1)
        const int64_t p = 2 * (n - 1);
        x = ((x % p) + p) % p;
        if (x >= n) x = p - x;
      }
      m[static_cast<size_t>(o)] = x;
    }
  }
  gather_by_axis_maps(out.raw(), out.shape(), in.raw(), in.shape(), maps, fill, es);
  return Status::ok();
}

}  // namespace

Expected<SliceGeometry> slice_geometry(runtime::KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.node().attr_ints("starts");
    ends = ctx.node().attr_ints("ends");
    axes = ctx.node().attr_ints("axes");
  } else {
    if (!ctx.has_input(1) || !ctx.has_input(2)) return ctx.fail("starts and ends inputs are required");
    for (size_t i = 1; i < 5 && i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i) && !ctx.input(i).device().is_cpu()) return ctx.fail("slice arguments must be host values");
    starts = ctx.input(1).to_int_vector();
    ends = ctx.input(2).to_int_vector();
    if (ctx.has_input(3)) axes = ctx.input(3).to_int_vector();
    if (ctx.has_input(4)) steps = ctx.input(4).to_int_vector();
  }
  std::vector<ops::tensor::SliceDim> dims;
  std::string err;
  if (!ops::tensor::compute_slice(in.shape(), starts, ends, axes, steps, dims, err))
    return ctx.fail(err + " (input " + shape_to_string(in.shape()) + ")");
  SliceGeometry g;
  g.shape.resize(dims.size());
  g.src_strides.resize(dims.size());
  const Shape is = contiguous_strides(in.shape());
  for (size_t i = 0; i < dims.size(); ++i) {
    g.shape[i] = dims[i].count;
    g.src_strides[i] = dims[i].step * is[i];
    if (g.shape[i] > 0) g.base += dims[i].start * is[i];
  }
  return g;
}

void register_layout_kernels(runtime::KernelRegistry& r) {
  r.add("Transpose", transpose_kernel);
  r.add("Concat", concat_kernel);
  r.add("Split", split_kernel);
  r.add("Slice", slice_kernel);
  r.add("Tile", tile_kernel);
  r.add("Expand", expand_kernel);
  r.add("Pad", pad_kernel);
}

}  // namespace ms::cpu::tensor
