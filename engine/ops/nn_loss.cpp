// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12/13): reduction none/sum/mean,
// ignore_index, optional per-class weights.
#include "engine/ops/nn_internal.h"

namespace ms::ops::nn {
namespace {

using std::to_string;

// Checks scores (N, C, d1..dk), labels (N, d1..dk) and weights (C); sets output 0.
Status infer_loss_common(InferContext& ctx, const char* scores_name, const char* labels_name) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, scores_name));
  const DType lt = ctx.in(1).dtype;
  if (lt != DType::I32 && lt != DType::I64)
    return ctx.fail("input 1 (" + std::string(labels_name) + ") must be i32 or i64, got " +
                    std::string(dtype_name(lt)));
  const std::string reduction = ctx.node.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return ctx.fail("attribute 'reduction' = '" + reduction + "' is not one of none, sum, mean");
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* sd, require_rank(ctx, 0, scores_name, 2, -1));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* ld, require_rank(ctx, 1, labels_name, 1, -1));
  if (sd && ld) {
    bool ok = ld->size() + 1 == sd->size() && !dims_conflict((*sd)[0], (*ld)[0]);
    for (size_t i = 1; ok && i < ld->size(); ++i) ok = !dims_conflict((*ld)[i], (*sd)[i + 1]);
    if (!ok)
      return ctx.fail("input 1 (" + std::string(labels_name) + ") " + dims_string(*ld) + " must be input 0 " +
                      dims_string(*sd) + " without the class axis 1");
  }
  if (ctx.has_input(2)) {
    MS_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "weights"));
    MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* wd, require_rank(ctx, 2, "weights", 1, 1));
    if (wd && sd && dims_conflict((*wd)[0], (*sd)[1]))
      return ctx.fail("input 2 (weights) has " + to_string((*wd)[0]) + " values, there are " + to_string((*sd)[1]) +
                      " classes");
  }
  const DType t = ctx.in(0).dtype;
  if (reduction != "none")
    ctx.set_output(0, t, {});
  else if (ld)
    ctx.set_output(0, t, *ld);
  else
    ctx.set_output_rank_unknown(0, t);
  return Status::ok();
}

Status infer_nll(InferContext& ctx) { return infer_loss_common(ctx, "input", "target"); }

Status infer_sce(InferContext& ctx) {
  MS_RETURN_IF_ERROR(infer_loss_common(ctx, "scores", "labels"));
  if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty()) {
    if (const auto* sd = ctx.dims(0))
      ctx.set_output(1, ctx.in(0).dtype, *sd);
    else
      ctx.set_output_rank_unknown(1, ctx.in(0).dtype);
  }
  return Status::ok();
}

}  // namespace

void register_loss_ops(Registry& r) {
  r.add(make_schema("NegativeLogLikelihoodLoss", 12, 2, 3, 1, 1, OpCategory::Other, infer_nll,
                    [](const CostContext& c) { return io_cost(c, 2); }));
  r.add(make_schema("SoftmaxCrossEntropyLoss", 12, 2, 3, 1, 2, OpCategory::Other, infer_sce, [](const CostContext& c) {
    Cost cost = io_cost(c, 0);
    const int64_t n = static_numel(c.inputs[0]);
    if (n > 0) cost.flops = 6.0 * static_cast<double>(n);  // exp, log, sums over the scores
    return cost;
  }));
}

}  // namespace ms::ops::nn
