// Schemas of the ops over sequence and optional values (ONNX seq(tensor(T)), optional(...)):
// SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase, SequenceAt, SequenceLength,
// SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalHasElement, OptionalGetElement.
// A sequence's type carries its element type and the dims all its elements share (-1 where they
// differ), so SequenceAt of a sequence of like tensors is statically shaped.
#include "engine/ops/families.h"

namespace ms::ops {
namespace {

using ir::ValueType;

// Dims both types agree on: -1 where they differ, rank unknown when the ranks differ.
ValueType merge_dims(ValueType a, const ValueType& b) {
  if (!a.dims || !b.dims || a.dims->size() != b.dims->size()) {
    a.dims.reset();
    a.dim_params.clear();
    return a;
  }
  for (size_t d = 0; d < a.dims->size(); ++d)
    if ((*a.dims)[d] != (*b.dims)[d]) (*a.dims)[d] = -1;
  a.dim_params.assign(a.dims->size(), "");
  return a;
}

ValueType tensor_type(DType dt) {
  ValueType t;
  t.dtype = dt;
  return t;
}

Status need_sequence(InferContext& ctx, size_t i, const char* what) {
  if (ctx.in(i).kind != ValueKind::Sequence)
    return ctx.fail(std::string("input ") + std::to_string(i) + " (" + what + ") must be a sequence, got " +
                    ctx.in(i).to_string());
  return Status::ok();
}

Status need_tensor(InferContext& ctx, size_t i, const char* what) {
  if (!ctx.in(i).is_tensor())
    return ctx.fail(std::string("input ") + std::to_string(i) + " (" + what + ") must be a tensor, got " +
                    ctx.in(i).to_string());
  return Status::ok();
}

// A position input: an i32/i64 scalar.
Status need_position(InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return Status::ok();
  MS_RETURN_IF_ERROR(need_tensor(ctx, i, "position"));
  const DType dt = ctx.in(i).dtype;
  if (dt != DType::I32 && dt != DType::I64)
    return ctx.fail("position must be int32 or int64, got " + std::string(dtype_name(dt)));
  // A scalar; a one-element 1-D tensor is taken too (ONNX's own test data passes one).
  const auto* dims = ctx.dims(i);
  if (dims && !(dims->empty() || (dims->size() == 1 && ((*dims)[0] == 1 || (*dims)[0] < 0))))
    return ctx.fail("position must be a scalar, got " + ctx.in(i).to_string());
  return Status::ok();
}

Status infer_sequence_empty(InferContext& ctx) {
  const int64_t code = ctx.node.attr_int("dtype", dtype_to_onnx(DType::F32));
  auto dt = dtype_from_onnx(static_cast<int>(code));
  if (!dt) return ctx.fail("attribute 'dtype' is not a known element type (" + std::to_string(code) + ")");
  ctx.outputs[0] = ValueType::sequence_of(tensor_type(*dt));
  return Status::ok();
}

Status infer_sequence_construct(InferContext& ctx) {
  ValueType elem = ctx.in(0);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    MS_RETURN_IF_ERROR(need_tensor(ctx, i, "element"));
    if (ctx.in(i).dtype != elem.dtype)
      return ctx.fail("inputs must share one element type: input 0 is " + std::string(dtype_name(elem.dtype)) +
                      ", input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.in(i).dtype)));
    elem = merge_dims(elem, ctx.in(i));
  }
  ctx.outputs[0] = ValueType::sequence_of(elem);
  return Status::ok();
}

Status infer_sequence_insert(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_sequence(ctx, 0, "input_sequence"));
  MS_RETURN_IF_ERROR(need_tensor(ctx, 1, "tensor"));
  MS_RETURN_IF_ERROR(need_position(ctx, 2));
  const ValueType& seq = ctx.in(0);
  const ValueType& t = ctx.in(1);
  if (seq.dtype != DType::Undefined && t.dtype != seq.dtype)
    return ctx.fail("inserts a " + std::string(dtype_name(t.dtype)) + " tensor into a sequence of " +
                    std::string(dtype_name(seq.dtype)));
  // An empty sequence's element dims say nothing, so the result takes only the tensor's rank.
  ValueType elem = seq.dims ? merge_dims(seq.element(), t) : t;
  if (!seq.dims) {
    elem.dims.reset();
    elem.dim_params.clear();
  }
  ctx.outputs[0] = ValueType::sequence_of(elem);
  return Status::ok();
}

Status infer_sequence_erase(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_sequence(ctx, 0, "input_sequence"));
  MS_RETURN_IF_ERROR(need_position(ctx, 1));
  ctx.outputs[0] = ctx.in(0);
  return Status::ok();
}

Status infer_sequence_at(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_sequence(ctx, 0, "input_sequence"));
  MS_RETURN_IF_ERROR(need_position(ctx, 1));
  ctx.outputs[0] = ctx.in(0).element();
  return Status::ok();
}

Status infer_sequence_length(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_sequence(ctx, 0, "input_sequence"));
  ctx.set_output(0, DType::I64, {});
  return Status::ok();
}

Status infer_split_to_sequence(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_tensor(ctx, 0, "input"));
  if (ctx.has_input(1)) {
    MS_RETURN_IF_ERROR(need_tensor(ctx, 1, "split"));
    if (ctx.in(1).dtype != DType::I32 && ctx.in(1).dtype != DType::I64)
      return ctx.fail("split must be int32 or int64, got " + std::string(dtype_name(ctx.in(1).dtype)));
  }
  ValueType elem = tensor_type(ctx.in(0).dtype);
  if (const auto* dims = ctx.dims(0)) {
    const auto rank = static_cast<int64_t>(dims->size());
    int64_t axis = ctx.node.attr_int("axis", 0);
    if (axis < -rank || axis >= rank)
      return ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    std::vector<int64_t> out = *dims;
    const bool drop = !ctx.has_input(1) && ctx.node.attr_int("keepdims", 1) == 0;
    if (drop)
      out.erase(out.begin() + axis);
    else
      out[static_cast<size_t>(axis)] = -1;
    elem.dims = out;
    elem.dim_params.assign(out.size(), "");
  }
  ctx.outputs[0] = ValueType::sequence_of(elem);
  return Status::ok();
}

