// FusedAttention's schema: operand layouts checked, batch/head/length/head-size agreement, the
// output in y_layout's order; cost 2·B·H·Sq·Sk·(D + Dv) plus the softmax.
#include "engine/ops/fused_attention.h"

#include "engine/ops/fused.h"
#include "engine/ops/schema.h"

namespace ms::ops {

bool parse_attention_layout(const std::string& layout, size_t rank, AttentionAxes& out) {
  if (layout.size() != rank || rank < 3 || rank > 4) return false;
  out = AttentionAxes{};
  for (size_t i = 0; i < layout.size(); ++i) {
    int* slot = layout[i] == 'b'   ? &out.b
                : layout[i] == 'h' ? &out.h
                : layout[i] == 's' ? &out.s
                : layout[i] == 'd' ? &out.d
                                   : nullptr;
    if (!slot || *slot >= 0) return false;
    *slot = static_cast<int>(i);
  }
  return out.h >= 0 && out.s >= 0 && out.d >= 0 && (rank == 3) == (out.b < 0);
}

namespace {

struct AttentionDims {
  int64_t b = -1, h = -1, sq = -1, sk = -1, d = -1, dv = -1;
};

// Agreement of a dim seen twice (-1: unknown on either side).
bool agree(int64_t& have, int64_t got) {
  if (got < 0) return true;
  if (have < 0) have = got;
  return have == got;
}

Status read_operand(InferContext& ctx, size_t i, const char* attr, const char* len_of, AttentionDims& a, bool value) {
  const std::string layout = ctx.node.attr_string(attr, "");
  const auto* dims = ctx.dims(i);
  if (!dims) return Status::ok();
  AttentionAxes ax;
  if (!parse_attention_layout(layout, dims->size(), ax))
    return ctx.fail(std::string("attribute '") + attr + "' ('" + layout + "') does not describe a rank-" +
                    std::to_string(dims->size()) + " operand");
  int64_t& len = std::string(len_of) == "q" ? a.sq : a.sk;
  int64_t& head = value ? a.dv : a.d;
  if (!agree(a.b, ax.dim('b', *dims)) || !agree(a.h, ax.dim('h', *dims)) || !agree(len, ax.dim('s', *dims)) ||
      !agree(head, ax.dim('d', *dims)))
    return ctx.fail("input " + std::to_string(i) + " " + shape_to_string(*dims) + " (" + layout +
                    ") disagrees with the other operands");
  return Status::ok();
}

Status infer_fused_attention(InferContext& ctx) {
  const DType t = ctx.in(0).dtype;
  if (t != DType::F32 && t != DType::BF16) return ctx.fail("Q, K and V must be f32 or bf16");
  for (size_t i = 1; i < 3; ++i)
    if (ctx.in(i).dtype != t) return ctx.fail("Q, K and V must share one dtype");
  AttentionDims a;
  MS_RETURN_IF_ERROR(read_operand(ctx, 0, "q_layout", "q", a, false));
  MS_RETURN_IF_ERROR(read_operand(ctx, 1, "k_layout", "k", a, false));
  MS_RETURN_IF_ERROR(read_operand(ctx, 2, "v_layout", "k", a, true));
  const std::string yl = ctx.node.attr_string("y_layout", "");
  const size_t rank = ctx.dims(0) ? ctx.dims(0)->size() : yl.size();
  AttentionAxes ax;
  if (!parse_attention_layout(yl, yl.size(), ax) || yl.size() != rank)
    return ctx.fail("attribute 'y_layout' ('" + yl + "') does not describe a rank-" + std::to_string(rank) + " output");
  std::vector<int64_t> y(yl.size());
  for (size_t i = 0; i < yl.size(); ++i) y[i] = yl[i] == 'b' ? a.b : yl[i] == 'h' ? a.h : yl[i] == 's' ? a.sq : a.dv;
  ctx.set_output(0, t, std::move(y));
  return Status::ok();
}

Cost fused_attention_cost(const CostContext& c) {
  Cost cost;
  if (c.inputs.size() < 3 || c.outputs.empty()) return cost;
  const int64_t y = static_numel(c.outputs[0]), k = static_numel(c.inputs[1]), q = static_numel(c.inputs[0]);
  const int64_t v = static_numel(c.inputs[2]);
  if (y <= 0 || k <= 0 || q <= 0 || v <= 0) return cost;
  AttentionAxes ax;
  const std::string kl = c.node.attr_string("k_layout", "");
  if (!c.inputs[1].dims || !parse_attention_layout(kl, c.inputs[1].dims->size(), ax)) return cost;
  const double sk = static_cast<double>(ax.dim('s', *c.inputs[1].dims));
  const double d = static_cast<double>(ax.dim('d', *c.inputs[1].dims));
  const double rows = static_cast<double>(q) / d;  // B·H·Sq
  const double dv = static_cast<double>(y) / rows;
  cost.flops = 2 * rows * sk * (d + dv) + 4 * rows * sk;
  cost.bytes = 4.0 * static_cast<double>(q + k + v + y);
  return cost;
}

}  // namespace

void register_fused_attention_op(Registry& r) {
  OpSchema s;
  s.op_type = "FusedAttention";
  s.domain = kFusedDomain;
  s.min_inputs = 3;
  s.max_inputs = 4;
  s.category = OpCategory::MatMul;
  s.infer = infer_fused_attention;
  s.cost = fused_attention_cost;
  r.add(std::move(s));
}

}  // namespace ms::ops
