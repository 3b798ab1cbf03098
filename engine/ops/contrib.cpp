// Schemas of the ONNX Runtime contrib ops that today's exports carry: the quantized LLM linear layer
// MatMulNBits and the KV-cached GroupQueryAttention, the transformer norms SkipLayerNormalization and
// SkipSimplifiedLayerNormalization (com.microsoft) and SimplifiedLayerNormalization (which ONNX Runtime registers in
// ai.onnx, opset 1), and the GELU forms FastGelu, BiasGelu, QuickGelu and Gelu (com.microsoft). Semantics follow ONNX
// Runtime's contrib op documentation; the CPU kernels are in backends/cpu/contrib.cpp. Also the
// int4 embedding table's GatherBlockQuantized.
#include "engine/ops/contrib_internal.h"
#include "engine/ops/families.h"
#include "engine/ops/nn_internal.h"

namespace ms::ops {
namespace {

using nn::io_cost;
using nn::require_float;
using std::to_string;

// Dims of input i, or null.
const std::vector<int64_t>* dims(const InferContext& ctx, size_t i) { return ctx.has_input(i) ? ctx.dims(i) : nullptr; }

// The normalized size: the product of X's dims from `axis` on (-1 when unknown).
int64_t norm_size(const std::vector<int64_t>& x, int64_t axis) {
  int64_t n = 1;
  for (size_t d = static_cast<size_t>(axis); d < x.size(); ++d) {
    if (x[d] < 0) return -1;
    n *= x[d];
  }
  return n;
}

// Optional 1-D parameter i of `hidden` values (gamma, beta, bias), when known.
Status require_vector(const InferContext& ctx, size_t i, const char* name, int64_t hidden) {
  if (!ctx.has_input(i)) return Status::ok();
  MS_RETURN_IF_ERROR(require_float(ctx, i, name));
  const auto* d = ctx.dims(i);
  if (!d || hidden < 0) return Status::ok();
  int64_t n = 1;
  for (int64_t v : *d) n = v < 0 ? -1 : (n < 0 ? -1 : n * v);
  if (n >= 0 && n != hidden)
    return ctx.fail("input " + to_string(i) + " (" + name + ") has " + to_string(n) + " values, the hidden size is " +
                    to_string(hidden));
  return Status::ok();
}

// Statistics outputs (mean, inv_std_var): X's dims with the normalized ones set to 1, f32.
std::vector<int64_t> stats_dims(const std::vector<int64_t>& x, int64_t axis) {
  std::vector<int64_t> s = x;
  for (size_t d = static_cast<size_t>(axis); d < s.size(); ++d) s[d] = 1;
  return s;
}

Status infer_simplified_ln(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  MS_RETURN_IF_ERROR(require_float(ctx, 1, "scale"));
  const auto* x = dims(ctx, 0);
  if (!x) {
    ctx.set_output_rank_unknown(0, ctx.in(1).dtype);
    if (ctx.outputs.size() > 1) ctx.set_output_rank_unknown(1, DType::F32);
    return Status::ok();
  }
  const auto rank = static_cast<int64_t>(x->size());
  const int64_t a = ctx.node.attr_int("axis", -1), axis = a < 0 ? a + rank : a;
  if (axis < 0 || axis >= rank)
    return ctx.fail("attribute 'axis' = " + to_string(a) + " is out of range for X of rank " + to_string(rank));
  MS_RETURN_IF_ERROR(require_vector(ctx, 1, "scale", norm_size(*x, axis)));
  ctx.set_output(0, ctx.in(1).dtype, *x);
  if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty()) ctx.set_output(1, DType::F32, stats_dims(*x, axis));
  return Status::ok();
}

// SkipLayerNormalization (input, skip, gamma, beta?, bias?) and SkipSimplifiedLayerNormalization
// (input, skip, gamma, bias?): output, mean, inv_std_var, input_skip_bias_sum.
Status infer_skip_ln(InferContext& ctx, bool simplified) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "input"));
  MS_RETURN_IF_ERROR(nn::require_same_dtype(ctx, 1, "skip"));
  const auto* x = dims(ctx, 0);
  const int64_t hidden = x && !x->empty() ? x->back() : -1;
  if (x && (x->size() < 2 || x->size() > 3))
    return ctx.fail("input must be 2-D or 3-D ([batch, sequence, hidden]), got rank " + to_string(x->size()));
  MS_RETURN_IF_ERROR(require_vector(ctx, 2, "gamma", hidden));
  if (simplified) {
    MS_RETURN_IF_ERROR(require_vector(ctx, 3, "bias", hidden));
  } else {
    MS_RETURN_IF_ERROR(require_vector(ctx, 3, "beta", hidden));
    MS_RETURN_IF_ERROR(require_vector(ctx, 4, "bias", hidden));
  }
  if (simplified && ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty())
    return ctx.fail("output 1 (mean) is not defined for SkipSimplifiedLayerNormalization");
  const DType dt = ctx.in(0).dtype;
  if (!x) {
    for (size_t i = 0; i < ctx.outputs.size(); ++i)
      if (!ctx.node.outputs[i].empty()) ctx.set_output_rank_unknown(i, i == 1 || i == 2 ? DType::F32 : dt);
    return Status::ok();
  }
  const int64_t axis = static_cast<int64_t>(x->size()) - 1;
  ctx.set_output(0, dt, *x);
  for (size_t i = 1; i < ctx.outputs.size(); ++i) {
    if (ctx.node.outputs[i].empty()) continue;
    if (i == 3)
      ctx.set_output(i, dt, *x);
    else
      ctx.set_output(i, DType::F32, stats_dims(*x, axis));
  }
  return Status::ok();
}

