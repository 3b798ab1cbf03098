// CPU kernels of ONNX Runtime's attention-family contrib ops (schemas in ops/contrib_attention.cpp).
// Attention projects Q, K and V with one Eigen product into a [B·S, Dq + Dk + Dv] buffer; both ops
// then read Q, K and V where they lie (strided views of that buffer, of a packed input or of the
// present cache they fill) and run the shared attention kernel (attention_fast.h), with the masks
// built as ONNX Runtime builds them: mask_filter_value at each masked key, attention_bias added.
// RotaryEmbedding rotates pairs by its cos/sin caches at each position; EmbedLayerNormalization
// sums the three embeddings and normalizes each row (double sums).
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/backends/cpu/attention_fast.h"
#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_onednn.h"

namespace ms::cpu {
namespace contrib_attention {
namespace {

using std::to_string;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

bool wants(const runtime::KernelContext& ctx, size_t i) {
  return i < ctx.num_outputs() && !ctx.node().outputs[i].empty();
}

// One attention step: the new tokens' Q, K and V where they lie, the past, and the options.
struct Step {
  int64_t batch = 1, q_len = 0, kv_new = 0, past = 0, heads = 1, head = 0, v_head = 0;
  AttentionOperand q, k, v;
  const float* past_k = nullptr;  // [B, N, P, H] each
  const float* past_v = nullptr;
  float scale = 1, mask_filter = -10000.f;
  bool causal = false;
  int64_t total() const { return past + kv_new; }
};

// The present cache [B, N, T, H]: the past, then the new tokens' rows.
void fill_cache(const Step& s, const AttentionOperand& x, const float* past, int64_t h, float* out) {
  const int64_t t = s.total();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t n = 0; n < s.heads; ++n) {
      float* dst = out + (b * s.heads + n) * t * h;
      if (past && s.past > 0)
        std::memcpy(dst, past + (b * s.heads + n) * s.past * h, static_cast<size_t>(s.past * h) * sizeof(float));
      const float* src = static_cast<const float*>(x.data) + b * x.sb + n * x.sh;
      for (int64_t j = 0; j < s.kv_new; ++j)
        for (int64_t e = 0; e < h; ++e) dst[(s.past + j) * h + e] = src[j * x.ss + e * x.sd];
    }
}

// mask_filter_value at every key that `m` masks for batch b, query row i of [B, S, T] rows `row`:
// key lengths [B], end and start positions [2B], a 0/1 mask [B, T] or [B, S, T].
Status key_mask_row(runtime::KernelContext& ctx, const Tensor& m, const Step& s, int64_t b, int64_t i, float* row) {
  const int32_t* d = m.data<int32_t>();
  const int64_t t = s.total();
  if (m.rank() == 1 && (m.dim(0) == s.batch || m.dim(0) == 2 * s.batch)) {
    const int64_t end = d[b], start = m.dim(0) == 2 * s.batch ? d[s.batch + b] : 0;
    for (int64_t j = 0; j < t; ++j)
      if (j >= end || j < start) row[j] = s.mask_filter;
    return Status::ok();
  }
  if (m.rank() == 2 && m.dim(0) == s.batch && m.dim(1) == t) {
    for (int64_t j = 0; j < t; ++j)
      if (d[b * t + j] == 0) row[j] = s.mask_filter;
    return Status::ok();
  }
  if (m.rank() == 3 && m.dim(0) == s.batch && m.dim(1) == s.q_len && m.dim(2) == t) {
    for (int64_t j = 0; j < t; ++j)
      if (d[(b * s.q_len + i) * t + j] == 0) row[j] = s.mask_filter;
    return Status::ok();
  }
  return ctx.unsupported_case("mask " + shape_to_string(m.shape()) + " is not [batch], [2 x batch], [batch, " +
                              to_string(t) + "] or [batch, " + to_string(s.q_len) + ", " + to_string(t) + "]");
}

// The additive mask [B, N or 1, S, T] of a key mask, causal masking after a past, and an attention
// bias [B or 1, N or 1, S, T]; p's mask fields point into it. Nothing when none applies (causal
// masking without a past is the kernel's own).
Status build_mask(runtime::KernelContext& ctx, const Step& s, const Tensor* key_mask, const Tensor* bias,
                  Tensor& buffer, AttentionProblem& p) {
  const bool causal_rows = s.causal && (s.past > 0 || key_mask || bias);
  p.causal = s.causal && !causal_rows;
  if (!key_mask && !bias && !causal_rows) return Status::ok();
  const int64_t t = s.total();
  int64_t bb = 1, bh = 1;
  if (bias) {
    const Shape& d = bias->shape();
    if (d.size() != 4 || (d[0] != 1 && d[0] != s.batch) || (d[1] != 1 && d[1] != s.heads) || d[2] != s.q_len ||
        d[3] != t)
      return ctx.fail("attention_bias " + shape_to_string(bias->shape()) + " must be [batch or 1, heads or 1, " +
                      to_string(s.q_len) + ", " + to_string(t) + "]");
    bb = d[0], bh = d[1];
  }
  MS_ASSIGN_OR_RETURN(buffer, ctx.scratch(DType::F32, Shape({s.batch, bh, s.q_len, t})));
  float* out = buffer.data<float>();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < bh; ++h)
      for (int64_t i = 0; i < s.q_len; ++i) {
        float* row = out + ((b * bh + h) * s.q_len + i) * t;
        std::fill(row, row + t, 0.f);
        if (key_mask) MS_RETURN_IF_ERROR(key_mask_row(ctx, *key_mask, s, b, i, row));
        if (causal_rows)
          for (int64_t j = s.past + i + 1; j < t; ++j) row[j] = s.mask_filter;
        if (bias) {
          const float* br = bias->data<float>() + (((bb == 1 ? 0 : b) * bh + h) * s.q_len + i) * t;
          for (int64_t j = 0; j < t; ++j) row[j] += br[j];
        }
      }
  p.mask = out;
  p.mb = bh * s.q_len * t;
  p.mh = bh == 1 ? 0 : s.q_len * t;
  p.mi = t;
  return Status::ok();
}

// Runs the step into y [B, S, N·Hv]; the present caches, where given, receive K and V (else
// scratch holds them when there is a past).
Status attend(runtime::KernelContext& ctx, Step s, const Tensor* key_mask, const Tensor* bias, float* y,
              float* present_k, float* present_v) {
  AttentionProblem p;
  p.batch = s.batch, p.heads = s.heads, p.q_len = s.q_len, p.kv_len = s.total();
  p.head_size = s.head, p.v_head_size = s.v_head;
  p.q = s.q, p.k = s.k, p.v = s.v;
  Tensor kbuf, vbuf, mask;
  const int64_t t = s.total();
  if (s.past > 0 || present_k) {
    if (!present_k) {
      MS_ASSIGN_OR_RETURN(kbuf, ctx.scratch(DType::F32, Shape({s.batch, s.heads, t, s.head})));
      MS_ASSIGN_OR_RETURN(vbuf, ctx.scratch(DType::F32, Shape({s.batch, s.heads, t, s.v_head})));
      present_k = kbuf.data<float>(), present_v = vbuf.data<float>();
    }
    fill_cache(s, s.k, s.past_k, s.head, present_k);
    fill_cache(s, s.v, s.past_v, s.v_head, present_v);
    p.k = {present_k, s.heads * t * s.head, t * s.head, s.head, 1};
    p.v = {present_v, s.heads * t * s.v_head, t * s.v_head, s.v_head, 1};
  }
  p.y = y;
  p.yb = s.q_len * s.heads * s.v_head, p.ys = s.heads * s.v_head, p.yh = s.v_head, p.yd = 1;
  p.scale = s.scale;
  MS_RETURN_IF_ERROR(build_mask(ctx, s, key_mask, bias, mask, p));
  return attention_f32(ctx, p);
}

const Tensor* optional(const runtime::KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

// --- Attention ---------------------------------------------------------------------------------------

// qkv [rows, cols] = x [rows, D] w [D, cols] (+ bias): oneDNN's matmul (its primitive cached by the
// shapes), Eigen where oneDNN declines.
Status project(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& qkv) {
  const int64_t rows = qkv.dim(0), cols = qkv.dim(1), k = w.dim(0);
  const Shape a_dims{rows, k}, b_dims{k, cols}, y_dims{rows, cols};
  Status st = nn::matmul_onednn(ctx, x.raw(), nn::strided_desc(a_dims, {k, 1}, DType::F32), w.raw(),
                                nn::strided_desc(b_dims, {cols, 1}, DType::F32), qkv.raw(),
                                nn::strided_desc(y_dims, {cols, 1}, DType::F32), 1.f, false,
                                "contrib_attention|" + to_string(rows) + "|" + to_string(k) + "|" + to_string(cols));
  if (st.code() == ErrorCode::Unsupported) {
    Eigen::Map<const RowMatrix> xm(x.data<float>(), rows, k);
    Eigen::Map<const RowMatrix> wm(w.data<float>(), k, cols);
    Eigen::Map<RowMatrix>(qkv.data<float>(), rows, cols).noalias() = xm * wm;
  } else if (!st.is_ok()) {
    return st;
  }
  if (!bias) return Status::ok();
  float* y = qkv.data<float>();
  const float* b = bias->data<float>();
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] += b[c];
  }
  return Status::ok();
}

