// Conv and ConvTranspose schemas (ONNX opsets 1-17: the attributes did not change meaning).
#include "engine/ops/nn_geometry.h"
#include "engine/ops/nn_internal.h"

namespace ms::ops::nn {
namespace {

using std::to_string;

// Shared checks of X (0), W (1) and B (2); fills `x`/`w` with dims or -1s of the common rank.
Status check_conv_inputs(InferContext& ctx, bool transpose, std::vector<int64_t>& x, std::vector<int64_t>& w,
                         int64_t& rank) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  MS_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "W"));
  if (ctx.has_input(2)) MS_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "B"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 3, -1));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* wd, require_rank(ctx, 1, "W", 3, -1));
  rank = xd ? static_cast<int64_t>(xd->size()) : wd ? static_cast<int64_t>(wd->size()) : -1;
  if (xd && wd && xd->size() != wd->size())
    return ctx.fail("input 1 (W) " + dims_string(*wd) + " must have the rank of X " + dims_string(*xd));
  if (rank < 0) return Status::ok();
  x = xd ? *xd : std::vector<int64_t>(static_cast<size_t>(rank), -1);
  w = wd ? *wd : std::vector<int64_t>(static_cast<size_t>(rank), -1);
  const int64_t group = ctx.node.attr_int("group", 1);
  if (group < 1) return ctx.fail("attribute 'group' = " + to_string(group) + " must be >= 1");
  const int64_t c = x[1];
  if (c >= 0 && c % group != 0)
    return ctx.fail("input 0 (X) has " + to_string(c) + " channels, not divisible by group " + to_string(group));
  if (!transpose) {
    if (c >= 0 && w[1] >= 0 && w[1] * group != c)
      return ctx.fail("input 1 (W) " + dims_string(w) + " has " + to_string(w[1]) + " channels per group, X has " +
                      to_string(c / group) + " (" + to_string(c) + " channels in " + to_string(group) + " groups)");
    if (w[0] >= 0 && w[0] % group != 0)
      return ctx.fail("input 1 (W) has " + to_string(w[0]) + " output channels, not divisible by group " +
                      to_string(group));
  } else if (c >= 0 && w[0] >= 0 && w[0] != c) {
    return ctx.fail("input 1 (W) " + dims_string(w) + " has " + to_string(w[0]) + " input channels, X has " +
                    to_string(c));
  }
  if (ctx.has_input(2)) {
    MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* bd, require_rank(ctx, 2, "B", 1, 1));
    const int64_t m = transpose ? (w[1] >= 0 ? w[1] * group : -1) : w[0];
    if (bd && dims_conflict((*bd)[0], m))
      return ctx.fail("input 2 (B) has " + to_string((*bd)[0]) + " values, expected one per output channel (" +
                      to_string(m) + ")");
  }
  return Status::ok();
}

Status infer_conv(InferContext& ctx, bool transpose) {
  std::vector<int64_t> x, w;
  int64_t rank = -1;
  MS_RETURN_IF_ERROR(check_conv_inputs(ctx, transpose, x, w, rank));
  if (rank < 0) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  const std::vector<int64_t> in(x.begin() + 2, x.end()), k(w.begin() + 2, w.end());
  auto g = resolve_window(ctx.node, transpose ? WindowKind::ConvTranspose : WindowKind::Conv, in, k);
  if (!g) return ctx.fail(g.status().message());
  const int64_t group = ctx.node.attr_int("group", 1);
  std::vector<int64_t> out{x[0], transpose ? (w[1] >= 0 ? w[1] * group : -1) : w[0]};
  out.insert(out.end(), g->out.begin(), g->out.end());
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

// 2 * multiply-adds: each output (Conv) or input (ConvTranspose) element meets W.numel / W[0] weights.
Cost conv_cost(const CostContext& c, bool transpose) {
  Cost cost = io_cost(c, 0);
  const int64_t wn = static_numel(c.inputs[1]);
  const int64_t driver = static_numel(transpose ? c.inputs[0] : c.outputs[0]);
  if (wn > 0 && driver > 0 && (*c.inputs[1].dims)[0] > 0)
    cost.flops = 2.0 * static_cast<double>(driver) * static_cast<double>(wn / (*c.inputs[1].dims)[0]);
  if (c.inputs.size() > 2 && c.inputs[2].dtype != DType::Undefined) {
    const int64_t on = static_numel(c.outputs[0]);
    if (on > 0) cost.flops += static_cast<double>(on);
  }
  return cost;
}

}  // namespace

void register_conv_ops(Registry& r) {
  r.add(make_schema(
      "Conv", 1, 2, 3, 1, 1, OpCategory::Conv, [](InferContext& c) { return infer_conv(c, false); },
      [](const CostContext& c) { return conv_cost(c, false); }));
  r.add(make_schema(
      "ConvTranspose", 1, 2, 3, 1, 1, OpCategory::Conv, [](InferContext& c) { return infer_conv(c, true); },
      [](const CostContext& c) { return conv_cost(c, true); }));
}

}  // namespace ms::ops::nn
