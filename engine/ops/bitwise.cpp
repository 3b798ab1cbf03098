// Schemas: BitwiseAnd/Or/Xor/Not (opset 18, every integer type, numpy broadcasting) and BitCast
// (opset 26: the bits of each element reinterpreted as another type of the same width). The random
// generators (ops/random.cpp) register from here too.
#include <string>

#include "engine/ops/elementwise_internal.h"
#include "engine/ops/families.h"

namespace ms::ops {

void register_random_ops(Registry& r);  // ops/random.cpp

namespace {

using elementwise::TypeSet;

Status infer_bitwise_binary(InferContext& ctx) {
  MS_RETURN_IF_ERROR(elementwise::check_dtype(ctx, 0, TypeSet::Integer));
  MS_RETURN_IF_ERROR(elementwise::check_same_dtype(ctx, 0, 1));
  elementwise::BroadcastResult b;
  MS_RETURN_IF_ERROR(elementwise::broadcast_inputs(ctx, {0, 1}, b));
  elementwise::set_broadcast_output(ctx, 0, ctx.in(0).dtype, b);
  return Status::ok();
}

Status infer_bitwise_not(InferContext& ctx) {
  MS_RETURN_IF_ERROR(elementwise::check_dtype(ctx, 0, TypeSet::Integer));
  elementwise::set_same_shape_output(ctx, 0, 0, ctx.in(0).dtype);
  return Status::ok();
}

// Bits of one element: the packed width for the sub-byte types, the storage size otherwise.
int bit_width(DType t) { return is_narrow(t) ? dtype_packed_bits(t) : static_cast<int>(dtype_size(t) * 8); }

Status infer_bitcast(InferContext& ctx) {
  if (!ctx.node.has_attr("to")) return ctx.fail("attribute 'to' is required");
  const int64_t to = ctx.node.attr_int("to", 0);
  const auto target = dtype_from_onnx(static_cast<int>(to));
  if (!target || *target == DType::Undefined || *target == DType::String)
    return ctx.fail("attribute 'to' = " + std::to_string(to) + " is not a supported non-string data type");
  const DType src = ctx.in(0).dtype;
  if (src == DType::String) return ctx.fail("input of dtype string cannot be bit-cast");
  if (bit_width(src) != bit_width(*target))
    return ctx.fail("attribute 'to' (" + std::string(dtype_name(*target)) + ", " + std::to_string(bit_width(*target)) +
                    " bits) must have the bit width of the input (" + std::string(dtype_name(src)) + ", " +
                    std::to_string(bit_width(src)) + " bits)");
  elementwise::set_same_shape_output(ctx, 0, 0, *target);
  return Status::ok();
}

OpSchema schema(const char* op, int since, int inputs, std::function<Status(InferContext&)> infer, double flops) {
  OpSchema s = elementwise::make_schema(op, inputs, inputs, OpCategory::Elementwise, std::move(infer), flops);
  s.since_version = since;
  return s;
}

}  // namespace

void register_bitwise_ops(Registry& r) {
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) r.add(schema(op, 18, 2, infer_bitwise_binary, 1));
  r.add(schema("BitwiseNot", 18, 1, infer_bitwise_not, 1));
  r.add(schema("BitCast", 26, 1, infer_bitcast, 0));
  register_random_ops(r);
}

}  // namespace ms::ops