Status attention_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const ir::Node& n = ctx.node();
  Step s;
  s.heads = n.attr_int("num_heads", 1);
  if (x.rank() != 3 || w.rank() != 2 || w.dim(0) != x.dim(2))
    return ctx.fail("input " + shape_to_string(x.shape()) + " and weights " + shape_to_string(w.shape()) +
                    " must be [batch, sequence, D] and [D, Q + K + V hidden]");
  const int64_t cols = w.dim(1);
  std::vector<int64_t> sizes = n.attr_ints("qkv_hidden_sizes", {cols / 3, cols / 3, cols / 3});
  if (sizes.size() != 3 || sizes[0] + sizes[1] + sizes[2] != cols)
    return ctx.fail("the hidden sizes do not sum to the weights' " + to_string(cols) + " columns");
  s.batch = x.dim(0), s.q_len = x.dim(1), s.kv_new = s.q_len;
  s.head = sizes[0] / s.heads, s.v_head = sizes[2] / s.heads;
  if (ctx.has_input(2) && ctx.input(2).numel() != cols)
    return ctx.fail("bias has " + to_string(ctx.input(2).numel()) + " values, the weights " + to_string(cols) +
                    " columns");
  MS_ASSIGN_OR_RETURN(Tensor qkv, ctx.scratch(DType::F32, Shape({s.batch * s.q_len, cols})));
  MS_RETURN_IF_ERROR(project(ctx, x, w, optional(ctx, 2), qkv));
  const float* base = qkv.data<float>();
  s.q = {base, s.q_len * cols, s.head, cols, 1};
  s.k = {base + sizes[0], s.q_len * cols, s.head, cols, 1};
  s.v = {base + sizes[0] + sizes[1], s.q_len * cols, s.v_head, cols, 1};
  if (const Tensor* past = optional(ctx, 4)) {
    if (past->rank() != 5 || past->dim(0) != 2 || past->dim(1) != s.batch || past->dim(2) != s.heads ||
        past->dim(4) != s.head || s.head != s.v_head)
      return ctx.fail("past " + shape_to_string(past->shape()) + " must be [2, " + to_string(s.batch) + ", " +
                      to_string(s.heads) + ", past, " + to_string(s.head) + "] (Q, K and V of one hidden size)");
    s.past = past->dim(3);
    s.past_k = past->data<float>(), s.past_v = s.past_k + past->numel() / 2;
  }
  s.scale = n.attr_float("scale", 0.f);
  if (s.scale == 0.f) s.scale = 1.f / std::sqrt(static_cast<float>(s.head));
  s.mask_filter = n.attr_float("mask_filter_value", -10000.f);
  s.causal = n.attr_int("unidirectional", 0) != 0;
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, Shape({s.batch, s.q_len, sizes[2]})));
  float *pk = nullptr, *pv = nullptr;
  if (wants(ctx, 1)) {
    if (s.head != s.v_head) return ctx.fail("present needs Q, K and V of one hidden size");
    MS_ASSIGN_OR_RETURN(Tensor * present,
                        ctx.allocate_output(1, DType::F32, Shape({2, s.batch, s.heads, s.total(), s.head})));
    pk = present->data<float>(), pv = pk + present->numel() / 2;
  }
  MS_RETURN_IF_ERROR(attend(ctx, s, optional(ctx, 3), optional(ctx, 5), y->data<float>(), pk, pv));
  ctx.set_impl("attention_f32");
  return Status::ok();
}