Status infer_concat_from_sequence(InferContext& ctx) {
  MS_RETURN_IF_ERROR(need_sequence(ctx, 0, "input_sequence"));
  const ValueType& seq = ctx.in(0);
  ValueType out = tensor_type(seq.dtype);
  if (seq.dims) {
    const bool new_axis = ctx.node.attr_int("new_axis", 0) != 0;
    const auto rank = static_cast<int64_t>(seq.dims->size()) + (new_axis ? 1 : 0);
    int64_t axis = ctx.node.attr_int("axis", 0);
    if (axis < -rank || axis >= rank)
      return ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    std::vector<int64_t> dims = *seq.dims;
    if (new_axis)
      dims.insert(dims.begin() + axis, -1);
    else
      dims[static_cast<size_t>(axis)] = -1;
    out.dims = dims;
    out.dim_params.assign(dims.size(), "");
  }
  ctx.outputs[0] = out;
  return Status::ok();
}

// SequenceMap: the body's output types (compiler/infer.cpp seeds the body's inputs), each a sequence.
Status infer_sequence_map(InferContext& ctx) {
  auto body = ctx.node.attr_graph("body");
  if (!body) return ctx.fail("needs graph attribute body");
  MS_RETURN_IF_ERROR(need_sequence(ctx, 0, "input_sequence"));
  if (body->inputs.size() != ctx.num_inputs())
    return ctx.fail("body takes " + std::to_string(body->inputs.size()) + " inputs, the node gives " +
                    std::to_string(ctx.num_inputs()));
  if (body->outputs.size() != ctx.node.outputs.size())
    return ctx.fail("body returns " + std::to_string(body->outputs.size()) + " outputs, the node has " +
                    std::to_string(ctx.node.outputs.size()));
  for (size_t i = 0; i < body->outputs.size(); ++i) {
    const ir::Value* v = body->resolve(body->outputs[i]);
    ValueType elem = v ? v->type : ValueType{};
    if (!elem.is_tensor()) return ctx.fail("body output " + std::to_string(i) + " must be a tensor");
    ctx.outputs[i] = ValueType::sequence_of(elem);
  }
  return Status::ok();
}

Status infer_optional(InferContext& ctx) {
  if (ctx.has_input(0)) {
    if (ctx.in(0).kind == ValueKind::Optional) return ctx.fail("input must be a tensor or a sequence, not an optional");
    ctx.outputs[0] = ValueType::optional_of(ctx.in(0));
    return Status::ok();
  }
  if (!ctx.node.has_attr("type")) return ctx.fail("needs attribute 'type' when the input is left out");
  auto t = ir::parse_value_type(ctx.node.attr_string("type", ""));
  if (!t || t->kind == ValueKind::Optional)
    return ctx.fail("attribute 'type' must be a tensor or sequence type, got '" + ctx.node.attr_string("type", "") +
                    "'");
  ctx.outputs[0] = ValueType::optional_of(*t);
  return Status::ok();
}

Status infer_optional_has_element(InferContext& ctx) {
  ctx.set_output(0, DType::Bool, {});
  return Status::ok();
}

Status infer_optional_get_element(InferContext& ctx) {
  if (!ctx.has_input(0) && ctx.in(0).kind != ValueKind::Optional) return ctx.fail("needs an input");
  const ValueType& in = ctx.in(0);
  ctx.outputs[0] = in.kind == ValueKind::Optional ? in.element() : in;
  return Status::ok();
}

}  // namespace

void register_sequence_ops(Registry& r) {
  const auto D = OpCategory::Data;
  r.add({"SequenceEmpty", "", 11, 0, 0, 1, 1, D, infer_sequence_empty, nullptr});
  r.add({"SequenceConstruct", "", 11, 1, -1, 1, 1, D, infer_sequence_construct, nullptr});
  r.add({"SequenceInsert", "", 11, 2, 3, 1, 1, D, infer_sequence_insert, nullptr});
  r.add({"SequenceErase", "", 11, 1, 2, 1, 1, D, infer_sequence_erase, nullptr});
  r.add({"SequenceAt", "", 11, 2, 2, 1, 1, D, infer_sequence_at, nullptr});
  r.add({"SequenceLength", "", 11, 1, 1, 1, 1, D, infer_sequence_length, nullptr});
  r.add({"SplitToSequence", "", 11, 1, 2, 1, 1, D, infer_split_to_sequence, nullptr});
  r.add({"ConcatFromSequence", "", 11, 1, 1, 1, 1, D, infer_concat_from_sequence, nullptr});
  r.add({"SequenceMap", "", 17, 1, -1, 1, -1, OpCategory::ControlFlow, infer_sequence_map, nullptr});
  r.add({"Optional", "", 15, 0, 1, 1, 1, D, infer_optional, nullptr});
  r.add({"OptionalHasElement", "", 15, 0, 1, 1, 1, D, infer_optional_has_element, nullptr});
  r.add({"OptionalGetElement", "", 15, 1, 1, 1, 1, D, infer_optional_get_element, nullptr});
}

}  // namespace ms::ops
