// Index-driven ops: Gather, GatherElements, GatherND, ScatterElements (and old Scatter), ScatterND,
// Compress, NonZero, OneHot, Unique. Index values are only known at run time, so the kernels check
// them; inference checks ranks, dtypes and the shapes that indices imply.
#include <algorithm>

#include "engine/ops/tensor_internal.h"

namespace ms::ops::tensor {
namespace {

int64_t norm_axis_attr(const InferContext& ctx, int64_t rank, int64_t fallback, int64_t& axis) {
  const int64_t a = ctx.node.attr_int("axis", fallback);
  axis = a < 0 ? a + rank : a;
  return a;
}

Status infer_gather(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  MS_RETURN_IF_ERROR(require_index_dtype(ctx, 1));
  const auto* data = ctx.dims(0);
  const auto* idx = ctx.dims(1);
  if (!data || !idx) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(data->size());
  int64_t axis = 0;
  const int64_t a = norm_axis_attr(ctx, rank, 0, axis);
  if (rank < 1 || axis < 0 || axis >= rank)
    return ctx.fail("axis " + std::to_string(a) + " out of range for data " + shape_to_string(*data));
  std::vector<int64_t> out(data->begin(), data->begin() + axis);
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + axis + 1, data->end());
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_gather_elements(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  MS_RETURN_IF_ERROR(require_index_dtype(ctx, 1));
  const auto* data = ctx.dims(0);
  const auto* idx = ctx.dims(1);
  if (data && idx) {
    const auto rank = static_cast<int64_t>(data->size());
    int64_t axis = 0;
    const int64_t a = norm_axis_attr(ctx, rank, 0, axis);
    if (rank < 1 || axis < 0 || axis >= rank)
      return ctx.fail("axis " + std::to_string(a) + " out of range for data " + shape_to_string(*data));
    if (idx->size() != data->size())
      return ctx.fail("indices " + shape_to_string(*idx) + " must have the rank of data " + shape_to_string(*data));
  }
  if (idx)
    ctx.set_output(0, dt, *idx);
  else
    ctx.set_output_rank_unknown(0, dt);
  return Status::ok();
}

Status infer_gather_nd(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  if (ctx.in(1).dtype != DType::I64 && ctx.in(1).dtype != DType::I32) return ctx.fail("indices must be i64");
  const auto* data = ctx.dims(0);
  const auto* idx = ctx.dims(1);
  const int64_t b = ctx.node.attr_int("batch_dims", 0);
  if (!data || !idx || idx->empty() || idx->back() < 0) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto r = static_cast<int64_t>(data->size());
  const auto q = static_cast<int64_t>(idx->size());
  const int64_t last = idx->back();
  if (r < 1 || q < 1 || b < 0 || b >= std::min(r, q) || last < 1 || last > r - b)
    return ctx.fail("indices " + shape_to_string(*idx) + " do not fit data " + shape_to_string(*data) +
                    " with batch_dims " + std::to_string(b));
  for (int64_t i = 0; i < b; ++i) {
    const int64_t x = (*data)[static_cast<size_t>(i)], y = (*idx)[static_cast<size_t>(i)];
    if (x >= 0 && y >= 0 && x != y)
      return ctx.fail("batch dims of data " + shape_to_string(*data) + " and indices " + shape_to_string(*idx) +
                      " differ");
  }
  std::vector<int64_t> out(idx->begin(), idx->end() - 1);
  out.insert(out.end(), data->begin() + b + last, data->end());
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status check_reduction(const InferContext& ctx) {
  const std::string red = ctx.node.attr_string("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return ctx.fail("reduction '" + red + "' is not supported");
  return Status::ok();
}

Status infer_scatter_elements(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  MS_RETURN_IF_ERROR(require_index_dtype(ctx, 1));
  MS_RETURN_IF_ERROR(check_reduction(ctx));
  if (ctx.in(2).dtype != dt) return ctx.fail("updates must have the dtype of data");
  const auto* data = ctx.dims(0);
  const auto* idx = ctx.dims(1);
  const auto* upd = ctx.dims(2);
  if (idx && upd && *idx != *upd) {
    for (size_t i = 0; i < std::min(idx->size(), upd->size()); ++i)
      if ((*idx)[i] >= 0 && (*upd)[i] >= 0 && (*idx)[i] != (*upd)[i])
        return ctx.fail("indices " + shape_to_string(*idx) + " and updates " + shape_to_string(*upd) + " differ");
    if (idx->size() != upd->size()) return ctx.fail("indices and updates must have the same shape");
  }
  if (data) {
    const auto rank = static_cast<int64_t>(data->size());
    int64_t axis = 0;
    const int64_t a = norm_axis_attr(ctx, rank, 0, axis);
    if (rank < 1 || axis < 0 || axis >= rank)
      return ctx.fail("axis " + std::to_string(a) + " out of range for data " + shape_to_string(*data));
    if (idx && idx->size() != data->size())
      return ctx.fail("indices " + shape_to_string(*idx) + " must have the rank of data " + shape_to_string(*data));
    ctx.set_output(0, dt, *data);
  } else {
    ctx.set_output_rank_unknown(0, dt);
  }
  return Status::ok();
}

Status infer_scatter_nd(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  if (ctx.in(1).dtype != DType::I64 && ctx.in(1).dtype != DType::I32) return ctx.fail("indices must be i64");
  MS_RETURN_IF_ERROR(check_reduction(ctx));
  if (ctx.in(2).dtype != dt) return ctx.fail("updates must have the dtype of data");
  const auto* data = ctx.dims(0);
  const auto* idx = ctx.dims(1);
  const auto* upd = ctx.dims(2);
  if (data && idx && !idx->empty() && idx->back() >= 0) {
    const int64_t last = idx->back();
    if (last > static_cast<int64_t>(data->size()) || last < 1)
      return ctx.fail("indices " + shape_to_string(*idx) + " do not fit data " + shape_to_string(*data));
    if (upd) {
      std::vector<int64_t> want(idx->begin(), idx->end() - 1);
      want.insert(want.end(), data->begin() + last, data->end());
      bool ok = want.size() == upd->size();
      for (size_t i = 0; ok && i < want.size(); ++i) ok = want[i] < 0 || (*upd)[i] < 0 || want[i] == (*upd)[i];
      if (!ok) return ctx.fail("updates " + shape_to_string(*upd) + " must be " + shape_to_string(want));
    }
  }
  if (data)
    ctx.set_output(0, dt, *data);
  else
    ctx.set_output_rank_unknown(0, dt);
  return Status::ok();
}

Status infer_compress(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  if (ctx.in(1).dtype != DType::Bool) return ctx.fail("condition must be bool");
  MS_RETURN_IF_ERROR(require_rank(ctx, 1, 1));
  const auto* data = ctx.dims(0);
  if (!ctx.node.has_attr("axis")) {
    ctx.set_output(0, dt, {-1});
    return Status::ok();
  }
  if (!data) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(data->size());
  int64_t axis = 0;
  const int64_t a = norm_axis_attr(ctx, rank, 0, axis);
  if (axis < 0 || axis >= rank)
    return ctx.fail("axis " + std::to_string(a) + " out of range for " + shape_to_string(*data));
  std::vector<int64_t> out = *data;
  out[static_cast<size_t>(axis)] = -1;  // data-dependent
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_nonzero(InferContext& ctx) {
  const auto* data = ctx.dims(0);
  ctx.set_output(0, DType::I64, {data ? std::max<int64_t>(static_cast<int64_t>(data->size()), 1) : -1, -1});
  return Status::ok();
}

Status infer_onehot(InferContext& ctx) {
  if (!is_numeric(ctx.in(0).dtype) || !is_numeric(ctx.in(1).dtype))
    return ctx.fail("indices and depth must be numeric");
  MS_RETURN_IF_ERROR(require_rank(ctx, 2, 1));
  const DType dt = ctx.in(2).dtype;
  const auto* vd = ctx.dims(2);
  if (vd && (*vd)[0] >= 0 && (*vd)[0] != 2) return ctx.fail("values must have two elements [off, on]");
  const auto* dd = ctx.dims(1);
  if (dd && !(dd->empty() || (dd->size() == 1 && (*dd)[0] == 1))) return ctx.fail("depth must be a scalar");
  const auto* idx = ctx.dims(0);
  if (!idx) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const auto out_rank = static_cast<int64_t>(idx->size()) + 1;
  int64_t axis = 0;
  const int64_t a = norm_axis_attr(ctx, out_rank, -1, axis);
  if (axis < 0 || axis >= out_rank) return ctx.fail("axis " + std::to_string(a) + " out of range");
  int64_t depth = -1;
  if (const Tensor* d = host_value(ctx, 1)) {
    if (d->numel() != 1) return ctx.fail("depth must be a scalar");
    const double dv = d->at_double(0);
    if (!(dv >= 1 && dv < 1e12)) return ctx.fail("depth must be >= 1, got " + std::to_string(dv));
    depth = static_cast<int64_t>(dv);
  }
  std::vector<int64_t> out = *idx;
  out.insert(out.begin() + axis, depth);
  MS_RETURN_IF_ERROR(check_size(ctx, out));
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

// Unique: how many distinct values (or slices along `axis`) there are depends on the data, so Y,
// indices and counts have an unknown dim; inverse_indices has one entry per element (or slice).
Status infer_unique(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  const int64_t sorted = ctx.node.attr_int("sorted", 1);
  if (sorted != 0 && sorted != 1) return ctx.fail("attribute 'sorted' must be 0 or 1, got " + std::to_string(sorted));
  const auto* dims = ctx.dims(0);
  const bool has_axis = ctx.node.has_attr("axis");
  int64_t inverse = -1;
  if (!dims) {
    if (has_axis)
      ctx.set_output_rank_unknown(0, dt);
    else
      ctx.set_output(0, dt, {-1});
  } else if (has_axis) {
    const auto rank = static_cast<int64_t>(dims->size());
    int64_t axis = 0;
    const int64_t a = norm_axis_attr(ctx, rank, 0, axis);
    if (axis < 0 || axis >= rank)
      return ctx.fail("attribute 'axis' = " + std::to_string(a) + " is out of range for X " + shape_to_string(*dims));
    std::vector<int64_t> y = *dims;
    inverse = y[static_cast<size_t>(axis)];
    y[static_cast<size_t>(axis)] = -1;
    ctx.set_output(0, dt, std::move(y));
  } else {
    inverse = static_numel(ctx.in(0));
    ctx.set_output(0, dt, {-1});
  }
  for (size_t i = 1; i < ctx.outputs.size(); ++i)
    if (!ctx.node.outputs[i].empty()) ctx.set_output(i, DType::I64, {i == 2 ? inverse : -1});
  return Status::ok();
}

}  // namespace

void register_index_ops(Registry& r) {
  r.add(make_schema("Gather", 2, 2, 1, 1, OpCategory::Data, infer_gather));
  r.add(make_schema("GatherElements", 2, 2, 1, 1, OpCategory::Data, infer_gather_elements));
  r.add(make_schema("GatherND", 2, 2, 1, 1, OpCategory::Data, infer_gather_nd));
  r.add(make_schema("ScatterElements", 3, 3, 1, 1, OpCategory::Data, infer_scatter_elements));
  r.add(make_schema("Scatter", 3, 3, 1, 1, OpCategory::Data, infer_scatter_elements));
  r.add(make_schema("ScatterND", 3, 3, 1, 1, OpCategory::Data, infer_scatter_nd));
  r.add(make_schema("Compress", 2, 2, 1, 1, OpCategory::Data, infer_compress));
  r.add(make_schema("NonZero", 1, 1, 1, 1, OpCategory::Data, infer_nonzero));
  r.add(make_schema("OneHot", 3, 3, 1, 1, OpCategory::Data, infer_onehot));
  OpSchema unique = make_schema("Unique", 1, 1, 1, 4, OpCategory::Data, infer_unique);
  unique.since_version = 11;
  r.add(std::move(unique));
}

}  // namespace ms::ops::tensor
