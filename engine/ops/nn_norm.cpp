// Normalization schemas: BatchNormalization, InstanceNormalization, LayerNormalization, LRN, MVN,
// LpNormalization, GroupNormalization.
#include "engine/ops/nn_internal.h"

namespace ms::ops::nn {
namespace {

using std::to_string;

// Input i must be rank 1 with `c` values (c < 0: unknown).
Status require_per_channel(const InferContext& ctx, size_t i, const char* name, int64_t c) {
  MS_RETURN_IF_ERROR(require_float(ctx, i, name));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* d, require_rank(ctx, i, name, 1, 1));
  if (d && dims_conflict((*d)[0], c))
    return ctx.fail("input " + to_string(i) + " (" + name + ") has " + to_string((*d)[0]) + " values, X has " +
                    to_string(c) + " channels");
  return Status::ok();
}

// Training mode: opset >= 14 says so with an attribute; earlier opsets by asking for the extra outputs.
bool batchnorm_training(const InferContext& ctx) {
  if (ctx.opset >= 14) return ctx.node.attr_int("training_mode", 0) != 0;
  for (size_t i = 1; i < ctx.node.outputs.size(); ++i)
    if (!ctx.node.outputs[i].empty()) return true;
  return false;
}

Status infer_batchnorm(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 2, -1));
  const int64_t c = xd ? (*xd)[1] : -1;
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) MS_RETURN_IF_ERROR(require_per_channel(ctx, i, names[i], c));
  const size_t max_out = ctx.opset >= 14 ? 3 : 5;
  if (ctx.node.outputs.size() > max_out)
    return ctx.fail("has " + to_string(ctx.node.outputs.size()) + " outputs, opset " + to_string(ctx.opset) +
                    " allows at most " + to_string(max_out));
  const bool training = batchnorm_training(ctx);
  if (!training && ctx.node.outputs.size() > 1)
    return ctx.fail("outputs running_mean/running_var are only defined when training_mode=1");
  if (ctx.node.attr_float("epsilon", 1e-5f) < 0) return ctx.fail("attribute 'epsilon' must be >= 0");
  if (xd)
    ctx.set_output(0, ctx.in(0).dtype, *xd);
  else
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
  for (size_t i = 1; i < ctx.outputs.size(); ++i)
    if (!ctx.node.outputs[i].empty())
      ctx.set_output(i, ctx.in(i % 2 == 1 ? 3 : 4).dtype, {c});  // means, then variances
  return Status::ok();
}

Status infer_instancenorm(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 3, -1));
  const int64_t c = xd ? (*xd)[1] : -1;
  MS_RETURN_IF_ERROR(require_per_channel(ctx, 1, "scale", c));
  MS_RETURN_IF_ERROR(require_per_channel(ctx, 2, "B", c));
  if (xd)
    ctx.set_output(0, ctx.in(0).dtype, *xd);
  else
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
  return Status::ok();
}

// Scale/B must broadcast onto the normalized trailing dims X[axis:].
Status require_broadcast_to_tail(const InferContext& ctx, size_t i, const char* name, const std::vector<int64_t>& x,
                                 int64_t axis) {
  MS_RETURN_IF_ERROR(require_same_dtype(ctx, i, name));
  const std::vector<int64_t>* d = ctx.dims(i);
  if (!d) return Status::ok();
  const std::vector<int64_t> tail(x.begin() + axis, x.end());
  bool ok = d->size() <= tail.size();
  for (size_t j = 0; ok && j < d->size(); ++j) {
    const int64_t a = (*d)[d->size() - 1 - j], b = tail[tail.size() - 1 - j];
    ok = a == 1 || a < 0 || b < 0 || a == b;
  }
  if (!ok)
    return ctx.fail("input " + to_string(i) + " (" + name + ") " + dims_string(*d) +
                    " does not broadcast to the normalized dims " + dims_string(tail) + " of X " + dims_string(x));
  return Status::ok();
}

Status infer_layernorm(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  const std::vector<int64_t>* xd = ctx.dims(0);
  const int64_t stash = ctx.node.attr_int("stash_type", 1);
  auto stash_dtype = dtype_from_onnx(static_cast<int>(stash));
  if (!stash_dtype || !is_float(*stash_dtype))
    return ctx.fail("attribute 'stash_type' = " + to_string(stash) + " is not a float type");
  if (!xd) {
    for (size_t i = 0; i < ctx.outputs.size(); ++i)
      if (!ctx.node.outputs[i].empty()) ctx.set_output_rank_unknown(i, i == 0 ? ctx.in(0).dtype : *stash_dtype);
    return Status::ok();
  }
  const auto r = static_cast<int64_t>(xd->size());
  const int64_t axis_attr = ctx.node.attr_int("axis", -1);
  const int64_t axis = normalize_axis(axis_attr, r);
  if (axis < 0 || r == 0)
    return ctx.fail("attribute 'axis' = " + to_string(axis_attr) + " is out of range for X " + dims_string(*xd));
  MS_RETURN_IF_ERROR(require_broadcast_to_tail(ctx, 1, "Scale", *xd, axis));
  if (ctx.has_input(2)) MS_RETURN_IF_ERROR(require_broadcast_to_tail(ctx, 2, "B", *xd, axis));
  std::vector<int64_t> stat(xd->begin(), xd->begin() + axis);
  stat.resize(static_cast<size_t>(r), 1);
  ctx.set_output(0, ctx.in(0).dtype, *xd);
  for (size_t i = 1; i < ctx.outputs.size(); ++i)
    if (!ctx.node.outputs[i].empty()) ctx.set_output(i, *stash_dtype, stat);
  return Status::ok();
}