// --- MultiHeadAttention ------------------------------------------------------------------------------

// Q, K and V views of MultiHeadAttention's inputs: 3-D, K and V [B, N, L, H], packed K and V, or packed
// Q, K and V; with a bias, 3-D Q, K and V are copied with it added into `held`.
Status mha_operands(runtime::KernelContext& ctx, Step& s, std::vector<Tensor>& held) {
  const Tensor& q = ctx.input(0);
  const int64_t n = s.heads;
  s.batch = q.dim(0), s.q_len = q.dim(1);
  const float* qd = q.data<float>();
  if (q.rank() == 5) {  // [B, S, N, 3, H]
    if (q.dim(2) != n || q.dim(3) != 3) return ctx.fail("packed query must be [batch, sequence, num_heads, 3, head]");
    s.head = s.v_head = q.dim(4), s.kv_new = s.q_len;
    const int64_t row = n * 3 * s.head;
    s.q = {qd, s.q_len * row, 3 * s.head, row, 1};
    s.k = {qd + s.head, s.q_len * row, 3 * s.head, row, 1};
    s.v = {qd + 2 * s.head, s.q_len * row, 3 * s.head, row, 1};
    return ctx.has_input(3) ? ctx.unsupported_case("bias with a packed query") : Status::ok();
  }
  if (q.dim(2) % n != 0)
    return ctx.fail("query's hidden size " + to_string(q.dim(2)) + " is not a multiple of num_heads");
  s.head = q.dim(2) / n;
  if (!ctx.has_input(1)) return ctx.fail("key is required unless the query packs Q, K and V");
  const Tensor& k = ctx.input(1);
  const bool bias = ctx.has_input(3);
  if (k.rank() == 5) {  // [B, L, N, 2, H]
    if (k.dim(0) != s.batch || k.dim(2) != n || k.dim(3) != 2 || k.dim(4) != s.head || ctx.has_input(2) || bias)
      return ctx.fail("packed key " + shape_to_string(k.shape()) + " must be [batch, length, num_heads, 2, " +
                      to_string(s.head) + "] with no value or bias");
    s.kv_new = k.dim(1), s.v_head = s.head;
    const int64_t row = n * 2 * s.head;
    s.k = {k.data<float>(), s.kv_new * row, 2 * s.head, row, 1};
    s.v = {k.data<float>() + s.head, s.kv_new * row, 2 * s.head, row, 1};
  } else {
    if (!ctx.has_input(2)) return ctx.fail("value is required with an unpacked key");
    const Tensor& v = ctx.input(2);
    if (k.rank() != v.rank() || k.dim(0) != s.batch || v.dim(0) != s.batch)
      return ctx.fail("key " + shape_to_string(k.shape()) + " and value " + shape_to_string(v.shape()) +
                      " must both be [batch, length, hidden] or [batch, num_heads, length, head]");
    if (k.rank() == 4) {
      if (k.dim(1) != n || v.dim(1) != n || k.dim(3) != s.head || v.dim(2) != k.dim(2) || bias)
        return ctx.fail("key and value [batch, num_heads, length, head] must have " + to_string(n) + " heads of " +
                        to_string(s.head) + " and no bias");
      s.kv_new = k.dim(2), s.v_head = v.dim(3);
      s.k = {k.data<float>(), n * s.kv_new * s.head, s.kv_new * s.head, s.head, 1};
      s.v = {v.data<float>(), n * s.kv_new * s.v_head, s.kv_new * s.v_head, s.v_head, 1};
    } else {
      if (k.rank() != 3 || k.dim(2) != q.dim(2) || v.dim(1) != k.dim(1) || v.dim(2) % n != 0)
        return ctx.fail("key " + shape_to_string(k.shape()) + " and value " + shape_to_string(v.shape()) +
                        " must be [batch, length, " + to_string(q.dim(2)) + "] and [batch, length, heads x Hv]");
      s.kv_new = k.dim(1), s.v_head = v.dim(2) / n;
      s.k = {k.data<float>(), s.kv_new * k.dim(2), s.head, k.dim(2), 1};
      s.v = {v.data<float>(), s.kv_new * v.dim(2), s.v_head, v.dim(2), 1};
    }
  }
  s.q = {qd, s.q_len * q.dim(2), s.head, q.dim(2), 1};
  if (!bias) return Status::ok();
  const Tensor& bt = ctx.input(3);
  const int64_t d = q.dim(2), dv = n * s.v_head;
  if (bt.numel() != 2 * d + dv || ctx.input(1).rank() != 3)
    return ctx.fail("bias has " + to_string(bt.numel()) + " values, Q + K + V hidden is " + to_string(2 * d + dv));
  // Each operand plus its part of the bias, contiguous [B, rows, hidden].
  auto biased = [&](AttentionOperand& o, int64_t rows, int64_t width, const float* b) -> Status {
    MS_ASSIGN_OR_RETURN(Tensor t, ctx.scratch(DType::F32, Shape({s.batch, rows, width})));
    float* dst = t.data<float>();
    for (int64_t i = 0; i < s.batch * rows; ++i)
      for (int64_t e = 0; e < width; ++e) dst[i * width + e] = static_cast<const float*>(o.data)[i * width + e] + b[e];
    o.data = dst;
    held.push_back(std::move(t));
    return Status::ok();
  };
  const float* b = bt.data<float>();
  MS_RETURN_IF_ERROR(biased(s.q, s.q_len, d, b));
  MS_RETURN_IF_ERROR(biased(s.k, s.kv_new, d, b + d));
  return biased(s.v, s.kv_new, dv, b + 2 * d);
}