// MatMulNBits: A [..., K] times B, N rows of K `bits`-bit values in blocks of block_size, each
// block with its scale (and zero point): Y [..., N].
Status infer_matmul_nbits(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "A"));
  if (ctx.in(1).dtype != DType::U8)
    return ctx.fail("input 1 (B) must be uint8, got " + std::string(dtype_name(ctx.in(1).dtype)));
  MS_RETURN_IF_ERROR(require_float(ctx, 2, "scales"));
  if (!ctx.node.has_attr("K") || !ctx.node.has_attr("N") || !ctx.node.has_attr("block_size"))
    return ctx.fail("attributes 'K', 'N' and 'block_size' are required");
  const int64_t k = ctx.node.attr_int("K", 0), n = ctx.node.attr_int("N", 0);
  const int64_t bits = ctx.node.attr_int("bits", 4), block = ctx.node.attr_int("block_size", 0);
  if (k <= 0 || n <= 0 || k > (int64_t{1} << 31) || n > (int64_t{1} << 31))
    return ctx.fail("attributes K = " + to_string(k) + " and N = " + to_string(n) + " must be in 1 to 2^31");
  if (bits != 4 && bits != 8) return ctx.fail("attribute 'bits' = " + to_string(bits) + " is not 4 or 8");
  if (block < 16 || (block & (block - 1)) != 0)
    return ctx.fail("attribute 'block_size' = " + to_string(block) + " must be a power of 2, at least 16");
  const int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
  if (const auto* b = dims(ctx, 1)) {
    if (b->size() != 3 || nn::dims_conflict((*b)[0], n) || nn::dims_conflict((*b)[1], blocks) ||
        nn::dims_conflict((*b)[2], blob))
      return ctx.fail("input 1 (B) must be [N, K / block_size, block_size * bits / 8] = [" + to_string(n) + ", " +
                      to_string(blocks) + ", " + to_string(blob) + "], got " + shape_to_string(*b));
  }
  if (static_numel(ctx.in(2)) >= 0 && static_numel(ctx.in(2)) != n * blocks)
    return ctx.fail("input 2 (scales) has " + to_string(static_numel(ctx.in(2))) + " values, N x blocks is " +
                    to_string(n * blocks));
  if (ctx.has_input(3) && ctx.in(3).dtype != DType::U8)
    return ctx.fail("input 3 (zero_points) of type " + std::string(dtype_name(ctx.in(3).dtype)) +
                    " is not supported (uint8 zero points are)");
  if (ctx.has_input(4)) return ctx.fail("input 4 (g_idx, act-order) is not supported");
  MS_RETURN_IF_ERROR(require_vector(ctx, 5, "bias", n));
  const auto* a = dims(ctx, 0);
  if (!a) {
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  if (a->empty() || nn::dims_conflict(a->back(), k))
    return ctx.fail("input 0 (A) " + shape_to_string(*a) + " must end in K = " + to_string(k));
  std::vector<int64_t> y = *a;
  y.back() = n;
  ctx.set_output(0, ctx.in(0).dtype, std::move(y));
  return Status::ok();
}

