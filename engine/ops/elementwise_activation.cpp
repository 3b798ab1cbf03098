// Activations: the Relu family, sigmoid-like functions, Gelu, Shrink and Clip. Output = input's type.
#include <cmath>

#include "engine/ops/elementwise_internal.h"

namespace ms::ops::elementwise {
namespace {

Status infer_celu(InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_dtype(ctx, 0, TypeSet::Float));
  // celu(x) = max(0,x) + min(0, alpha*(exp(x/alpha)-1)): alpha divides.
  const float alpha = ctx.node.attr_float("alpha", 1.0f);
  if (alpha == 0.0f || !std::isfinite(alpha)) return ctx.fail("attribute alpha must be finite and non-zero");
  set_same_shape_output(ctx, 0, 0, ctx.in(0).dtype);
  return Status::ok();
}

// Gelu (opset 20): approximate is "none" (the erf form) or "tanh".
Status infer_gelu(InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_dtype(ctx, 0, TypeSet::Float));
  const std::string approximate = ctx.node.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return ctx.fail("attribute approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  set_same_shape_output(ctx, 0, 0, ctx.in(0).dtype);
  return Status::ok();
}

// Clip: min/max are attributes before opset 11, optional scalar inputs of the input's type after.
Status infer_clip(InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_dtype(ctx, 0, TypeSet::Numeric));
  if (ctx.opset < 11) {
    if (ctx.num_inputs() > 1) return ctx.fail("takes one input before opset 11 (min/max are attributes)");
    if (!is_float(ctx.in(0).dtype))
      return ctx.fail("input must be a float type before opset 12, got " + std::string(dtype_name(ctx.in(0).dtype)));
  } else {
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      MS_RETURN_IF_ERROR(check_same_dtype(ctx, 0, i));
      const ir::ValueType& t = ctx.in(i);
      // Exporters write scalars as [] or [1]; more than one element is a malformed model.
      if (t.has_rank()) {
        int64_t n = 1;
        for (int64_t d : *t.dims) n = d < 0 ? -1 : (n < 0 ? -1 : n * d);
        if (n >= 0 && n != 1)
          return ctx.fail(std::string(i == 1 ? "min" : "max") + " must be a scalar, got " + t.to_string());
      }
    }
  }
  set_same_shape_output(ctx, 0, 0, ctx.in(0).dtype);
  return Status::ok();
}

struct ActDef {
  const char* op;
  int since;
  TypeSet types;
  double flops;
};

const ActDef kActivations[] = {
    {"Relu", 6, TypeSet::SignedNumeric, 1},
    {"LeakyRelu", 6, TypeSet::Float, 2},
    {"Elu", 6, TypeSet::Float, 8},
    {"Selu", 6, TypeSet::Float, 9},
    {"HardSigmoid", 6, TypeSet::Float, 4},
    {"HardSwish", 14, TypeSet::Float, 5},
    {"Softplus", 1, TypeSet::Float, 16},
    {"Softsign", 1, TypeSet::Float, 3},
    {"ThresholdedRelu", 10, TypeSet::Float, 1},
    {"Shrink", 9, TypeSet::Numeric, 2},
    {"Sigmoid", 6, TypeSet::Float, 10},
    {"Tanh", 6, TypeSet::Float, 10},
    {"Swish", 24, TypeSet::Float, 12},
    {"Mish", 18, TypeSet::Float, 20},
};

}  // namespace

void register_activation_ops(Registry& r) {
  for (const ActDef& d : kActivations) {
    OpSchema s = make_schema(d.op, 1, 1, OpCategory::Activation, same_type(d.types), d.flops);
    s.since_version = d.since;
    r.add(std::move(s));
  }
  OpSchema celu = make_schema("Celu", 1, 1, OpCategory::Activation, infer_celu, 9);
  celu.since_version = 12;
  r.add(std::move(celu));
  OpSchema gelu = make_schema("Gelu", 1, 1, OpCategory::Activation, infer_gelu, 14);
  gelu.since_version = 20;
  r.add(std::move(gelu));
  OpSchema clip = make_schema("Clip", 1, 3, OpCategory::Activation, infer_clip, 2);
  clip.since_version = 6;
  r.add(std::move(clip));
}

}  // namespace ms::ops::elementwise
