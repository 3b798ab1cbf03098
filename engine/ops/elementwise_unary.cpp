// Unary math and logic ops: output has the input's shape; dtype the input's (bool for IsNaN/IsInf).
#include "engine/ops/elementwise_internal.h"

namespace ms::ops::elementwise {
namespace {

Status infer_is_inf_nan(InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_dtype(ctx, 0, TypeSet::Float));
  set_same_shape_output(ctx, 0, 0, DType::Bool);
  return Status::ok();
}

struct UnaryDef {
  const char* op;
  int since;
  TypeSet types;
  double flops;  // per element, rough
};

// Transcendental functions count as a handful of flops per element; the exact figure matters little.
const UnaryDef kUnary[] = {
    {"Sqrt", 6, TypeSet::Float, 4},   {"Reciprocal", 6, TypeSet::Float, 1}, {"Neg", 6, TypeSet::SignedNumeric, 1},
    {"Abs", 6, TypeSet::Numeric, 1},  {"Exp", 6, TypeSet::Float, 8},        {"Log", 6, TypeSet::Float, 8},
    {"Erf", 9, TypeSet::Numeric, 10}, {"Floor", 6, TypeSet::Float, 1},      {"Ceil", 6, TypeSet::Float, 1},
    {"Round", 11, TypeSet::Float, 1}, {"Sign", 9, TypeSet::Numeric, 1},     {"Not", 1, TypeSet::Bool, 1},
    {"Sin", 7, TypeSet::Float, 8},    {"Cos", 7, TypeSet::Float, 8},        {"Tan", 7, TypeSet::Float, 8},
    {"Asin", 7, TypeSet::Float, 8},   {"Acos", 7, TypeSet::Float, 8},       {"Atan", 7, TypeSet::Float, 8},
    {"Sinh", 9, TypeSet::Float, 8},   {"Cosh", 9, TypeSet::Float, 8},       {"Asinh", 9, TypeSet::Float, 8},
    {"Acosh", 9, TypeSet::Float, 8},  {"Atanh", 9, TypeSet::Float, 8},
};

}  // namespace

void register_unary_ops(Registry& r) {
  for (const UnaryDef& d : kUnary) {
    OpSchema s = make_schema(d.op, 1, 1, OpCategory::Elementwise, same_type(d.types), d.flops);
    s.since_version = d.since;
    r.add(std::move(s));
  }
  for (const char* op : {"IsNaN", "IsInf"}) {
    OpSchema s = make_schema(op, 1, 1, OpCategory::Elementwise, infer_is_inf_nan, 1);
    s.since_version = std::string(op) == "IsNaN" ? 9 : 10;
    r.add(std::move(s));
  }
}

}  // namespace ms::ops::elementwise
