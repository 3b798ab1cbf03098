#include "engine/ops/grad_ops.h"

#include "engine/ops/nn_geometry.h"

namespace ms::autodiff {
namespace {

Status infer_pool_grad(ops::InferContext& ctx) {
  const auto* x = ctx.dims(0);
  const auto* gy = ctx.dims(1);
  if (!is_float(ctx.in(0).dtype)) return ctx.fail("input X must be a float tensor");
  if (ctx.in(1).dtype != ctx.in(0).dtype) return ctx.fail("dY must have X's dtype");
  if (x && x->size() != 4) return ctx.fail("only 2-D pools (NCHW input) are supported, got rank " + std::to_string(x->size()));
  if (x && gy) {
    if (gy->size() != 4) return ctx.fail("dY must be rank 4");
    Shape in(x->begin() + 2, x->end());
    auto g = ops::resolve_window(ctx.node, ops::WindowKind::Pool, in, ctx.node.attr_ints("kernel_shape"));
    if (!g) return ctx.fail(g.status().message());
    if ((*gy)[0] != (*x)[0] || (*gy)[1] != (*x)[1] || (*gy)[2] != g->out[0] || (*gy)[3] != g->out[1])
      return ctx.fail("dY " + shape_to_string(*gy) + " does not match the pool output of X " + shape_to_string(*x));
  }
  if (x) ctx.set_output(0, ctx.in(0).dtype, *x);
  else ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
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

}  // namespace

void register_grad_ops(ops::Registry& r) {
  for (const char* op : {"MaxPoolGrad", "AveragePoolGrad"})
    r.add({op, kGradDomain, 1, 2, 2, 1, 1, ops::OpCategory::Pool, infer_pool_grad, pool_grad_cost});
}

}  // namespace ms::autodiff
