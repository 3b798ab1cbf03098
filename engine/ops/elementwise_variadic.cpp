// Variadic Min/Max/Sum/Mean (1..n inputs, all broadcast together) and Where (3-way broadcast).
#include "engine/ops/elementwise_internal.h"

namespace ms::ops::elementwise {
namespace {

std::function<Status(InferContext&)> variadic(TypeSet set) {
  return [set](InferContext& ctx) -> Status {
    MS_RETURN_IF_ERROR(check_dtype(ctx, 0, set));
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return ctx.fail("input " + std::to_string(i) + " is missing");
      MS_RETURN_IF_ERROR(check_same_dtype(ctx, 0, i));
    }
    BroadcastResult b;
    MS_RETURN_IF_ERROR(broadcast_all_inputs(ctx, b));
    set_broadcast_output(ctx, 0, ctx.in(0).dtype, b);
    return Status::ok();
  };
}

Status infer_where(InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_dtype(ctx, 0, TypeSet::Bool));
  MS_RETURN_IF_ERROR(check_dtype(ctx, 1, TypeSet::Any));
  MS_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 2));
  BroadcastResult b;
  MS_RETURN_IF_ERROR(broadcast_inputs(ctx, {0, 1, 2}, b));
  set_broadcast_output(ctx, 0, ctx.in(1).dtype, b);
  return Status::ok();
}

}  // namespace

void register_variadic_ops(Registry& r) {
  const struct {
    const char* op;
    TypeSet types;
  } defs[] = {
      {"Min", TypeSet::Numeric}, {"Max", TypeSet::Numeric}, {"Sum", TypeSet::Numeric}, {"Mean", TypeSet::Float}};
  for (const auto& d : defs) {
    OpSchema s = make_schema(d.op, 1, -1, OpCategory::Elementwise, variadic(d.types), 1);
    s.since_version = 6;
    r.add(std::move(s));
  }
  OpSchema where = make_schema("Where", 3, 3, OpCategory::Elementwise, infer_where, 1);
  where.since_version = 9;
  r.add(std::move(where));
}

}  // namespace ms::ops::elementwise
