// Softmax, LogSoftmax, Hardmax (opset < 13: "flatten to 2-D at axis", default axis 1; opset >= 13: one
// axis, default -1) and Dropout (inference: identity; opset 12 moved ratio/training_mode to inputs).
#include "engine/ops/nn_internal.h"

namespace ms::ops::nn {
namespace {

using std::to_string;

Status infer_softmax(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "input"));
  const std::vector<int64_t>* xd = ctx.dims(0);
  if (!xd) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  const auto r = static_cast<int64_t>(xd->size());
  const int64_t axis = ctx.node.attr_int("axis", ctx.opset >= 13 ? -1 : 1);
  // Rank 0 is accepted as a single element (axis 0 or -1), as onnxruntime does.
  if (normalize_axis(axis, std::max<int64_t>(r, 1)) < 0)
    return ctx.fail("attribute 'axis' = " + to_string(axis) + " is out of range for input " + dims_string(*xd));
  ctx.set_output(0, ctx.in(0).dtype, *xd);
  return Status::ok();
}

Status infer_dropout(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "data"));
  if (ctx.opset < 12 && ctx.num_inputs() > 1) return ctx.fail("takes one input before opset 12");
  if (ctx.has_input(1)) {
    MS_RETURN_IF_ERROR(require_float(ctx, 1, "ratio"));
    if (const Tensor* v = ctx.value(1); v && v->numel() == 1) {
      const double ratio = v->at_double(0);
      if (!(ratio >= 0 && ratio < 1)) return ctx.fail("ratio " + to_string(ratio) + " must be in [0, 1)");
    }
  }
  if (ctx.has_input(2) && ctx.in(2).dtype != DType::Bool)
    return ctx.fail("input 2 (training_mode) must be bool, got " + std::string(dtype_name(ctx.in(2).dtype)));
  const float ratio_attr = ctx.node.attr_float("ratio", 0.5f);
  if (!(ratio_attr >= 0 && ratio_attr < 1)) return ctx.fail("attribute 'ratio' must be in [0, 1)");
  const DType mask_type = ctx.opset >= 10 ? DType::Bool : ctx.in(0).dtype;
  const std::vector<int64_t>* xd = ctx.dims(0);
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const DType t = i == 0 ? ctx.in(0).dtype : mask_type;
    if (xd)
      ctx.set_output(i, t, *xd);
    else
      ctx.set_output_rank_unknown(i, t);
  }
  return Status::ok();
}

}  // namespace

void register_softmax_ops(Registry& r) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    r.add(make_schema(op, 1, 1, 1, 1, 1, OpCategory::Activation, infer_softmax,
                      [](const CostContext& c) { return io_cost(c, 5); }));
  r.add(make_schema("Dropout", 7, 1, 3, 1, 2, OpCategory::Activation, infer_dropout,
                    [](const CostContext& c) { return io_cost(c, 1); }));
}

}  // namespace ms::ops::nn
