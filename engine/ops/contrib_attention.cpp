// Schemas of ONNX Runtime's attention-family contrib ops (com.microsoft), as its transformer
// optimizer writes BERT- and GPT-style models and as GenAI's builder writes LLMs for the providers
// without GroupQueryAttention:
//   Attention(input, weights, bias?, mask_index?, past?, attention_bias?) -> output, present?
//     the Q, K, V projections merged in one weight [D_in, Dq + Dk + Dv]; past/present [2, B, N, T, H].
//   MultiHeadAttention(query, key?, value?, bias?, key_padding_mask?, attention_bias?, past_key?,
//                      past_value?) -> output, present_key?, present_value?
//     Q, K, V already projected: [B, S, D] each, K and V also [B, N, L, H], packed K and V
//     [B, L, N, 2, H] or packed Q, K, V [B, S, N, 3, H].
//   RotaryEmbedding(input, position_ids, cos_cache, sin_cache) -> output
//   EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
//                           segment_embedding?, gamma, beta, mask?, position_ids?) -> output, mask_index?,
//                           embedding_sum?
// Masks as ONNX Runtime takes them: key lengths [B], end and start positions [2B], 0/1 masks [B, T] or
// [B, S, T]; masked scores get mask_filter_value (-10000) added. Kernels in backends/cpu/contrib_attention.cpp.
#include "engine/ops/contrib_internal.h"
#include "engine/ops/families.h"
#include "engine/ops/nn_internal.h"

namespace ms::ops {
namespace contrib_attention {
namespace {

using nn::dims_conflict;
using std::to_string;

const std::vector<int64_t>* dims_of(const InferContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.dims(i) : nullptr;
}

Status require_f32(const InferContext& ctx, size_t i, const char* name) {
  if (ctx.has_input(i) && ctx.in(i).dtype != DType::F32)
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be float32, got " +
                    std::string(dtype_name(ctx.in(i).dtype)));
  return Status::ok();
}

Status require_int(const InferContext& ctx, size_t i, const char* name, bool int64_too) {
  if (!ctx.has_input(i)) return Status::ok();
  const DType t = ctx.in(i).dtype;
  if (t != DType::I32 && !(int64_too && t == DType::I64))
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be int32" + (int64_too ? " or int64" : "") +
                    ", got " + std::string(dtype_name(t)));
  return Status::ok();
}

Status refuse_inputs(const InferContext& ctx, size_t from, const char* names) {
  for (size_t i = from; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) return ctx.fail("input " + to_string(i) + " (" + names + ") is not supported");
  return Status::ok();
}

// Attention: the three hidden sizes from qkv_hidden_sizes or the weights' columns / 3.
Status infer_attention(InferContext& ctx) {
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}, size_t{4}, size_t{5}})
    MS_RETURN_IF_ERROR(require_f32(ctx, i, i == 0 ? "input" : i == 1 ? "weights" : i == 2 ? "bias" : "past"));
  MS_RETURN_IF_ERROR(require_int(ctx, 3, "mask_index", false));
  MS_RETURN_IF_ERROR(refuse_inputs(ctx, 6, "past_sequence_length"));
  const int64_t heads = ctx.node.attr_int("num_heads", 0);
  if (heads <= 0) return ctx.fail("attribute 'num_heads' = " + to_string(heads) + " must be positive");
  if (ctx.node.attr_int("do_rotary", 0) != 0 || ctx.node.attr_int("past_present_share_buffer", 0) != 0)
    return ctx.fail("attributes 'do_rotary' and 'past_present_share_buffer' are not supported");
  const auto* x = dims_of(ctx, 0);
  const auto* w = dims_of(ctx, 1);
  if (x && x->size() != 3) return ctx.fail("input must be 3-D [batch, sequence, hidden], got " + shape_to_string(*x));
  if (w && (w->size() != 2 || (x && dims_conflict((*w)[0], (*x)[2]))))
    return ctx.fail("weights " + shape_to_string(*w) + " must be [input hidden, Q + K + V hidden]" +
                    (x ? " with input hidden " + to_string((*x)[2]) : ""));
  std::vector<int64_t> sizes = ctx.node.attr_ints("qkv_hidden_sizes");
  const int64_t total = w ? (*w)[1] : -1;
  if (sizes.empty() && total >= 0) {
    if (total % 3 != 0) return ctx.fail("the weights' " + to_string(total) + " columns are not three equal parts");
    sizes = {total / 3, total / 3, total / 3};
  }
  if (!sizes.empty()) {
    if (sizes.size() != 3 || sizes[0] != sizes[1] || (total >= 0 && sizes[0] + sizes[1] + sizes[2] != total))
      return ctx.fail("attribute 'qkv_hidden_sizes' must be 3 sizes, Q's equal to K's, summing to the weights' " +
                      to_string(total) + " columns");
    for (int64_t s : sizes)
      if (s <= 0 || s % heads != 0)
        return ctx.fail("hidden size " + to_string(s) +
                        " is not a positive multiple of num_heads = " + to_string(heads));
  }
  const int64_t dv = sizes.empty() ? -1 : sizes[2];
  ctx.set_output(0, DType::F32, {x ? (*x)[0] : -1, x ? (*x)[1] : -1, dv});
  if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty()) {
    const auto* past = dims_of(ctx, 4);
    if (past && past->size() != 5) return ctx.fail("past must be 5-D [2, batch, heads, past, head size]");
    const int64_t p = past ? (*past)[3] : 0, s = x ? (*x)[1] : -1;
    const int64_t h = sizes.empty() ? -1 : sizes[0] / heads;
    ctx.set_output(1, DType::F32, {2, x ? (*x)[0] : -1, heads, p < 0 || s < 0 ? -1 : p + s, h});
  }
  return Status::ok();
}