Status mha_kernel(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  Step s;
  s.heads = n.attr_int("num_heads", 1);
  std::vector<Tensor> held;
  MS_RETURN_IF_ERROR(mha_operands(ctx, s, held));
  if (ctx.has_input(6) != ctx.has_input(7)) return ctx.fail("past_key and past_value must be given together");
  if (ctx.has_input(6)) {
    const Tensor& pk = ctx.input(6);
    const Tensor& pv = ctx.input(7);
    if (ctx.input(0).rank() != 3 || ctx.input(1).rank() != 3)
      return ctx.unsupported_case("a past with packed or [batch, num_heads, length, head] key and value");
    if (pk.rank() != 4 || pk.dim(0) != s.batch || pk.dim(1) != s.heads || pk.dim(3) != s.head ||
        pv.shape() != Shape({s.batch, s.heads, pk.dim(2), s.v_head}))
      return ctx.fail("past_key " + shape_to_string(pk.shape()) + " and past_value " + shape_to_string(pv.shape()) +
                      " must be [batch, num_heads, past, head]");
    s.past = pk.dim(2);
    s.past_k = pk.data<float>(), s.past_v = pv.data<float>();
  }
  s.scale = n.attr_float("scale", 0.f);
  if (s.scale == 0.f) s.scale = 1.f / std::sqrt(static_cast<float>(s.head));
  s.mask_filter = n.attr_float("mask_filter_value", -10000.f);
  s.causal = n.attr_int("unidirectional", 0) != 0;
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, Shape({s.batch, s.q_len, s.heads * s.v_head})));
  float *pk = nullptr, *pv = nullptr;
  Tensor held_k, held_v;  // the cache a node asks for one half of keeps the other in scratch
  if (wants(ctx, 1) || wants(ctx, 2)) {
    auto cache = [&](size_t i, int64_t h, Tensor& held) -> Expected<float*> {
      const Shape shape({s.batch, s.heads, s.total(), h});
      if (wants(ctx, i)) {
        MS_ASSIGN_OR_RETURN(Tensor * t, ctx.allocate_output(i, DType::F32, shape));
        return t->data<float>();
      }
      MS_ASSIGN_OR_RETURN(held, ctx.scratch(DType::F32, shape));
      return held.data<float>();
    };
    MS_ASSIGN_OR_RETURN(pk, cache(1, s.head, held_k));
    MS_ASSIGN_OR_RETURN(pv, cache(2, s.v_head, held_v));
  }
  MS_RETURN_IF_ERROR(attend(ctx, s, optional(ctx, 4), optional(ctx, 5), y->data<float>(), pk, pv));
  ctx.set_impl("attention_f32");
  return Status::ok();
}

