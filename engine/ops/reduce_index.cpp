// Index-producing and scan reductions: ArgMax, ArgMin, TopK, CumSum, CumProd.
#include "engine/ops/reduce_internal.h"

namespace ms::ops::reduce {
namespace {

Status require_numeric(const InferContext& ctx, size_t i) {
  const DType t = ctx.in(i).dtype;
  if (!is_numeric(t))
    return ctx.fail(ctx.node.op_type + " input " + std::to_string(i) + " does not support dtype " +
                    std::string(dtype_name(t)));
  return Status::ok();
}

// Normalized axis or an error naming the axis and the rank.
Status normalize(const InferContext& ctx, int64_t axis, int64_t rank, int64_t& out) {
  out = axis < 0 ? axis + rank : axis;
  if (out < 0 || out >= rank)
    return ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return Status::ok();
}

// A scalar-like integer input (0-D, or 1-D with one element): dtype and static shape checks.
Status require_scalar_int(const InferContext& ctx, size_t i, const char* what) {
  const DType t = ctx.in(i).dtype;
  if (t != DType::I32 && t != DType::I64)
    return ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must be i32 or i64, got " +
                    std::string(dtype_name(t)));
  const auto* d = ctx.dims(i);
  if (d && (d->size() > 1 || (d->size() == 1 && (*d)[0] > 1)))
    return ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must hold one value, got shape " +
                    shape_to_string(*d));
  return Status::ok();
}

std::optional<int64_t> known_scalar(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.value(i);
  if (!t || !t->defined() || !t->device().is_cpu() || t->numel() != 1 || !is_integer(t->dtype())) return std::nullopt;
  return t->at_int(0);
}

Status infer_arg(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_numeric(ctx, 0));
  const auto* dims = ctx.dims(0);
  if (!dims) {
    ctx.set_output_rank_unknown(0, DType::I64);
    return Status::ok();
  }
  const int64_t rank = static_cast<int64_t>(dims->size());
  int64_t axis = 0;
  MS_RETURN_IF_ERROR(normalize(ctx, ctx.node.attr_int("axis", 0), rank, axis));
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  mask[static_cast<size_t>(axis)] = true;
  ctx.set_output(0, DType::I64, reduced_dims(*dims, mask, ctx.node.attr_int("keepdims", 1) != 0));
  return Status::ok();
}

Status infer_topk(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_numeric(ctx, 0));
  const DType dt = ctx.in(0).dtype;
  // TopK-1 has `k` as an attribute; from opset 10 it is input 1.
  std::optional<int64_t> k;
  if (ctx.has_input(1)) {
    MS_RETURN_IF_ERROR(require_scalar_int(ctx, 1, "k"));
    k = known_scalar(ctx, 1);
  } else if (ctx.node.has_attr("k")) {
    k = ctx.node.attr_int("k", 0);
  } else {
    return ctx.fail("TopK needs k (input 1, or the attribute before opset 10)");
  }
  if (k && *k < 0) return ctx.fail("k must be >= 0, got " + std::to_string(*k));
  const auto* dims = ctx.dims(0);
  if (!dims) {
    ctx.set_output_rank_unknown(0, dt);
    ctx.set_output_rank_unknown(1, DType::I64);
    return Status::ok();
  }
  const int64_t rank = static_cast<int64_t>(dims->size());
  int64_t axis = 0;
  MS_RETURN_IF_ERROR(normalize(ctx, ctx.node.attr_int("axis", -1), rank, axis));
  std::vector<int64_t> out = *dims;
  const int64_t n = out[static_cast<size_t>(axis)];
  if (k && n >= 0 && *k > n)
    return ctx.fail("k = " + std::to_string(*k) + " is larger than dim " + std::to_string(axis) + " of input shape " +
                    shape_to_string(*dims));
  out[static_cast<size_t>(axis)] = k ? *k : -1;
  ctx.set_output(0, dt, out);
  ctx.set_output(1, DType::I64, out);
  return Status::ok();
}

Status infer_cumsum(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_numeric(ctx, 0));
  MS_RETURN_IF_ERROR(require_scalar_int(ctx, 1, "axis"));
  const auto* dims = ctx.dims(0);
  if (!dims) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  if (auto axis = known_scalar(ctx, 1)) {
    int64_t a = 0;
    MS_RETURN_IF_ERROR(normalize(ctx, *axis, static_cast<int64_t>(dims->size()), a));
  }
  ctx.outputs[0] = ctx.in(0);
  return Status::ok();
}

OpSchema schema(const char* op, int since, int min_in, int max_in, int outs, std::function<Status(InferContext&)> f) {
  OpSchema s;
  s.op_type = op;
  s.since_version = since;
  s.min_inputs = min_in;
  s.max_inputs = max_in;
  s.min_outputs = outs;
  s.max_outputs = outs;
  s.category = OpCategory::Reduction;
  s.infer = std::move(f);
  s.cost = reduction_cost;
  return s;
}

}  // namespace

void register_index_ops(Registry& r) {
  r.add(schema("ArgMax", 1, 1, 1, 1, infer_arg));
  r.add(schema("ArgMin", 1, 1, 1, 1, infer_arg));
  r.add(schema("TopK", 1, 1, 2, 2, infer_topk));
  r.add(schema("CumSum", 11, 2, 2, 1, infer_cumsum));
  r.add(schema("CumProd", 26, 2, 2, 1, infer_cumsum));
}

}  // namespace ms::ops::reduce