Status infer_mha(InferContext& ctx) {
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{6}, size_t{7}})
    MS_RETURN_IF_ERROR(require_f32(ctx, i, "query, key, value, bias, attention_bias, past_key and past_value"));
  MS_RETURN_IF_ERROR(require_int(ctx, 4, "key_padding_mask", false));
  MS_RETURN_IF_ERROR(refuse_inputs(ctx, 8, "past_sequence_length, cache_indirection"));
  if (ctx.outputs.size() > 3 && !ctx.node.outputs[3].empty()) return ctx.fail("output 3 (qk) is not supported");
  const int64_t heads = ctx.node.attr_int("num_heads", 0);
  if (heads <= 0) return ctx.fail("attribute 'num_heads' = " + to_string(heads) + " must be positive");
  const auto* q = dims_of(ctx, 0);
  const auto* k = dims_of(ctx, 1);
  const auto* v = dims_of(ctx, 2);
  if (q && q->size() != 3 && q->size() != 5)
    return ctx.fail("query must be [batch, sequence, hidden] or packed [batch, sequence, heads, 3, head size], got " +
                    shape_to_string(*q));
  if (q && q->size() == 5 && ctx.has_input(1))
    return ctx.fail("a packed query [batch, sequence, heads, 3, head size] takes no key or value");
  if (k && (k->size() < 3 || k->size() > 5))
    return ctx.fail("key must be 3-D, 4-D [batch, heads, length, head size] or packed 5-D, got " + shape_to_string(*k));
  int64_t dv = -1;
  if (q && q->size() == 5) dv = (*q)[4] < 0 ? -1 : (*q)[2] * (*q)[4];
  if (k && k->size() == 5) dv = (*k)[4] < 0 ? -1 : (*k)[2] * (*k)[4];
  if (v && v->size() == 3) dv = (*v)[2];
  if (v && v->size() == 4) dv = (*v)[1] < 0 || (*v)[3] < 0 ? -1 : (*v)[1] * (*v)[3];
  const int64_t b = q ? (*q)[0] : -1, s = q ? (*q)[1] : -1;
  ctx.set_output(0, DType::F32, {b, s, dv});
  for (size_t i = 1; i < 3 && i < ctx.outputs.size(); ++i)
    if (!ctx.node.outputs[i].empty()) ctx.set_output(i, DType::F32, {b, heads, -1, -1});
  return Status::ok();
}

Status infer_rotary(InferContext& ctx) {
  MS_RETURN_IF_ERROR(require_f32(ctx, 0, "input"));
  MS_RETURN_IF_ERROR(require_int(ctx, 1, "position_ids", true));
  MS_RETURN_IF_ERROR(require_f32(ctx, 2, "cos_cache"));
  MS_RETURN_IF_ERROR(require_f32(ctx, 3, "sin_cache"));
  if (ctx.node.attr_int("is_packed_batching", 0) != 0)
    return ctx.fail("attribute 'is_packed_batching' is not supported");
  // 'scale' is taken and, as ONNX Runtime's kernels do, not applied (its outputs are the same at any
  // scale).
  const auto* x = dims_of(ctx, 0);
  if (x && x->size() != 3 && x->size() != 4)
    return ctx.fail("input must be [batch, sequence, hidden] or [batch, heads, sequence, head size], got " +
                    shape_to_string(*x));
  if (x)
    ctx.set_output(0, DType::F32, *x);
  else
    ctx.set_output_rank_unknown(0, DType::F32);
  return Status::ok();
}