Status infer_lrn(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 3, -1));
  if (!ctx.node.has_attr("size")) return ctx.fail("attribute 'size' is required");
  if (ctx.node.attr_int("size", 0) < 1)
    return ctx.fail("attribute 'size' must be >= 1, got " + to_string(ctx.node.attr_int("size", 0)));
  if (xd)
    ctx.set_output(0, ctx.in(0).dtype, *xd);
  else
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
  return Status::ok();
}

Status infer_mvn(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  const std::vector<int64_t>* xd = ctx.dims(0);
  if (!xd) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  for (int64_t a : ctx.node.attr_ints("axes", {0, 2, 3}))
    if (xd->empty() || normalize_axis(a, static_cast<int64_t>(xd->size())) < 0)  // axes index real dims
      return ctx.fail("axis " + to_string(a) + " is out of range for X " + dims_string(*xd));
  ctx.set_output(0, ctx.in(0).dtype, *xd);
  return Status::ok();
}

Status infer_lpnorm(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "input"));
  const int64_t p = ctx.node.attr_int("p", 2);
  if (p != 1 && p != 2) return ctx.fail("attribute 'p' must be 1 or 2, got " + to_string(p));
  const std::vector<int64_t>* xd = ctx.dims(0);
  if (!xd) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  const int64_t axis = ctx.node.attr_int("axis", -1);
  if (normalize_axis(axis, static_cast<int64_t>(xd->size())) < 0)
    return ctx.fail("attribute 'axis' = " + to_string(axis) + " is out of range for input " + dims_string(*xd));
  ctx.outputs[0] = ctx.in(0);
  return Status::ok();
}

// Scale and bias: one value per channel from opset 21, one per group before.
Status infer_groupnorm(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 2, -1));
  if (!ctx.node.has_attr("num_groups")) return ctx.fail("attribute 'num_groups' is required");
  const int64_t groups = ctx.node.attr_int("num_groups", 0);
  if (groups < 1) return ctx.fail("attribute 'num_groups' must be >= 1, got " + to_string(groups));
  const int64_t c = xd ? (*xd)[1] : -1;
  if (c >= 0 && c % groups != 0)
    return ctx.fail("attribute 'num_groups' = " + to_string(groups) + " does not divide the " + to_string(c) +
                    " channels of X " + dims_string(*xd));
  const int64_t stash = ctx.node.attr_int("stash_type", 1);
  const auto stash_dtype = dtype_from_onnx(static_cast<int>(stash));
  if (!stash_dtype || !is_float(*stash_dtype))
    return ctx.fail("attribute 'stash_type' = " + to_string(stash) + " is not a float type");
  const bool per_channel = ctx.opset >= 21;
  const int64_t want = per_channel ? c : groups;
  for (size_t i : {size_t{1}, size_t{2}}) {
    const char* name = i == 1 ? "scale" : "bias";
    MS_RETURN_IF_ERROR(require_same_dtype(ctx, i, name));
    MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* d, require_rank(ctx, i, name, 1, 1));
    if (d && dims_conflict((*d)[0], want))
      return ctx.fail("input " + to_string(i) + " (" + name + ") has " + to_string((*d)[0]) + " values, expected " +
                      to_string(want) + (per_channel ? " (one per channel of X)" : " (one per group, opset < 21)"));
  }
  if (xd)
    ctx.set_output(0, ctx.in(0).dtype, *xd);
  else
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
  return Status::ok();
}

}  // namespace

void register_norm_ops(Registry& r) {
  r.add(make_schema("BatchNormalization", 7, 5, 5, 1, 5, OpCategory::Norm, infer_batchnorm,
                    [](const CostContext& c) { return io_cost(c, 2); }));
  r.add(make_schema("InstanceNormalization", 1, 3, 3, 1, 1, OpCategory::Norm, infer_instancenorm,
                    [](const CostContext& c) { return io_cost(c, 6); }));
  // Standard from opset 17; ONNX Runtime also takes it below 17 (its contrib op of the same name in
  // ai.onnx, which older transformer exports use), and so do we.
  r.add(make_schema("LayerNormalization", 1, 2, 3, 1, 3, OpCategory::Norm, infer_layernorm,
                    [](const CostContext& c) { return io_cost(c, 8); }));
  r.add(make_schema("LRN", 1, 1, 1, 1, 1, OpCategory::Norm, infer_lrn, [](const CostContext& c) {
    return io_cost(c, 2.0 * static_cast<double>(c.node.attr_int("size", 1)) + 4);
  }));
  r.add(make_schema("LpNormalization", 1, 1, 1, 1, 1, OpCategory::Norm, infer_lpnorm,
                    [](const CostContext& c) { return io_cost(c, 3); }));
  r.add(make_schema("GroupNormalization", 18, 3, 3, 1, 1, OpCategory::Norm, infer_groupnorm,
                    [](const CostContext& c) { return io_cost(c, 6); }));
  r.add(make_schema("MeanVarianceNormalization", 9, 1, 1, 1, 1, OpCategory::Norm, infer_mvn,
                    [](const CostContext& c) { return io_cost(c, 6); }));
}

}  // namespace ms::ops::nn
