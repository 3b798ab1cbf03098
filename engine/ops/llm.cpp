// Schemas: RMSNormalization, RotaryEmbedding, SwiGLU, TensorScatter, LinearAttention, CausalConvWithState.
// The shape checks live in llm_plan.cpp (shared with the CPU kernels); inference adds the dtype rules.
#include "engine/ops/families.h"
#include "engine/ops/llm_internal.h"
#include "engine/ops/nn_internal.h"

namespace ms::ops {
namespace {

using llm::Arg;
using nn::require_float;
using nn::require_same_dtype;
using std::to_string;

Arg arg_of(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return Arg{};
  return Arg{true, ctx.dims(i)};
}

Status check(const InferContext& ctx, const std::string& err) { return err.empty() ? Status::ok() : ctx.fail(err); }

// Output i: dims of input `like` (rank unknown when that is).
void set_like(InferContext& ctx, size_t i, DType dtype, size_t like) {
  if (const auto* d = ctx.dims(like))
    ctx.set_output(i, dtype, *d);
  else
    ctx.set_output_rank_unknown(i, dtype);
}

// Input i (when given) must have one of the float dtypes T allows.
Status require_half_float(const InferContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i)) return Status::ok();
  MS_RETURN_IF_ERROR(require_float(ctx, i, name));
  if (ctx.in(i).dtype == DType::F64)
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be f32, f16 or bf16, got f64");
  return Status::ok();
}

// Optional input i (when given) must have input 0's dtype.
Status same_dtype_if_given(const InferContext& ctx, size_t i, const char* name) {
  return ctx.has_input(i) ? require_same_dtype(ctx, i, name) : Status::ok();
}

Status infer_rms(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  MS_RETURN_IF_ERROR(require_float(ctx, 1, "scale"));
  llm::RmsPlan p;
  MS_RETURN_IF_ERROR(check(ctx, llm::rms_plan(ctx.node, arg_of(ctx, 0), arg_of(ctx, 1), p)));
  set_like(ctx, 0, ctx.in(1).dtype, 0);  // Y has Scale's type (V)
  return Status::ok();
}

Status infer_rotary(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_half_float(ctx, 0, "X"));
  MS_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "cos_cache"));
  MS_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "sin_cache"));
  if (ctx.has_input(3) && ctx.in(3).dtype != DType::I64)
    return ctx.fail("input 3 (position_ids) must be i64, got " + std::string(dtype_name(ctx.in(3).dtype)));
  llm::RotaryPlan p;
  MS_RETURN_IF_ERROR(
      check(ctx, llm::rotary_plan(ctx.node, arg_of(ctx, 0), arg_of(ctx, 1), arg_of(ctx, 2), arg_of(ctx, 3), p)));
  set_like(ctx, 0, ctx.in(0).dtype, 0);
  return Status::ok();
}

Status infer_swiglu(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "A"));
  MS_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "B"));
  const auto *a = ctx.dims(0), *b = ctx.dims(1);
  if (!a || !b) {
    set_like(ctx, 0, ctx.in(0).dtype, a ? 0 : 1);
    return Status::ok();
  }
  std::vector<int64_t> out = *a;
  bool ok = a->size() == b->size();
  for (size_t i = 0; ok && i < out.size(); ++i) {
    ok = !nn::dims_conflict((*a)[i], (*b)[i]);
    if (out[i] < 0) out[i] = (*b)[i];
  }
  if (!ok)
    return ctx.fail("inputs A " + nn::dims_string(*a) + " and B " + nn::dims_string(*b) +
                    " must have identical shapes (no broadcasting)");
  ctx.set_output(0, ctx.in(0).dtype, out);
  return Status::ok();
}

Status infer_tensor_scatter(InferContext& ctx) {
  const DType t = ctx.in(0).dtype;
  if (t == DType::String) return ctx.fail("input 0 (past_cache) of type string is not supported");
  MS_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "update"));
  if (ctx.has_input(2) && ctx.in(2).dtype != DType::I64)
    return ctx.fail("input 2 (write_indices) must be i64, got " + std::string(dtype_name(ctx.in(2).dtype)));
  llm::ScatterPlan p;
  MS_RETURN_IF_ERROR(check(ctx, llm::tensor_scatter_plan(ctx.node, arg_of(ctx, 0), arg_of(ctx, 1), arg_of(ctx, 2), p)));
  set_like(ctx, 0, t, 0);
  return Status::ok();
}

