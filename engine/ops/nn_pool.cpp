// Pooling schemas: MaxPool (optional Indices), AveragePool, LpPool and the global forms.
#include "engine/ops/nn_geometry.h"
#include "engine/ops/nn_internal.h"

namespace ms::ops::nn {
namespace {

enum class PoolType : uint8_t { Max, Average, Lp };

Status infer_pool(InferContext& ctx, PoolType type) {
  const DType t = ctx.in(0).dtype;
  const bool int_ok = type == PoolType::Max && (t == DType::I8 || t == DType::U8);
  if (!int_ok) MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  const ir::Node& n = ctx.node;
  if (type == PoolType::Max) {
    const int64_t order = n.attr_int("storage_order", 0);
    if (order != 0 && order != 1)
      return ctx.fail("attribute 'storage_order' must be 0 or 1, got " + std::to_string(order));
  } else if (n.has_attr("storage_order")) {
    return ctx.fail("attribute 'storage_order' only applies to MaxPool");
  }
  if (type == PoolType::Lp && n.attr_int("p", 2) < 1)
    return ctx.fail("attribute 'p' must be >= 1, got " + std::to_string(n.attr_int("p", 2)));
  if (type != PoolType::Max && n.has_attr("dilations") && ctx.opset < 19) {
    for (int64_t d : n.attr_ints("dilations"))
      if (d != 1) return ctx.fail("attribute 'dilations' needs opset 19 for this op");
  }
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 3, -1));
  if (!xd) {
    ctx.set_output_rank_unknown(0, t);
    if (ctx.outputs.size() > 1) ctx.set_output_rank_unknown(1, DType::I64);
    return Status::ok();
  }
  const std::vector<int64_t> in(xd->begin() + 2, xd->end());
  auto g = resolve_window(n, WindowKind::Pool, in, {});
  if (!g) return ctx.fail(g.status().message());
  std::vector<int64_t> out{(*xd)[0], (*xd)[1]};
  out.insert(out.end(), g->out.begin(), g->out.end());
  if (ctx.outputs.size() > 1 && !n.outputs[1].empty()) ctx.set_output(1, DType::I64, out);
  ctx.set_output(0, t, std::move(out));
  return Status::ok();
}

Status infer_global_pool(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  if (ctx.node.op_type == "GlobalLpPool" && ctx.node.attr_int("p", 2) < 1)
    return ctx.fail("attribute 'p' must be >= 1, got " + std::to_string(ctx.node.attr_int("p", 2)));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, require_rank(ctx, 0, "X", 3, -1));
  if (!xd) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  std::vector<int64_t> out(xd->size(), 1);
  out[0] = (*xd)[0];
  out[1] = (*xd)[1];
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

Cost pool_cost(const CostContext& c) {
  int64_t window = 1;
  for (int64_t k : c.node.attr_ints("kernel_shape")) window *= k;
  return io_cost(c, static_cast<double>(window));
}

Cost global_pool_cost(const CostContext& c) {
  Cost cost = io_cost(c, 0);
  const int64_t n = static_numel(c.inputs[0]);
  if (n > 0) cost.flops = static_cast<double>(n);
  return cost;
}

}  // namespace

void register_pool_ops(Registry& r) {
  r.add(make_schema(
      "MaxPool", 1, 1, 1, 1, 2, OpCategory::Pool, [](InferContext& c) { return infer_pool(c, PoolType::Max); },
      pool_cost));
  r.add(make_schema(
      "AveragePool", 1, 1, 1, 1, 1, OpCategory::Pool, [](InferContext& c) { return infer_pool(c, PoolType::Average); },
      pool_cost));
  r.add(make_schema(
      "LpPool", 1, 1, 1, 1, 1, OpCategory::Pool, [](InferContext& c) { return infer_pool(c, PoolType::Lp); },
      pool_cost));
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
    r.add(make_schema(op, 1, 1, 1, 1, 1, OpCategory::Pool, infer_global_pool, global_pool_cost));
}

}  // namespace ms::ops::nn
