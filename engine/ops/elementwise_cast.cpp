// Cast (target dtype from the `to` attribute) and CastLike (target dtype from input 1), between every
// numeric, bool and narrow (float8, e8m0, float4, int4/uint4/int2/uint2) dtype.
#include "engine/ops/elementwise_internal.h"

namespace ms::ops::elementwise {
namespace {

// Strings cast to and from the numeric types (not bool or the narrow types).
Status check_string_cast(const InferContext& ctx, DType from, DType to) {
  if (from != DType::String && to != DType::String) return Status::ok();
  const DType other = from == DType::String ? to : from;
  if (other == DType::String || is_numeric(other)) return Status::ok();
  return unsupported(ctx.node.label() + ": casts between string and " + std::string(dtype_name(other)) +
                     " are not supported")
      .with_node(ctx.node.id.value);
}

// round_mode (opset 24+) only matters for float8e8m0 targets, but a bad value is always an error.
Status check_round_mode(const InferContext& ctx) {
  const std::string mode = ctx.node.attr_string("round_mode", "up");
  if (mode != "up" && mode != "down" && mode != "nearest")
    return ctx.fail("attribute 'round_mode' must be \"up\", \"down\" or \"nearest\", got \"" + mode + "\"");
  return Status::ok();
}

Status check_castable_input(const InferContext& ctx) {
  const DType in = ctx.in(0).dtype;
  if (!in_type_set(in, TypeSet::Comparable) && !is_narrow(in))
    return ctx.fail("input must be a numeric, bool or string type, got " + std::string(dtype_name(in)));
  return check_round_mode(ctx);
}

Status infer_cast(InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_castable_input(ctx));
  if (!ctx.node.has_attr("to")) return ctx.fail("attribute 'to' is required");
  const int64_t to = ctx.node.attr_int("to", 0);
  const std::optional<DType> t = dtype_from_onnx(static_cast<int>(to));
  if (!t || *t == DType::Undefined) {
    return unsupported(ctx.node.label() + ": cannot cast to ONNX element type " + std::to_string(to))
        .with_node(ctx.node.id.value);
  }
  MS_RETURN_IF_ERROR(check_string_cast(ctx, ctx.in(0).dtype, *t));
  set_same_shape_output(ctx, 0, 0, *t);
  return Status::ok();
}

Status infer_cast_like(InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_castable_input(ctx));
  const DType to = ctx.in(1).dtype;
  if (!in_type_set(to, TypeSet::Comparable) && !is_narrow(to))
    return ctx.fail("target_type must be a numeric or bool type, got " + std::string(dtype_name(to)));
  MS_RETURN_IF_ERROR(check_string_cast(ctx, ctx.in(0).dtype, to));
  set_same_shape_output(ctx, 0, 0, to);
  return Status::ok();
}

}  // namespace

void register_cast_ops(Registry& r) {
  OpSchema cast = make_schema("Cast", 1, 1, OpCategory::Elementwise, infer_cast, 1);
  cast.since_version = 6;
  r.add(std::move(cast));
  OpSchema like = make_schema("CastLike", 2, 2, OpCategory::Elementwise, infer_cast_like, 1);
  like.since_version = 15;
  r.add(std::move(like));
}

}  // namespace ms::ops::elementwise