// --- RotaryEmbedding ---------------------------------------------------------------------------------

Status rotary_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& pos = ctx.input(1);
  const Tensor& cos = ctx.input(2);
  const Tensor& sin = ctx.input(3);
  const ir::Node& n = ctx.node();
  if (cos.rank() != 2 || sin.shape() != cos.shape())
    return ctx.fail("cos_cache " + shape_to_string(cos.shape()) + " and sin_cache " + shape_to_string(sin.shape()) +
                    " must be one [positions, rotary dim / 2] shape");
  const bool bnsh = x.rank() == 4;
  const int64_t batch = x.dim(0), seq = bnsh ? x.dim(2) : x.dim(1);
  int64_t heads = bnsh ? x.dim(1) : n.attr_int("num_heads", 0);
  const int64_t half = cos.dim(1), positions = cos.dim(0);
  const int64_t head = bnsh ? x.dim(3) : heads > 0 ? x.dim(2) / heads : 2 * half;
  if (!bnsh && heads <= 0) heads = head > 0 ? x.dim(2) / head : 0;
  const int64_t rot = n.attr_int("rotary_embedding_dim", 0) > 0 ? n.attr_int("rotary_embedding_dim", 0) : head;
  if (head <= 0 || heads * head != (bnsh ? heads * x.dim(3) : x.dim(2)) || rot > head || rot != 2 * half)
    return ctx.fail("input " + shape_to_string(x.shape()) + " with " + to_string(heads) +
                    " heads does not take a rotary dim of " + to_string(rot) + " from caches of " + to_string(half) +
                    " pairs");
  const bool offset = pos.numel() == 1 && pos.rank() <= 1;
  if (!offset && pos.shape() != Shape({batch, seq}))
    return ctx.fail("position_ids " + shape_to_string(pos.shape()) + " must be [batch, sequence] or one offset");
  const bool interleaved = n.attr_int("interleaved", 0) != 0;
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, x.shape()));
  const float* src = x.data<float>();
  float* dst = y->data<float>();
  std::memcpy(dst, src, static_cast<size_t>(x.numel()) * sizeof(float));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t) {
      const int64_t p = offset ? pos.at_int(0) + t : pos.at_int(b * seq + t);
      if (p < 0 || p >= positions)
        return ctx.fail("position " + to_string(p) + " is outside the caches' " + to_string(positions) + " positions");
      const float* c = cos.data<float>() + p * half;
      const float* sn = sin.data<float>() + p * half;
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t at = bnsh ? ((b * heads + h) * seq + t) * head : (b * seq + t) * heads * head + h * head;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i1 = interleaved ? at + 2 * i : at + i, i2 = interleaved ? i1 + 1 : i1 + half;
          dst[i1] = src[i1] * c[i] - src[i2] * sn[i];
          dst[i2] = src[i2] * c[i] + src[i1] * sn[i];
        }
      }
    }
  ctx.set_impl("ref");
  return Status::ok();
}

