// Schemas of the random generators: RandomUniform, RandomNormal, RandomUniformLike,
// RandomNormalLike, Bernoulli, Multinomial. Registered by register_bitwise_ops (ops/bitwise.cpp).
// Output shapes are static (an attribute or the input's shape); the values are drawn at run time, so
// the graph compiler never folds or merges these nodes (compiler/passes/constant_folding.cpp, cse.cpp).
#include <string>

#include "engine/ops/nn_internal.h"

namespace ms::ops {
namespace {

using std::to_string;

// The dtype an attribute `dtype` names (ONNX TensorProto code), or `fallback` when it is absent.
Status attr_dtype(const InferContext& ctx, DType fallback, DType& out) {
  if (!ctx.node.has_attr("dtype")) {
    out = fallback;
    return Status::ok();
  }
  const int64_t code = ctx.node.attr_int("dtype", 0);
  const auto t = dtype_from_onnx(static_cast<int>(code));
  if (!t || *t == DType::Undefined) return ctx.fail("attribute 'dtype' = " + to_string(code) + " is not a data type");
  out = *t;
  return Status::ok();
}

Status require_float_output(const InferContext& ctx, DType t) {
  if (!is_float(t))
    return ctx.fail("output dtype " + std::string(dtype_name(t)) +
                    " is not a float type (set attribute 'dtype' to f16, bf16, f32 or f64)");
  return Status::ok();
}

Status check_distribution(const InferContext& ctx) {
  if (ctx.node.op_type.find("Normal") != std::string::npos && ctx.node.attr_float("scale", 1.0f) < 0)
    return ctx.fail("attribute 'scale' must be >= 0, got " + to_string(ctx.node.attr_float("scale", 1.0f)));
  return Status::ok();
}

// RandomUniform / RandomNormal: the shape is attribute 'shape', the dtype 'dtype' (default f32).
Status infer_random(InferContext& ctx) {
  if (!ctx.node.has_attr("shape")) return ctx.fail("attribute 'shape' is required");
  const std::vector<int64_t> shape = ctx.node.attr_ints("shape");
  for (int64_t d : shape)
    if (d < 0) return ctx.fail("attribute 'shape' " + nn::dims_string(shape) + " has a negative dim");
  DType dt = DType::F32;
  MS_RETURN_IF_ERROR(attr_dtype(ctx, DType::F32, dt));
  MS_RETURN_IF_ERROR(require_float_output(ctx, dt));
  MS_RETURN_IF_ERROR(check_distribution(ctx));
  ctx.set_output(0, dt, shape);
  return Status::ok();
}

// Output i = input 0's shape (symbolic names kept) with dtype `dt`.
void same_shape_output(InferContext& ctx, DType dt) {
  ctx.outputs[0] = ctx.in(0);
  ctx.outputs[0].dtype = dt;
}

// RandomUniformLike / RandomNormalLike: the input's shape; its dtype unless 'dtype' says otherwise.
Status infer_random_like(InferContext& ctx) {
  DType dt = DType::Undefined;
  MS_RETURN_IF_ERROR(attr_dtype(ctx, ctx.in(0).dtype, dt));
  MS_RETURN_IF_ERROR(require_float_output(ctx, dt));
  MS_RETURN_IF_ERROR(check_distribution(ctx));
  same_shape_output(ctx, dt);
  return Status::ok();
}

Status infer_bernoulli(InferContext& ctx) {
  MS_RETURN_IF_ERROR(nn::require_float(ctx, 0, "input"));
  DType dt = DType::Undefined;
  MS_RETURN_IF_ERROR(attr_dtype(ctx, ctx.in(0).dtype, dt));
  if (!is_numeric(dt) && dt != DType::Bool)
    return ctx.fail("attribute 'dtype' must name a numeric or bool type, got " + std::string(dtype_name(dt)));
  same_shape_output(ctx, dt);
  return Status::ok();
}

// Multinomial: input [batch, classes] of unnormalized log-probabilities -> [batch, sample_size].
Status infer_multinomial(InferContext& ctx) {
  MS_RETURN_IF_ERROR(nn::require_float(ctx, 0, "input"));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* d, nn::require_rank(ctx, 0, "input", 2, 2));
  const int64_t samples = ctx.node.attr_int("sample_size", 1);
  if (samples < 1) return ctx.fail("attribute 'sample_size' must be >= 1, got " + to_string(samples));
  DType dt = DType::I32;
  MS_RETURN_IF_ERROR(attr_dtype(ctx, DType::I32, dt));
  if (dt != DType::I32 && dt != DType::I64)
    return ctx.fail("attribute 'dtype' must be int32 or int64, got " + std::string(dtype_name(dt)));
  ctx.set_output(0, dt, {d ? (*d)[0] : -1, samples});
  return Status::ok();
}

OpSchema schema(const char* op, int since, int inputs, std::function<Status(InferContext&)> infer) {
  return nn::make_schema(op, since, inputs, inputs, 1, 1, OpCategory::Other, std::move(infer),
                         [](const CostContext& c) { return nn::io_cost(c, 4); });
}

}  // namespace

void register_random_ops(Registry& r) {
  r.add(schema("RandomUniform", 1, 0, infer_random));
  r.add(schema("RandomNormal", 1, 0, infer_random));
  r.add(schema("RandomUniformLike", 1, 1, infer_random_like));
  r.add(schema("RandomNormalLike", 1, 1, infer_random_like));
  r.add(schema("Bernoulli", 15, 1, infer_bernoulli));
  r.add(schema("Multinomial", 7, 1, infer_multinomial));
}

}  // namespace ms::ops