// Elementwise GELU forms: output like input 0; a bias input, where there is one, is 1-D over the
// last dim.
Status infer_gelu_like(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "X"));
  if (ctx.has_input(1)) {
    MS_RETURN_IF_ERROR(nn::require_same_dtype(ctx, 1, "bias"));
    const auto* x = dims(ctx, 0);
    MS_RETURN_IF_ERROR(require_vector(ctx, 1, "bias", x && !x->empty() ? x->back() : -1));
  }
  if (const auto* x = dims(ctx, 0))
    ctx.set_output(0, ctx.in(0).dtype, *x);
  else
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
  return Status::ok();
}

// GroupQueryAttention: query [B, S, N*H] (or packed Q, K, V [B, S, (N + 2 KV) * H] with no key and
// value), key and value [B, S, KV*H], past_key and past_value [B, KV, P, H], seqlens_k [B] (each
// batch's total length - 1) and total_sequence_length (a scalar); output [B, S, N*H], present_key
// and present_value [B, KV, max(total, P), H].
Status infer_gqa(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_float(ctx, 0, "query"));
  const int64_t heads = ctx.node.attr_int("num_heads", 0), kv = ctx.node.attr_int("kv_num_heads", 0);
  if (heads <= 0 || kv <= 0 || heads % kv != 0)
    return ctx.fail("attributes num_heads = " + to_string(heads) + " and kv_num_heads = " + to_string(kv) +
                    " must be positive, num_heads a multiple of kv_num_heads");
  for (size_t i : {size_t{5}, size_t{6}})
    if (!ctx.has_input(i) || ctx.in(i).dtype != DType::I32)
      return ctx.fail(std::string("input ") + to_string(i) + (i == 5 ? " (seqlens_k)" : " (total_sequence_length)") +
                      " must be given, int32");
  static const char* const kRefused[] = {"k_scale", "v_scale", "q_norm_weight", "k_norm_weight", "query_seqlens"};
  for (size_t i = 12; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i))
      return ctx.fail("input " + to_string(i) + " (" + (i < 17 ? kRefused[i - 12] : "unknown") +
                      ", the quantized or normalized caches and padded chunks) is not supported");
  const bool packed = !ctx.has_input(1);
  const auto* q = dims(ctx, 0);
  const DType dt = ctx.in(0).dtype;
  int64_t head_size = -1;
  if (q) {
    if (q->size() != 3) return ctx.fail("query must be 3-D [batch, sequence, hidden], got " + shape_to_string(*q));
    const int64_t per = packed ? heads + 2 * kv : heads;
    if ((*q)[2] >= 0) {
      if ((*q)[2] % per != 0)
        return ctx.fail("query's hidden size " + to_string((*q)[2]) + " is not a multiple of " + to_string(per) +
                        " heads");
      head_size = (*q)[2] / per;
    }
    ctx.set_output(0, dt, {(*q)[0], (*q)[1], head_size < 0 ? -1 : heads * head_size});
  } else {
    ctx.set_output_rank_unknown(0, dt);
  }
  // The present length depends on total_sequence_length's value.
  for (size_t i = 1; i < 3 && i < ctx.outputs.size(); ++i)
    if (!ctx.node.outputs[i].empty()) ctx.set_output(i, dt, {q ? (*q)[0] : -1, kv, -1, head_size});
  return Status::ok();
}