Status infer_linear_attention(InferContext& ctx) {
  const char* names[] = {"query", "key", "value", "past_state", "decay", "beta"};
  for (size_t i = 0; i < 6; ++i) MS_RETURN_IF_ERROR(require_half_float(ctx, i, names[i]));
  for (size_t i : {1, 2, 4, 5}) MS_RETURN_IF_ERROR(same_dtype_if_given(ctx, i, names[i]));
  llm::LinearAttentionPlan p;
  MS_RETURN_IF_ERROR(check(ctx, llm::linear_attention_plan(ctx.node, arg_of(ctx, 0), arg_of(ctx, 1), arg_of(ctx, 2),
                                                           arg_of(ctx, 3), arg_of(ctx, 4), arg_of(ctx, 5), p)));
  const int64_t out_last = p.dv < 0 ? -1 : p.q_heads * p.dv;
  ctx.set_output(0, ctx.in(0).dtype, {p.batch, p.steps, out_last});
  if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty())
    ctx.set_output(1, ctx.has_input(3) ? ctx.in(3).dtype : ctx.in(0).dtype, {p.batch, p.kv_heads, p.dk, p.dv});
  return Status::ok();
}

Status infer_causal_conv(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_half_float(ctx, 0, "input"));
  MS_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "weight"));
  MS_RETURN_IF_ERROR(same_dtype_if_given(ctx, 2, "bias"));
  MS_RETURN_IF_ERROR(same_dtype_if_given(ctx, 3, "past_state"));
  llm::CausalConvPlan p;
  MS_RETURN_IF_ERROR(
      check(ctx, llm::causal_conv_plan(ctx.node, arg_of(ctx, 0), arg_of(ctx, 1), arg_of(ctx, 2), arg_of(ctx, 3), p)));
  ctx.set_output(0, ctx.in(0).dtype, {p.batch, p.channels, p.length});
  if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty())
    ctx.set_output(1, ctx.in(0).dtype, {p.batch, p.channels, p.kernel < 0 ? -1 : p.kernel - 1});
  return Status::ok();
}

Cost linear_attention_cost(const CostContext& c) {
  Cost cost = nn::io_cost(c, 0);
  const auto& q = c.inputs[0];
  const auto& st = c.outputs.size() > 1 ? c.outputs[1] : c.outputs[0];
  const int64_t state = ops::static_numel(st), qn = ops::static_numel(q);
  if (state > 0 && qn > 0 && q.dims && !q.dims->empty() && (*q.dims)[0] > 0) {
    const int64_t steps = q.dims->size() > 1 ? (*q.dims)[1] : 1;
    cost.flops = 6.0 * static_cast<double>(state) * static_cast<double>(steps);  // decay, retrieve, write, read
  }
  return cost;
}

}  // namespace

void register_llm_ops(Registry& r) {
  using nn::io_cost;
  using nn::make_schema;
  r.add(make_schema("RMSNormalization", 23, 2, 2, 1, 1, OpCategory::Norm, infer_rms,
                    [](const CostContext& c) { return io_cost(c, 4); }));
  r.add(make_schema("RotaryEmbedding", 23, 3, 4, 1, 1, OpCategory::Other, infer_rotary,
                    [](const CostContext& c) { return io_cost(c, 3); }));
  r.add(make_schema("SwiGLU", 28, 2, 2, 1, 1, OpCategory::Activation, infer_swiglu,
                    [](const CostContext& c) { return io_cost(c, 6); }));
  r.add(make_schema("TensorScatter", 24, 2, 3, 1, 1, OpCategory::Data, infer_tensor_scatter,
                    [](const CostContext& c) { return io_cost(c, 0); }));
  r.add(make_schema("LinearAttention", 27, 3, 6, 1, 2, OpCategory::MatMul, infer_linear_attention,
                    linear_attention_cost));
  r.add(
      make_schema("CausalConvWithState", 27, 2, 4, 1, 2, OpCategory::Conv, infer_causal_conv, [](const CostContext& c) {
        const auto& w = c.inputs[1];
        const double k = w.dims && w.dims->size() == 3 && (*w.dims)[2] > 0 ? (*w.dims)[2] : 1;
        return io_cost(c, 2 * k);
      }));
}

}  // namespace ms::ops
