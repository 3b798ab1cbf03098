// Binary ops with numpy broadcasting: arithmetic, Pow, Mod, BitShift, PRelu, comparisons, logic.
#include "engine/ops/elementwise_internal.h"

namespace ms::ops::elementwise {
namespace {

// Both inputs in `set` and of one dtype; output `out` (Undefined = the inputs' dtype), broadcast shape.
std::function<Status(InferContext&)> binary(TypeSet set, DType out = DType::Undefined) {
  return [set, out](InferContext& ctx) -> Status {
    MS_RETURN_IF_ERROR(check_dtype(ctx, 0, set));
    MS_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
    BroadcastResult b;
    MS_RETURN_IF_ERROR(broadcast_inputs(ctx, {0, 1}, b));
    set_broadcast_output(ctx, 0, out == DType::Undefined ? ctx.in(0).dtype : out, b);
    return Status::ok();
  };
}

// Pow: base and exponent may have different numeric dtypes; the output has the base's.
Status infer_pow(InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_dtype(ctx, 0, TypeSet::Numeric));
  MS_RETURN_IF_ERROR(check_dtype(ctx, 1, TypeSet::Numeric));
  BroadcastResult b;
  MS_RETURN_IF_ERROR(broadcast_inputs(ctx, {0, 1}, b));
  set_broadcast_output(ctx, 0, ctx.in(0).dtype, b);
  return Status::ok();
}

Status infer_mod(InferContext& ctx) {
  const int64_t fmod = ctx.node.attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) return ctx.fail("attribute fmod must be 0 or 1, got " + std::to_string(fmod));
  return binary(TypeSet::Numeric)(ctx);
}

Status infer_bitshift(InferContext& ctx) {
  const std::string dir = ctx.node.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    return ctx.fail("attribute direction must be \"LEFT\" or \"RIGHT\", got \"" + dir + "\"");
  return binary(TypeSet::Integer)(ctx);
}

// PRelu broadcasts the slope to X (unidirectional): the result must have X's shape.
Status infer_prelu(InferContext& ctx) {
  MS_RETURN_IF_ERROR(check_dtype(ctx, 0, TypeSet::SignedNumeric));
  MS_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  BroadcastResult b;
  MS_RETURN_IF_ERROR(broadcast_inputs(ctx, {0, 1}, b));
  if (b.rank_known) {
    const std::vector<int64_t>& x = *ctx.in(0).dims;
    bool ok = x.size() == b.dims.size();
    for (size_t i = 0; ok && i < x.size(); ++i) ok = x[i] < 0 || x[i] == b.dims[i];
    if (!ok) return ctx.fail("slope " + ctx.in(1).to_string() + " does not broadcast to X " + ctx.in(0).to_string());
  }
  set_broadcast_output(ctx, 0, ctx.in(0).dtype, b);
  return Status::ok();
}

struct BinaryDef {
  const char* op;
  int since;
  TypeSet types;
  DType out;  // Undefined = input dtype
};

const BinaryDef kBinary[] = {
    {"Add", 7, TypeSet::Numeric, DType::Undefined},
    {"Sub", 7, TypeSet::Numeric, DType::Undefined},
    {"Mul", 7, TypeSet::Numeric, DType::Undefined},
    {"Div", 7, TypeSet::Numeric, DType::Undefined},
    {"Equal", 7, TypeSet::Comparable, DType::Bool},
    {"Less", 7, TypeSet::Numeric, DType::Bool},
    {"Greater", 7, TypeSet::Numeric, DType::Bool},
    {"LessOrEqual", 12, TypeSet::Numeric, DType::Bool},
    {"GreaterOrEqual", 12, TypeSet::Numeric, DType::Bool},
    {"And", 7, TypeSet::Bool, DType::Bool},
    {"Or", 7, TypeSet::Bool, DType::Bool},
    {"Xor", 7, TypeSet::Bool, DType::Bool},
};

}  // namespace

void register_binary_ops(Registry& r) {
  for (const BinaryDef& d : kBinary) {
    OpSchema s = make_schema(d.op, 2, 2, OpCategory::Elementwise, binary(d.types, d.out), 1);
    s.since_version = d.since;
    r.add(std::move(s));
  }
  OpSchema pow = make_schema("Pow", 2, 2, OpCategory::Elementwise, infer_pow, 10);
  pow.since_version = 7;
  r.add(std::move(pow));
  OpSchema mod = make_schema("Mod", 2, 2, OpCategory::Elementwise, infer_mod, 2);
  mod.since_version = 10;
  r.add(std::move(mod));
  OpSchema shift = make_schema("BitShift", 2, 2, OpCategory::Elementwise, infer_bitshift, 1);
  shift.since_version = 11;
  r.add(std::move(shift));
  OpSchema prelu = make_schema("PRelu", 2, 2, OpCategory::Activation, infer_prelu, 2);
  prelu.since_version = 7;
  r.add(std::move(prelu));
}

}  // namespace ms::ops::elementwise
