// Schemas: Attention (opset 23+), ai.onnx.preview FlexAttention.
#include "engine/ops/attention_shapes.h"
#include "engine/ops/families.h"
#include "engine/ops/nn_internal.h"

namespace ms::ops {
namespace {

using nn::dims_string;
using std::string;
using std::to_string;
using Dims = std::vector<int64_t>;

// Unifies a dim that must agree with another: the known one wins; false on a conflict.
bool unify(int64_t& a, int64_t b) {
  if (b < 0) return true;
  if (a < 0) a = b;
  return a == b;
}

int64_t div_or_unknown(int64_t a, int64_t b) { return a >= 0 && b > 0 ? a / b : -1; }

string not_divisible(const char* what, int64_t hidden, const char* attr, int64_t heads) {
  return string(what) + " hidden size " + to_string(hidden) + " is not divisible by " + attr + " = " + to_string(heads);
}

// 3-D inputs: heads come from the attributes, the head sizes from dividing the hidden sizes.
string heads_3d(const ir::Node& node, const Dims& q, const Dims& k, const Dims& v, AttentionGeometry& g,
                int64_t& k_head) {
  if (!node.has_attr("q_num_heads") || !node.has_attr("kv_num_heads"))
    return "attributes 'q_num_heads' and 'kv_num_heads' are required for 3-D Q, K, V";
  g.q_heads = node.attr_int("q_num_heads", 0);
  g.kv_heads = node.attr_int("kv_num_heads", 0);
  if (g.q_heads <= 0 || g.kv_heads <= 0)
    return "attributes 'q_num_heads' and 'kv_num_heads' must be > 0, got " + to_string(g.q_heads) + " and " +
           to_string(g.kv_heads);
  if (q[2] >= 0 && q[2] % g.q_heads) return not_divisible("input 0 (Q)", q[2], "q_num_heads", g.q_heads);
  if (k[2] >= 0 && k[2] % g.kv_heads) return not_divisible("input 1 (K)", k[2], "kv_num_heads", g.kv_heads);
  if (v[2] >= 0 && v[2] % g.kv_heads) return not_divisible("input 2 (V)", v[2], "kv_num_heads", g.kv_heads);
  g.head_size = div_or_unknown(q[2], g.q_heads);
  k_head = div_or_unknown(k[2], g.kv_heads);
  g.v_head_size = div_or_unknown(v[2], g.kv_heads);
  g.q_len = q[1];
  g.kv_len = k[1];
  if (!unify(g.kv_len, v[1]))
    return "K has " + to_string(k[1]) + " keys but V has " + to_string(v[1]) + " values (dim 1)";
  return "";
}

// 4-D inputs: (batch, heads, sequence, head size).
string heads_4d(const ir::Node& node, int64_t opset, const Dims& q, const Dims& k, const Dims& v, AttentionGeometry& g,
                int64_t& k_head) {
  const bool qh = node.has_attr("q_num_heads"), kvh = node.has_attr("kv_num_heads");
  if (opset >= 25 && (qh || kvh))
    return "attributes 'q_num_heads' and 'kv_num_heads' must not be set for 4-D Q, K, V (opset >= 25)";
  g.q_heads = q[1];
  g.kv_heads = k[1];
  if (!unify(g.kv_heads, v[1])) return "K has " + to_string(k[1]) + " heads but V has " + to_string(v[1]);
  if (qh && !unify(g.q_heads, node.attr_int("q_num_heads", 0)))
    return "attribute 'q_num_heads' does not match Q " + dims_string(q);
  if (kvh && !unify(g.kv_heads, node.attr_int("kv_num_heads", 0)))
    return "attribute 'kv_num_heads' does not match K " + dims_string(k);
  g.q_len = q[2];
  g.head_size = q[3];
  k_head = k[3];
  g.v_head_size = v[3];
  g.kv_len = k[2];
  if (!unify(g.kv_len, v[2]))
    return "K has " + to_string(k[2]) + " keys but V has " + to_string(v[2]) + " values (dim 2)";
  return "";
}

string qkv_geometry(const ir::Node& node, int64_t opset, const Dims& q, const Dims& k, const Dims& v,
                    AttentionGeometry& g) {
  if (q.size() != 3 && q.size() != 4) return "input 0 (Q) must have rank 3 or 4, got shape " + dims_string(q);
  if (k.size() != q.size() || v.size() != q.size())
    return "Q, K and V must have the same rank, got Q " + dims_string(q) + ", K " + dims_string(k) + ", V " +
           dims_string(v);
  g.three_d = q.size() == 3;
  int64_t k_head = -1;
  const string e = g.three_d ? heads_3d(node, q, k, v, g, k_head) : heads_4d(node, opset, q, k, v, g, k_head);
  if (!e.empty()) return e;
  g.batch = q[0];
  if (!unify(g.batch, k[0]) || !unify(g.batch, v[0]))
    return "Q, K and V disagree on the batch size: Q " + dims_string(q) + ", K " + dims_string(k) + ", V " +
           dims_string(v);
  if (!unify(g.head_size, k_head))
    return "Q head size " + to_string(g.head_size) + " differs from K head size " + to_string(k_head);
  if (g.q_heads >= 0 && g.kv_heads == 0) return "K and V must have at least one head";
  if (g.q_heads >= 0 && g.kv_heads > 0 && g.q_heads % g.kv_heads)
    return "the " + to_string(g.q_heads) + " query heads are not a multiple of the " + to_string(g.kv_heads) +
           " key/value heads";
  return "";
}

// past_key (B, kv_heads, past, head_size) and past_value (B, kv_heads, past, v_head_size).
string past_geometry(const AttentionInputDims& in, AttentionGeometry& g) {
  g.past_len = 0;
  if (in.has_past_key != in.has_past_value) return "inputs past_key and past_value must be given together";
  if (in.has_past_key && in.has_nonpad) return "input nonpad_kv_seqlen cannot be combined with past_key/past_value";
  if (in.has_past_key) {
    g.past_len = -1;
    const Dims* ds[2] = {in.past_key, in.past_value};
    for (int i = 0; i < 2; ++i) {
      if (!ds[i]) continue;
      const Dims& d = *ds[i];
      const string name = i == 0 ? "input 4 (past_key)" : "input 5 (past_value)";
      if (d.size() != 4) return name + " must have rank 4, got shape " + dims_string(d);
      int64_t& head = i == 0 ? g.head_size : g.v_head_size;
      if (!unify(g.batch, d[0]) || !unify(g.kv_heads, d[1]) || !unify(g.past_len, d[2]) || !unify(head, d[3]))
        return name + " " + dims_string(d) + " does not match (batch, kv heads, past length, head size) of K/V";
    }
  }
  g.total_len = g.past_len >= 0 && g.kv_len >= 0 ? g.past_len + g.kv_len : -1;
  return "";
}

string nonpad_geometry(int64_t opset, const AttentionInputDims& in, AttentionGeometry& g) {
  if (!in.has_nonpad) return "";
  if (opset < 24) return "input 6 (nonpad_kv_seqlen) needs opset >= 24";
  if (!in.nonpad) return "";
  if (in.nonpad->size() != 1 || !unify(g.batch, (*in.nonpad)[0]))
    return "input 6 (nonpad_kv_seqlen) must have shape [batch], got " + dims_string(*in.nonpad);
  return "";
}

// attn_mask broadcasts (right-aligned) to (batch, q_heads, q_len, <= total_len).
string mask_geometry(const AttentionInputDims& in, const AttentionGeometry& g) {
  if (!in.has_mask || !in.mask) return "";
  const Dims& m = *in.mask;
  if (m.empty() || m.size() > 4) return "input 3 (attn_mask) must have rank 1..4, got shape " + dims_string(m);
  const Dims want{g.batch, g.q_heads, g.q_len, g.total_len};
  if (m.back() >= 0 && g.total_len >= 0 && m.back() > g.total_len)
    return "input 3 (attn_mask) " + dims_string(m) + " has more keys than the " + to_string(g.total_len) +
           " keys of past_key + K";
  for (size_t j = 1; j < m.size(); ++j) {
    const int64_t a = m[m.size() - 1 - j], b = want[want.size() - 1 - j];
    if (a >= 0 && a != 1 && b >= 0 && a != b)
      return "input 3 (attn_mask) " + dims_string(m) + " does not broadcast to (batch, q_heads, q_len, kv_len) " +
             dims_string(want);
  }
  return "";
}

}  // namespace

std::string attention_attrs(const ir::Node& node, int64_t opset, AttentionAttrs& a) {
  a.is_causal = node.attr_int("is_causal", 0);
  if (a.is_causal != 0 && a.is_causal != 1)
    return "attribute 'is_causal' must be 0 or 1, got " + to_string(a.is_causal);
  a.mode = node.attr_int("qk_matmul_output_mode", 0);
  if (a.mode < 0 || a.mode > 3) return "attribute 'qk_matmul_output_mode' must be 0..3, got " + to_string(a.mode);
  a.softmax_precision = node.attr_int("softmax_precision", 0);
  const int64_t p = a.softmax_precision;
  if (node.has_attr("softmax_precision") && p != 1 && p != 10 && p != 11 && p != 16)
    return "attribute 'softmax_precision' must be 1 (float), 10 (float16), 11 (double) or 16 (bfloat16), got " +
           to_string(p);
  for (const char* w : {"left_window_size", "right_window_size"}) {
    if (!node.has_attr(w)) continue;
    if (opset < 25) return string("attribute '") + w + "' needs opset >= 25";
    const int64_t v = node.attr_int(w, -1);
    if (v < -1) return string("attribute '") + w + "' must be -1 or >= 0, got " + to_string(v);
  }
  a.left_window = node.attr_int("left_window_size", -1);
  a.right_window = node.attr_int("right_window_size", -1);
  a.has_scale = node.has_attr("scale");
  a.scale = node.attr_float("scale", 0.f);
  if (a.has_scale && !(a.scale >= 0)) return "attribute 'scale' must be >= 0, got " + to_string(a.scale);
  a.softcap = node.attr_float("softcap", 0.f);
  return "";
}

std::string attention_geometry(const ir::Node& node, int64_t opset, const AttentionInputDims& in,
                               AttentionGeometry& g) {
  g = AttentionGeometry{};
  if (!in.q || !in.k || !in.v) return "Q, K and V must have a known rank";
  string e = qkv_geometry(node, opset, *in.q, *in.k, *in.v, g);
  if (e.empty()) e = past_geometry(in, g);
  if (e.empty()) e = nonpad_geometry(opset, in, g);
  if (e.empty()) e = mask_geometry(in, g);
  return e;
}

std::string flex_attention_geometry(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                                    const std::vector<int64_t>& v, AttentionGeometry& g) {
  g = AttentionGeometry{};
  if (q.size() != 4 || k.size() != 4 || v.size() != 4)
    return "Q, K and V must have rank 4, got Q " + dims_string(q) + ", K " + dims_string(k) + ", V " + dims_string(v);
  int64_t k_head = -1;
  string e = heads_4d(ir::Node{}, 1, q, k, v, g, k_head);
  if (!e.empty()) return e;
  g.batch = q[0];
  if (!unify(g.batch, k[0]) || !unify(g.batch, v[0]))
    return "Q, K and V disagree on the batch size: Q " + dims_string(q) + ", K " + dims_string(k) + ", V " +
           dims_string(v);
  if (!unify(g.head_size, k_head))
    return "Q head size " + to_string(g.head_size) + " differs from K head size " + to_string(k_head);
  if (g.kv_heads == 0 || (g.q_heads >= 0 && g.kv_heads > 0 && g.q_heads % g.kv_heads))
    return "the " + to_string(g.q_heads) + " query heads are not a multiple of the " + to_string(g.kv_heads) +
           " key/value heads";
  g.total_len = g.kv_len;
  return "";
}

std::vector<int64_t> attention_y_dims(const AttentionGeometry& g) {
  if (g.three_d) {
    const int64_t hidden = g.q_heads >= 0 && g.v_head_size >= 0 ? g.q_heads * g.v_head_size : -1;
    return {g.batch, g.q_len, hidden};
  }
  return {g.batch, g.q_heads, g.q_len, g.v_head_size};
}

std::vector<int64_t> attention_present_dims(const AttentionGeometry& g, bool value) {
  return {g.batch, g.kv_heads, g.total_len, value ? g.v_head_size : g.head_size};
}

std::vector<int64_t> attention_qk_dims(const AttentionGeometry& g) {
  return {g.batch, g.q_heads, g.q_len, g.total_len};
}

namespace {

Status require_input_dtypes(const InferContext& ctx) {
  MS_RETURN_IF_ERROR(nn::require_float(ctx, 0, "Q"));
  MS_RETURN_IF_ERROR(nn::require_same_dtype(ctx, 1, "K"));
  MS_RETURN_IF_ERROR(nn::require_float(ctx, 2, "V"));
  if (ctx.has_input(3)) {
    const DType m = ctx.in(3).dtype;
    if (!(m == DType::Bool || (is_numeric(m) && !is_narrow(m))))
      return ctx.fail("input 3 (attn_mask) must be bool or a numeric tensor, got " + string(dtype_name(m)));
  }
  if (ctx.has_input(4) && ctx.in(4).dtype != ctx.in(0).dtype)
    return ctx.fail("input 4 (past_key) is " + string(dtype_name(ctx.in(4).dtype)) + " but Q is " +
                    string(dtype_name(ctx.in(0).dtype)));
  if (ctx.has_input(5) && ctx.in(5).dtype != ctx.in(2).dtype)
    return ctx.fail("input 5 (past_value) is " + string(dtype_name(ctx.in(5).dtype)) + " but V is " +
                    string(dtype_name(ctx.in(2).dtype)));
  if (ctx.has_input(6) && ctx.in(6).dtype != DType::I64)
    return ctx.fail("input 6 (nonpad_kv_seqlen) must be int64, got " + string(dtype_name(ctx.in(6).dtype)));
  return Status::ok();
}

Status infer_attention(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_input_dtypes(ctx));
  if (ctx.opset < 24 && ctx.num_inputs() > 6) return ctx.fail("has 7 inputs, opset 23 allows at most 6");
  AttentionAttrs attrs;
  if (string e = attention_attrs(ctx.node, ctx.opset, attrs); !e.empty()) return ctx.fail(e);
  AttentionInputDims in;
  in.q = ctx.dims(0);
  in.k = ctx.dims(1);
  in.v = ctx.dims(2);
  in.has_mask = ctx.has_input(3);
  in.has_past_key = ctx.has_input(4);
  in.has_past_value = ctx.has_input(5);
  in.has_nonpad = ctx.has_input(6);
  in.mask = in.has_mask ? ctx.dims(3) : nullptr;
  in.past_key = in.has_past_key ? ctx.dims(4) : nullptr;
  in.past_value = in.has_past_value ? ctx.dims(5) : nullptr;
  in.nonpad = in.has_nonpad ? ctx.dims(6) : nullptr;
  const DType t = ctx.in(0).dtype, tv = ctx.in(2).dtype;
  AttentionGeometry g;
  if (!in.q || !in.k || !in.v) {  // rank unknown: only the 4-D outputs have a known rank
    g.three_d = in.q && in.q->size() == 3;
    if (in.q)
      ctx.set_output(0, t, Dims(in.q->size(), -1));
    else
      ctx.set_output_rank_unknown(0, t);
  } else {
    if (string e = attention_geometry(ctx.node, ctx.opset, in, g); !e.empty()) return ctx.fail(e);
    ctx.set_output(0, t, attention_y_dims(g));
  }
  const DType out_types[4] = {t, t, tv, t};
  for (size_t i = 1; i < ctx.outputs.size() && i < 4; ++i) {
    if (ctx.node.outputs[i].empty()) continue;
    ctx.set_output(i, out_types[i], i == 3 ? attention_qk_dims(g) : attention_present_dims(g, i == 2));
  }
  return Status::ok();
}

// Two matmuls over (batch, q_heads, q_len, total_len): 2 * (head_size + v_head_size) flops per score.
Cost attention_cost(const CostContext& c) {
  Cost cost = nn::io_cost(c, 0);
  const ir::ValueType& q = c.inputs[0];
  const ir::ValueType& k = c.inputs[1];
  if (!q.is_static() || !k.is_static() || c.outputs.empty() || !c.outputs[0].is_static()) return cost;
  const bool three_d = q.dims->size() == 3;
  int64_t total = (*k.dims)[three_d ? 1 : 2];
  if (c.inputs.size() > 4 && c.inputs[4].is_static() && c.inputs[4].dims->size() == 4) total += (*c.inputs[4].dims)[2];
  const int64_t q_elems = static_numel(q), y_elems = static_numel(c.outputs[0]);
  cost.flops = 2.0 * static_cast<double>(total) * static_cast<double>(q_elems + y_elems);
  return cost;
}

Status infer_flex_attention(InferContext& ctx) {
  MS_RETURN_IF_ERROR(nn::require_float(ctx, 0, "Q"));
  MS_RETURN_IF_ERROR(nn::require_same_dtype(ctx, 1, "K"));
  MS_RETURN_IF_ERROR(nn::require_same_dtype(ctx, 2, "V"));
  const int64_t p = ctx.node.attr_int("softmax_precision", 1);
  if (p != 1 && p != 10 && p != 11 && p != 16)
    return ctx.fail(
        "attribute 'softmax_precision' must be 1 (float), 10 (float16), 11 (double) or 16 (bfloat16), got " +
        to_string(p));
  if (ctx.node.has_attr("scale") && !(ctx.node.attr_float("scale", 0.f) >= 0))
    return ctx.fail("attribute 'scale' must be >= 0");
  for (const char* sub : {"score_mod", "prob_mod"}) {
    auto it = ctx.node.attrs.find(sub);
    if (it != ctx.node.attrs.end() && !it->second.get_if<ir::Attribute::GraphPtr>())
      return ctx.fail(string("attribute '") + sub + "' must be a graph");
  }
  const Dims *q = ctx.dims(0), *k = ctx.dims(1), *v = ctx.dims(2);
  if (!q || !k || !v) {
    ctx.set_output(0, ctx.in(0).dtype, Dims(4, -1));
    return Status::ok();
  }
  AttentionGeometry g;
  if (string e = flex_attention_geometry(*q, *k, *v, g); !e.empty()) return ctx.fail(e);
  ctx.set_output(0, ctx.in(0).dtype, {g.batch, g.q_heads, g.q_len, g.v_head_size});
  return Status::ok();
}

}  // namespace

void register_attention_ops(Registry& r) {
  r.add(nn::make_schema("Attention", 23, 3, 7, 1, 4, OpCategory::MatMul, infer_attention, attention_cost));
  OpSchema flex =
      nn::make_schema("FlexAttention", 1, 3, 3, 1, 1, OpCategory::MatMul, infer_flex_attention, attention_cost);
  flex.domain = "ai.onnx.preview";
  r.add(std::move(flex));
}

}  // namespace ms::ops
