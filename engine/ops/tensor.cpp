// Tensor and shape ops: registration entry point and the helpers the family shares.
#include <algorithm>

#include "engine/ops/families.h"
#include "engine/ops/tensor_internal.h"

namespace ms::ops {

void register_tensor_ops(Registry& r) {
  tensor::register_shape_ops(r);
  tensor::register_layout_ops(r);
  tensor::register_index_ops(r);
  tensor::register_misc_ops(r);
  tensor::register_resize_ops(r);
}

namespace tensor {

Cost bytes_moved_cost(const CostContext& c) {
  // Copy-style ops do no arithmetic; what they cost is reading their data and writing the result.
  Cost cost;
  for (const auto& t : c.inputs) {
    const int64_t n = static_numel(t);
    if (n > 0) cost.bytes += static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype));
  }
  for (const auto& t : c.outputs) {
    const int64_t n = static_numel(t);
    if (n > 0) cost.bytes += static_cast<double>(n) * static_cast<double>(dtype_size(t.dtype));
  }
  return cost;
}

OpSchema make_schema(std::string op, int min_in, int max_in, int min_out, int max_out, OpCategory cat,
                     std::function<Status(InferContext&)> infer) {
  OpSchema s;
  s.op_type = std::move(op);
  s.min_inputs = min_in;
  s.max_inputs = max_in;
  s.min_outputs = min_out;
  s.max_outputs = max_out;
  s.category = cat;
  s.infer = std::move(infer);
  s.cost = bytes_moved_cost;
  return s;
}

const Tensor* host_value(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.value(i);
  return t && t->defined() && t->device().is_cpu() ? t : nullptr;
}

Status check_size(const InferContext& ctx, const std::vector<int64_t>& dims) {
  // 2^48 elements is far beyond any host or device memory; above it, sizes in bytes could overflow.
  constexpr int64_t kMax = int64_t{1} << 48;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d <= 0) continue;
    if (__builtin_mul_overflow(n, d, &n) || n > kMax)
      return ctx.fail("output shape " + shape_to_string(dims) + " is too large");
  }
  return Status::ok();
}

std::optional<std::vector<int64_t>> known_ints(const InferContext& ctx, size_t i) {
  const Tensor* t = host_value(ctx, i);
  if (!t || !is_integer(t->dtype())) return std::nullopt;
  return t->to_int_vector();
}

std::optional<std::vector<int64_t>> ints_from_input_or_attr(const InferContext& ctx, bool from_input, size_t i,
                                                            const char* attr, bool& present) {
  if (from_input) {
    present = ctx.has_input(i);
    if (!present) return std::nullopt;
    return known_ints(ctx, i);
  }
  present = ctx.node.has_attr(attr);
  if (!present) return std::nullopt;
  return ctx.node.attr_ints(attr);
}

Status require_index_dtype(const InferContext& ctx, size_t i) {
  const DType t = ctx.in(i).dtype;
  if (t != DType::I32 && t != DType::I64)
    return ctx.fail("input " + std::to_string(i) + " must be i32 or i64, got " + std::string(dtype_name(t)));
  return Status::ok();
}

Status require_rank(const InferContext& ctx, size_t i, int64_t rank) {
  const auto* d = ctx.dims(i);
  if (d && static_cast<int64_t>(d->size()) != rank)
    return ctx.fail("input " + std::to_string(i) + " must have rank " + std::to_string(rank) + ", got " +
                    shape_to_string(*d));
  return Status::ok();
}

Status normalize_axes(std::vector<int64_t>& axes, int64_t rank, bool unique, std::string& err) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t& a : axes) {
    const int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank) {
      err = "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank);
      return invalid_model(err);
    }
    if (unique && seen[static_cast<size_t>(n)]) {
      err = "axis " + std::to_string(a) + " is repeated";
      return invalid_model(err);
    }
    seen[static_cast<size_t>(n)] = true;
    a = n;
  }
  return Status::ok();
}

SliceDim slice_dim(int64_t dim, int64_t start, int64_t end, int64_t step) {
  SliceDim s;
  s.step = step;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    s.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - 1, 0));
    end = std::clamp<int64_t>(end, -1, dim - 1);
    s.count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    if (dim == 0) s.count = 0;
  }
  s.start = start;
  return s;
}

bool moves_only_unit_dims(const Shape& in, const std::vector<int64_t>& perm) {
  const auto rank = static_cast<int64_t>(in.size());
  if (static_cast<int64_t>(perm.size()) != rank) return false;
  int64_t last = -1;
  for (int64_t p : perm) {
    if (p < 0) p += rank;
    if (p < 0 || p >= rank) return false;
    if (in[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

bool compute_slice(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                   std::vector<int64_t> axes, std::vector<int64_t> steps, std::vector<SliceDim>& out,
                   std::string& err) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size()) {
    err = "starts and ends must have the same length (" + std::to_string(starts.size()) + " vs " +
          std::to_string(ends.size()) + ")";
    return false;
  }
  if (axes.empty()) {
    if (static_cast<int64_t>(starts.size()) > rank) {
      err = "starts has more entries than the input has dims";
      return false;
    }
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    err = "starts, ends, axes and steps must have the same length";
    return false;
  }
  if (!normalize_axes(axes, rank, true, err).is_ok()) return false;
  out.assign(in.size(), SliceDim{});
  for (size_t d = 0; d < in.size(); ++d) out[d] = SliceDim{0, 1, in[d]};
  for (size_t i = 0; i < axes.size(); ++i) {
    if (steps[i] == 0) {
      err = "slice step must not be 0";
      return false;
    }
    const auto a = static_cast<size_t>(axes[i]);
    out[a] = slice_dim(in[a], starts[i], ends[i], steps[i]);
  }
  return true;
}

bool expand_pads(const std::vector<int64_t>& pads, const std::vector<int64_t>* axes, int64_t rank,
                 std::vector<int64_t>& out, std::string& err) {
  std::vector<int64_t> ax;
  if (axes) {
    ax = *axes;
    if (!normalize_axes(ax, rank, true, err).is_ok()) return false;
  } else {
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  if (pads.size() != 2 * ax.size()) {
    err = "pads must have " + std::to_string(2 * ax.size()) + " entries, got " + std::to_string(pads.size());
    return false;
  }
  out.assign(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < ax.size(); ++i) {
    out[static_cast<size_t>(ax[i])] = pads[i];
    out[static_cast<size_t>(ax[i] + rank)] = pads[i + ax.size()];
  }
  return true;
}

}  // namespace tensor
}  // namespace ms::ops