// GatherBlockQuantized: rows of a block-quantized table [V, D] (uint8 holding 8 / bits values a
// byte, or int4 / uint4), dequantized: output indices' dims + [D], of the scales' type. The form
// LLM exports use: gather_axis 0, quantize_axis 1 (the last).
Status infer_gather_block_quantized(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  if (dt != DType::U8 && dt != DType::I4 && dt != DType::U4)
    return ctx.fail("input 0 (data) of type " + std::string(dtype_name(dt)) +
                    " is not supported (uint8, int4 and uint4 are)");
  if (ctx.in(1).dtype != DType::I32 && ctx.in(1).dtype != DType::I64)
    return ctx.fail("input 1 (indices) must be int32 or int64");
  MS_RETURN_IF_ERROR(require_float(ctx, 2, "scales"));
  if (ctx.has_input(3) && ctx.in(3).dtype != dt) return ctx.fail("input 3 (zero_points) must have data's type");
  const int64_t bits = ctx.node.attr_int("bits", 4), block = ctx.node.attr_int("block_size", 128);
  if (dt == DType::U8 ? (bits != 4 && bits != 8) : bits != 4)
    return ctx.fail("attribute 'bits' = " + to_string(bits) + " is not supported (4, or 8 for uint8 data)");
  if (block < 16 || (block & (block - 1)) != 0)
    return ctx.fail("attribute 'block_size' = " + to_string(block) + " must be a power of 2, at least 16");
  const auto* d = dims(ctx, 0);
  const int64_t qa = ctx.node.attr_int("quantize_axis", 1), ga = ctx.node.attr_int("gather_axis", 0);
  if ((d && d->size() != 2) || ga != 0 || (qa != 1 && qa != -1))
    return ctx.fail("only a 2-D table gathered on axis 0 and quantized along axis 1 is supported (gather_axis = " +
                    to_string(ga) + ", quantize_axis = " + to_string(qa) + ")");
  const auto* idx = dims(ctx, 1);
  if (!d || !idx) {
    ctx.set_output_rank_unknown(0, ctx.in(2).dtype);
    return Status::ok();
  }
  std::vector<int64_t> y = *idx;
  y.push_back((*d)[1] < 0 ? -1 : (*d)[1] * (dt == DType::U8 ? 8 / bits : 1));
  ctx.set_output(0, ctx.in(2).dtype, std::move(y));
  return Status::ok();
}

}  // namespace

void register_contrib_ops(Registry& r) {
  r.add(OpSchema{"SimplifiedLayerNormalization", "", 1, 2, 2, 1, 2, OpCategory::Norm, infer_simplified_ln,
                 [](const CostContext& c) { return io_cost(c, 4); }});
  r.add(ms_schema(
      "SkipLayerNormalization", 3, 5, 1, 4, OpCategory::Norm,
      [](InferContext& ctx) { return infer_skip_ln(ctx, false); }, 8));
  r.add(ms_schema(
      "SkipSimplifiedLayerNormalization", 3, 4, 1, 4, OpCategory::Norm,
      [](InferContext& ctx) { return infer_skip_ln(ctx, true); }, 6));
  OpSchema nbits = ms_schema("MatMulNBits", 3, 6, 1, 1, OpCategory::MatMul, infer_matmul_nbits, 0);
  nbits.cost = [](const CostContext& c) {
    Cost cost = io_cost(c, 0);
    const int64_t y = c.outputs.empty() ? -1 : static_numel(c.outputs[0]);
    if (y > 0) cost.flops = 2.0 * static_cast<double>(c.node.attr_int("K", 0)) * static_cast<double>(y);
    return cost;
  };
  r.add(std::move(nbits));
  r.add(ms_schema("GroupQueryAttention", 1, 17, 1, 3, OpCategory::MatMul, infer_gqa, 4));
  r.add(ms_schema("FastGelu", 1, 2, 1, 1, OpCategory::Activation, infer_gelu_like, 10));
  r.add(ms_schema("BiasGelu", 2, 2, 1, 1, OpCategory::Activation, infer_gelu_like, 10));
  r.add(ms_schema("QuickGelu", 1, 1, 1, 1, OpCategory::Activation, infer_gelu_like, 6));
  r.add(ms_schema("Gelu", 1, 1, 1, 1, OpCategory::Activation, infer_gelu_like, 10));
  r.add(ms_schema("GatherBlockQuantized", 3, 4, 1, 1, OpCategory::Other, infer_gather_block_quantized, 2));
  register_contrib_attention_ops(r);
}

}  // namespace ms::ops
