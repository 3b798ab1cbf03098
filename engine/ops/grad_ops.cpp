#include "engine/ops/grad_ops.h"

#include "engine/ops/nn_geometry.h"

namespace ms::autodiff {
namespace {

Status infer_pool_grad(ops::InferContext& ctx) {
  const auto* x = ctx.dims(0);
  const auto* gy = ctx.dims(1);
  if (!is_float(ctx.in(0).dtype)) return ctx.fail("input X must be a float tensor");
  if (ctx.in(1).dtype != ctx.in(0).dtype) return ctx.fail("dY must have X's dtype");
  if (x && x->size() != 4)
    return ctx.fail("only 2-D pools (NCHW input) are supported, got rank " + std::to_string(x->size()));
  if (x && gy) {
    if (gy->size() != 4) return ctx.fail("dY must be rank 4");
    Shape in(x->begin() + 2, x->end());
    auto g = ops::resolve_window(ctx.node, ops::WindowKind::Pool, in, ctx.node.attr_ints("kernel_shape"));
    if (!g) return ctx.fail(g.status().message());
    if ((*gy)[0] != (*x)[0] || (*gy)[1] != (*x)[1] || (*gy)[2] != g->out[0] || (*gy)[3] != g->out[1])
      return ctx.fail("dY " + shape_to_string(*gy) + " does not match the pool output of X " + shape_to_string(*x));
  }
  if (x)
    ctx.set_output(0, ctx.in(0).dtype, *x);
  else
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
  return Status::ok();
}

ops::Cost pool_grad_cost(const ops::CostContext& c) {
  const int64_t n = c.outputs.empty() ? -1 : ops::static_numel(c.outputs[0]);
  const int64_t k = ms::numel(c.node.attr_ints("kernel_shape"));
  ops::Cost cost;
  if (n > 0) {
    cost.flops = static_cast<double>(n) * static_cast<double>(k);
    cost.bytes = 3.0 * static_cast<double>(n) * static_cast<double>(dtype_size(c.outputs[0].dtype));
  }
  return cost;
}

// ConvGradWeight(X, dY) -> dW: the weight gradient of a Conv with the same attributes (explicit
// pads, kernel_shape required). dW is [M, C/group, kernel...] with M from dY.
Status infer_conv_grad_weight(ops::InferContext& ctx) {
  const auto* x = ctx.dims(0);
  const auto* gy = ctx.dims(1);
  if (!is_float(ctx.in(0).dtype)) return ctx.fail("input X must be a float tensor");
  if (ctx.in(1).dtype != ctx.in(0).dtype) return ctx.fail("dY must have X's dtype");
  const std::vector<int64_t> kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.empty()) return ctx.fail("attribute kernel_shape is required");
  const int64_t group = ctx.node.attr_int("group", 1);
  if (group < 1) return ctx.fail("group must be positive, got " + std::to_string(group));
  const size_t rank = kernel.size() + 2;
  if (x && x->size() != rank)
    return ctx.fail("X must be rank " + std::to_string(rank) + " for a " + std::to_string(kernel.size()) +
                    "-D kernel, got " + shape_to_string(*x));
  if (gy && gy->size() != rank)
    return ctx.fail("dY must be rank " + std::to_string(rank) + ", got " + shape_to_string(*gy));
  int64_t m = gy ? (*gy)[1] : -1, cg = -1;
  if (x && (*x)[1] >= 0) {
    if ((*x)[1] % group != 0)
      return ctx.fail("X's channels " + std::to_string((*x)[1]) + " do not divide into " + std::to_string(group) +
                      " groups");
    cg = (*x)[1] / group;
  }
  if (m >= 0 && m % group != 0)
    return ctx.fail("dY's channels " + std::to_string(m) + " do not divide into " + std::to_string(group) + " groups");
  if (x && gy) {
    if ((*gy)[0] != (*x)[0])
      return ctx.fail("dY's batch " + std::to_string((*gy)[0]) + " differs from X's " + std::to_string((*x)[0]));
    Shape in(x->begin() + 2, x->end());
    auto g = ops::resolve_window(ctx.node, ops::WindowKind::Conv, in, kernel);
    if (!g) return ctx.fail(g.status().message());
    for (size_t i = 0; i < kernel.size(); ++i)
      if (g->out[i] >= 0 && (*gy)[i + 2] >= 0 && g->out[i] != (*gy)[i + 2])
        return ctx.fail("dY " + shape_to_string(*gy) + " does not match the conv output of X " + shape_to_string(*x));
  }
  Shape w{m, cg};
  w.insert(w.end(), kernel.begin(), kernel.end());
  ctx.set_output(0, ctx.in(0).dtype, w);
  return Status::ok();
}

ops::Cost conv_grad_weight_cost(const ops::CostContext& c) {
  ops::Cost cost;
  const int64_t gy = ops::static_numel(c.inputs[1]), w = c.outputs.empty() ? -1 : ops::static_numel(c.outputs[0]);
  if (gy > 0 && w > 0 && (*c.outputs[0].dims)[0] > 0) {
    cost.flops = 2.0 * static_cast<double>(gy) * static_cast<double>(w / (*c.outputs[0].dims)[0]);
    const int64_t x = ops::static_numel(c.inputs[0]);
    cost.bytes =
        static_cast<double>(dtype_size(c.inputs[0].dtype)) * static_cast<double>(gy + w + std::max<int64_t>(x, 0));
  }
  return cost;
}

}  // namespace

void register_grad_ops(ops::Registry& r) {
  for (const char* op : {"MaxPoolGrad", "AveragePoolGrad"})
    r.add({op, kGradDomain, 1, 2, 2, 1, 1, ops::OpCategory::Pool, infer_pool_grad, pool_grad_cost});
  r.add({"ConvGradWeight", kGradDomain, 1, 2, 2, 1, 1, ops::OpCategory::Conv, infer_conv_grad_weight,
         conv_grad_weight_cost});
}

}  // namespace ms::autodiff