// --- EmbedLayerNormalization -------------------------------------------------------------------------

// Row `r` of an embedding table, or an error naming the table and the id.
Expected<const float*> table_row(runtime::KernelContext& ctx, const Tensor& table, int64_t id, const char* name) {
  if (id < 0 || id >= table.dim(0))
    return ctx.fail(std::string(name) + " id " + to_string(id) + " is outside the table's " + to_string(table.dim(0)) +
                    " rows");
  return table.data<float>() + id * table.dim(1);
}

Status embed_ln_kernel(runtime::KernelContext& ctx) {
  const Tensor& ids = ctx.input(0);
  const Tensor& word = ctx.input(2);
  const Tensor& pos = ctx.input(3);
  const int64_t batch = ids.dim(0), seq = ids.dim(1), hidden = word.dim(1);
  const Tensor* seg_ids = optional(ctx, 1);
  const Tensor* seg = optional(ctx, 4);
  const Tensor* mask = optional(ctx, 7);
  const Tensor* pos_ids = optional(ctx, 8);
  const Tensor& gamma = ctx.input(5);
  const Tensor& beta = ctx.input(6);
  if (gamma.numel() != hidden || beta.numel() != hidden)
    return ctx.fail("gamma and beta must have the hidden size's " + to_string(hidden) + " values");
  if ((seg_ids && seg_ids->shape() != ids.shape()) || (mask && mask->shape() != ids.shape()))
    return ctx.fail("segment_ids and mask must have input_ids' shape " + shape_to_string(ids.shape()));
  if (pos_ids && pos_ids->shape() != ids.shape() && pos_ids->shape() != Shape({1, seq}))
    return ctx.fail("position_ids " + shape_to_string(pos_ids->shape()) +
                    " must be [batch, sequence] or [1, sequence]");
  const double eps = ctx.node().attr_float("epsilon", 1e-12f);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, Shape({batch, seq, hidden})));
  float* sum_out = nullptr;
  if (wants(ctx, 2)) {
    MS_ASSIGN_OR_RETURN(Tensor * e, ctx.allocate_output(2, DType::F32, Shape({batch, seq, hidden})));
    sum_out = e->data<float>();
  }
  std::vector<float> sum(static_cast<size_t>(hidden));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t) {
      const int64_t r = b * seq + t;
      const int64_t p = pos_ids ? pos_ids->at_int(pos_ids->dim(0) == 1 ? t : r) : t;
      MS_ASSIGN_OR_RETURN(const float* w, table_row(ctx, word, ids.at_int(r), "input_ids"));
      MS_ASSIGN_OR_RETURN(const float* pe, table_row(ctx, pos, p, "position"));
      const float* se = nullptr;
      if (seg) {
        MS_ASSIGN_OR_RETURN(se, table_row(ctx, *seg, seg_ids->at_int(r), "segment_ids"));
      }
      double s1 = 0, s2 = 0;
      for (int64_t e = 0; e < hidden; ++e) {
        const float v = w[e] + pe[e] + (se ? se[e] : 0.f);
        sum[static_cast<size_t>(e)] = v;
        s1 += v;
        s2 += static_cast<double>(v) * v;
      }
      const double mean = s1 / static_cast<double>(hidden);
      const double inv = 1.0 / std::sqrt(std::max(s2 / static_cast<double>(hidden) - mean * mean, 0.0) + eps);
      float* out = y->data<float>() + r * hidden;
      for (int64_t e = 0; e < hidden; ++e)
        out[e] = static_cast<float>((sum[static_cast<size_t>(e)] - mean) * inv) * gamma.data<float>()[e] +
                 beta.data<float>()[e];
      if (sum_out) std::copy(sum.begin(), sum.end(), sum_out + r * hidden);
    }
  if (wants(ctx, 1)) {
    // The number of ones in each row of the mask (0 without one), as ONNX Runtime counts them.
    MS_ASSIGN_OR_RETURN(Tensor * mi, ctx.allocate_output(1, DType::I32, Shape({batch})));
    for (int64_t b = 0; b < batch; ++b) {
      int32_t ones = 0;
      for (int64_t t = 0; mask && t < seq; ++t) ones += mask->at_int(b * seq + t) == 1;
      mi->data<int32_t>()[b] = ones;
    }
  }
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace
}  // namespace contrib_attention

void register_contrib_attention_kernels(runtime::KernelRegistry& r) {
  using namespace contrib_attention;
  r.add("Attention", contrib_attention::attention_kernel, "com.microsoft");
  r.add("MultiHeadAttention", mha_kernel, "com.microsoft");
  r.add("RotaryEmbedding", contrib_attention::rotary_kernel, "com.microsoft");
  r.add("EmbedLayerNormalization", embed_ln_kernel, "com.microsoft");
}

}  // namespace ms::cpu