Status infer_embed_ln(InferContext& ctx) {
  for (size_t i : {size_t{0}, size_t{2}, size_t{3}, size_t{5}, size_t{6}})
    if (!ctx.has_input(i))
      return ctx.fail("input " + to_string(i) +
                      " is required (input_ids, word_embedding, position_embedding, gamma and beta are)");
  for (size_t i : {size_t{0}, size_t{1}, size_t{7}, size_t{8}})
    MS_RETURN_IF_ERROR(require_int(ctx, i,
                                   i == 0   ? "input_ids"
                                   : i == 1 ? "segment_ids"
                                   : i == 7 ? "mask"
                                            : "position_ids",
                                   false));
  for (size_t i : {size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{6}})
    MS_RETURN_IF_ERROR(require_f32(ctx, i, "the embeddings, gamma and beta"));
  if (ctx.has_input(1) != ctx.has_input(4)) return ctx.fail("segment_ids and segment_embedding must be given together");
  const auto* ids = dims_of(ctx, 0);
  const auto* word = dims_of(ctx, 2);
  if (ids && ids->size() != 2) return ctx.fail("input_ids must be [batch, sequence], got " + shape_to_string(*ids));
  if (word && word->size() != 2)
    return ctx.fail("word_embedding must be [vocabulary, hidden], got " + shape_to_string(*word));
  for (size_t i : {size_t{3}, size_t{4}})
    if (const auto* e = dims_of(ctx, i); e && (e->size() != 2 || (word && dims_conflict((*e)[1], (*word)[1]))))
      return ctx.fail(std::string(i == 3 ? "position" : "segment") + "_embedding " + shape_to_string(*e) +
                      " must be [rows, hidden] with the word embedding's hidden size");
  const int64_t b = ids ? (*ids)[0] : -1, s = ids ? (*ids)[1] : -1, h = word ? (*word)[1] : -1;
  ctx.set_output(0, DType::F32, {b, s, h});
  if (ctx.outputs.size() > 1 && !ctx.node.outputs[1].empty()) ctx.set_output(1, DType::I32, {b});
  if (ctx.outputs.size() > 2 && !ctx.node.outputs[2].empty()) ctx.set_output(2, DType::F32, {b, s, h});
  return Status::ok();
}

// 2 * multiply-adds: the projection (Attention's), then Q Kᵀ and the probabilities times V over
// `keys` keys (the output's [B, S, Dv] and Q's hidden size Dq; Dq = Dv where not known apart).
Cost attention_cost(const CostContext& c, double projection, int64_t keys, int64_t dq) {
  Cost cost = nn::io_cost(c, 0);
  const auto& y = c.outputs.empty() ? std::nullopt : c.outputs[0].dims;
  if (!y || y->size() != 3 || keys <= 0 || static_numel(c.outputs[0]) <= 0) return cost;
  const double rows = static_cast<double>((*y)[0] * (*y)[1]);
  cost.flops =
      projection + 2.0 * rows * static_cast<double>(keys) * static_cast<double>((dq > 0 ? dq : (*y)[2]) + (*y)[2]);
  return cost;
}

Cost attention_op_cost(const CostContext& c) {
  const auto& x = c.inputs[0].dims;
  const auto& w = c.inputs.size() > 1 ? c.inputs[1].dims : std::nullopt;
  if (!x || !w || x->size() != 3 || w->size() != 2) return nn::io_cost(c, 0);
  const double proj = 2.0 * static_cast<double>((*x)[0] * (*x)[1]) * static_cast<double>((*w)[0] * (*w)[1]);
  const auto& past = c.inputs.size() > 4 ? c.inputs[4].dims : std::nullopt;
  const int64_t keys = (*x)[1] + (past && past->size() == 5 ? (*past)[3] : 0);
  const std::vector<int64_t> sizes = c.node.attr_ints("qkv_hidden_sizes");
  return attention_cost(c, proj, keys, sizes.size() == 3 ? sizes[0] : (*w)[1] / 3);
}

Cost mha_cost(const CostContext& c) {
  const auto& q = c.inputs[0].dims;
  const auto& k = c.inputs.size() > 1 ? c.inputs[1].dims : std::nullopt;
  int64_t keys = q && q->size() == 5 ? (*q)[1] : -1;
  if (k) keys = k->size() == 4 ? (*k)[2] : (*k)[1];
  const auto& past = c.inputs.size() > 6 ? c.inputs[6].dims : std::nullopt;
  if (past && past->size() == 4 && keys >= 0) keys += (*past)[2];
  return attention_cost(c, 0, keys, q && q->size() == 3 ? (*q)[2] : -1);
}

}  // namespace
}  // namespace contrib_attention

void register_contrib_attention_ops(Registry& r) {
  using namespace contrib_attention;
  OpSchema attention = ms_schema("Attention", 2, 7, 1, 2, OpCategory::MatMul, contrib_attention::infer_attention, 0);
  attention.cost = attention_op_cost;
  r.add(std::move(attention));
  OpSchema mha = ms_schema("MultiHeadAttention", 1, 10, 1, 4, OpCategory::MatMul, infer_mha, 0);
  mha.cost = mha_cost;
  r.add(std::move(mha));
  r.add(ms_schema("RotaryEmbedding", 4, 4, 1, 1, OpCategory::Other, contrib_attention::infer_rotary, 3));
  r.add(ms_schema("EmbedLayerNormalization", 1, 9, 1, 3, OpCategory::Norm, infer_embed_ln, 8));
}

}  // namespace ms::ops
