// Schemas of the string ops: StringConcat, StringSplit, StringNormalizer, RegexFullMatch, and
// ai.onnx.ml LabelEncoder (string, integer or float keys and values). String
// tensors hold interned-string handles (core/strings.h); the data-movement ops take them as 8-byte
// elements, and Equal compares them (elementwise_binary.cpp).
#include "engine/ops/elementwise_internal.h"
#include "engine/ops/families.h"

namespace ms::ops {
namespace {

Status need_string(InferContext& ctx, size_t i) {
  if (!ctx.in(i).is_tensor() || ctx.in(i).dtype != DType::String)
    return ctx.fail("input " + std::to_string(i) + " must be a string tensor, got " + ctx.in(i).to_string());
  return Status::ok();
}

Status infer_string_concat(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_string(ctx, 0));
  MS_RETURN_IF_ERROR(need_string(ctx, 1));
  elementwise::BroadcastResult b;
  MS_RETURN_IF_ERROR(elementwise::broadcast_all_inputs(ctx, b));
  elementwise::set_broadcast_output(ctx, 0, DType::String, b);
  return Status::ok();
}

// Y: X's shape plus one axis as long as the most splits; Z: the number of pieces of each element.
Status infer_string_split(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_string(ctx, 0));
  if (ctx.node.has_attr("maxsplit") && ctx.node.attr_int("maxsplit", 0) < 0)
    return ctx.fail("attribute 'maxsplit' must not be negative");
  if (const auto* dims = ctx.dims(0)) {
    std::vector<int64_t> y = *dims;
    y.push_back(-1);
    ctx.set_output(0, DType::String, y);
    ctx.set_output(1, DType::I64, *dims);
  } else {
    ctx.set_output_rank_unknown(0, DType::String);
    ctx.set_output_rank_unknown(1, DType::I64);
  }
  return Status::ok();
}

// X is [C] or [1, C]; stop words may remove any number of elements.
Status infer_string_normalizer(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_string(ctx, 0));
  const std::string action = ctx.node.attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    return ctx.fail("case_change_action must be NONE, LOWER or UPPER, got '" + action + "'");
  if (const auto* dims = ctx.dims(0)) {
    if (dims->size() == 1) return ctx.set_output(0, DType::String, {-1}), Status::ok();
    if (dims->size() == 2 && (*dims)[0] == 1) return ctx.set_output(0, DType::String, {1, -1}), Status::ok();
    return ctx.fail("input must be [C] or [1, C], got " + ctx.in(0).to_string());
  }
  ctx.set_output_rank_unknown(0, DType::String);
  return Status::ok();
}

Status infer_regex_full_match(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_string(ctx, 0));
  if (!ctx.node.has_attr("pattern")) return ctx.fail("attribute 'pattern' is required");
  elementwise::set_same_shape_output(ctx, 0, 0, DType::Bool);
  return Status::ok();
}

// LabelEncoder: the output has X's shape and the values' element type (values_strings / _int64s /
// _floats, or values_tensor).
Status infer_label_encoder(InferContext& ctx) {
  const ir::Node& n = ctx.node;
  DType out = DType::Undefined;
  if (n.has_attr("values_strings")) out = DType::String;
  if (n.has_attr("values_int64s")) out = DType::I64;
  if (n.has_attr("values_floats")) out = DType::F32;
  if (const Tensor* t = n.attr_tensor("values_tensor")) out = t->dtype();
  if (out == DType::Undefined)
    return ctx.fail("needs one of values_strings, values_int64s, values_floats or values_tensor");
  if (!ctx.in(0).is_tensor()) return ctx.fail("input must be a tensor, got " + ctx.in(0).to_string());
  elementwise::set_same_shape_output(ctx, 0, 0, out);
  return Status::ok();
}

}  // namespace

void register_string_ops(Registry& r) {
  const auto D = OpCategory::Other;
  r.add({"StringConcat", "", 20, 2, 2, 1, 1, D, infer_string_concat, nullptr});
  r.add({"StringSplit", "", 20, 1, 1, 2, 2, D, infer_string_split, nullptr});
  r.add({"StringNormalizer", "", 10, 1, 1, 1, 1, D, infer_string_normalizer, nullptr});
  r.add({"RegexFullMatch", "", 20, 1, 1, 1, 1, D, infer_regex_full_match, nullptr});
  r.add({"LabelEncoder", "ai.onnx.ml", 1, 1, 1, 1, 1, D, infer_label_encoder, nullptr});
}

}  // namespace ms::ops
