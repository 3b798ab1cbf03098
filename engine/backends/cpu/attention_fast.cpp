// attention_f32 (see attention_fast.h), the FusedAttention kernel, and the ONNX Attention op's fast
// case. Scores and probabilities are f32 (the reference kernel in attention.cpp accumulates in
// double and rounds as the ONNX reference does, for the cases it alone takes).
#include "engine/backends/cpu/attention_fast.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "engine/backends/cpu/bf16_convert.h"
#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/backends/cpu/simd_exp.h"
#include "engine/ops/attention_shapes.h"
#include "engine/ops/fused.h"
#include "engine/ops/fused_attention.h"

namespace ms::cpu {
namespace {

// One row of scores in place: + mask, keys from `limit` on masked, softmax; all masked: zeros.
MS_SIMD_CLONES void softmax_scores_row(float* x, const float* mask, int64_t limit, int64_t n) {
  if (mask) {
#pragma omp simd
    for (int64_t j = 0; j < limit; ++j) x[j] += mask[j];
  }
  const float mx = max_f32(x, limit);  // (GCC 12 left the omp simd max reduction scalar: 80% of the row's time)
  if (limit == 0 || mx == -std::numeric_limits<float>::infinity()) {
    std::fill(x, x + n, 0.f);
    return;
  }
  const float inv = 1.f / exp_shifted_sum_f32(x, limit, mx);  // our exp: ~0.2 ns a value, the library's ~0.5
#pragma omp simd
  for (int64_t j = 0; j < limit; ++j) x[j] *= inv;
  std::fill(x + limit, x + n, 0.f);
}

// Softmax over the rows of a [B, H, n, Sk] block of scores for queries r0 .. r0 + n.
void softmax_scores(const AttentionProblem& p, float* s, int64_t r0, int64_t n) {
  const int64_t rows = p.batch * p.heads * n, sk = p.kv_len;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r0 + r % n, h = (r / n) % p.heads, b = r / (n * p.heads);
    const float* m = p.mask ? p.mask + b * p.mb + h * p.mh + i * p.mi : nullptr;
    const int64_t limit = p.causal ? std::min(sk, i + 1) : sk;
    softmax_scores_row(s + r * sk, m, limit, sk);
  }
}

std::string key_part(const Shape& dims, const Shape& strides) { return nn::key_of(dims) + "/" + nn::key_of(strides); }

// `base` advanced by `elements` of dtype t.
const void* advance(const void* base, int64_t elements, DType t) {
  return static_cast<const char*>(base) + elements * static_cast<int64_t>(dtype_size(t));
}

// Y rows of queries r0 .. r0 + n through the score block s (f32); bf16 problems round the
// probabilities into p16 for the product with V.
Status attention_block(runtime::KernelContext& ctx, const AttentionProblem& p, float* s, bf16* p16, int64_t r0,
                       int64_t n) {
  const int64_t B = p.batch, H = p.heads, Sk = p.kv_len, D = p.head_size, Dv = p.v_head_size;
  const DType t = p.dtype;
  const Shape s_dims{B, H, n, Sk}, s_str{H * n * Sk, n * Sk, Sk, 1};
  const dnnl::memory::desc s_md = nn::strided_desc(s_dims, s_str, DType::F32);
  const std::string tk = std::string(dtype_name(t)) + "|";
  if (D > 0) {
    const Shape q_dims{B, H, n, D}, q_str{p.q.sb, p.q.sh, p.q.ss, p.q.sd};
    const Shape k_dims{B, H, D, Sk}, k_str{p.k.sb, p.k.sh, p.k.sd, p.k.ss};
    const std::string key =
        "attn-qk|" + tk + key_part(q_dims, q_str) + "|" + key_part(k_dims, k_str) + "|" + std::to_string(p.scale);
    MS_RETURN_IF_ERROR(nn::matmul_onednn(ctx, advance(p.q.data, r0 * p.q.ss, t), nn::strided_desc(q_dims, q_str, t),
                                         p.k.data, nn::strided_desc(k_dims, k_str, t), s, s_md, p.scale, false, key));
  } else {
    std::fill(s, s + B * H * n * Sk, 0.f);
  }
  softmax_scores(p, s, r0, n);
  const void* probs = s;
  dnnl::memory::desc p_md = s_md;
  if (t == DType::BF16) {
    round_to_bf16(s, p16, B * H * n * Sk);
    probs = p16;
    p_md = nn::strided_desc(s_dims, s_str, DType::BF16);
  }
  const Shape v_dims{B, H, Sk, Dv}, v_str{p.v.sb, p.v.sh, p.v.ss, p.v.sd};
  const Shape y_dims{B, H, n, Dv}, y_str{p.yb, p.yh, p.ys, p.yd};
  const std::string key =
      "attn-pv|" + tk + key_part(s_dims, s_str) + "|" + key_part(v_dims, v_str) + "|" + key_part(y_dims, y_str);
  return nn::matmul_onednn(ctx, probs, p_md, p.v.data, nn::strided_desc(v_dims, v_str, t),
                           const_cast<void*>(advance(p.y, r0 * p.ys, t)), nn::strided_desc(y_dims, y_str, t), 1.f,
                           false, key);
}

// Y zero (no keys at all: every row is masked).
void zero_output(const AttentionProblem& p) {
  const auto es = static_cast<int64_t>(dtype_size(p.dtype));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < p.q_len; ++i)
        for (int64_t e = 0; e < p.v_head_size; ++e)
          std::memset(static_cast<char*>(p.y) + (b * p.yb + h * p.yh + i * p.ys + e * p.yd) * es, 0,
                      static_cast<size_t>(es));
}

}  // namespace

Status attention_f32(runtime::KernelContext& ctx, const AttentionProblem& p) {
  if (p.batch * p.heads * p.q_len * p.v_head_size == 0) return Status::ok();
  if (p.kv_len == 0) {
    zero_output(p);
    ctx.set_impl("attention:empty");
    return Status::ok();
  }
  const int64_t row_bytes = p.batch * p.heads * p.kv_len * static_cast<int64_t>(sizeof(float));
  const int64_t block = std::clamp<int64_t>(kScoreBlockBytes / row_bytes, 1, p.q_len);
  MS_ASSIGN_OR_RETURN(Tensor scores, ctx.scratch(DType::F32, {p.batch, p.heads, block, p.kv_len}));
  Tensor probs16;
  if (p.dtype == DType::BF16) {
    MS_ASSIGN_OR_RETURN(probs16, ctx.scratch(DType::BF16, {p.batch, p.heads, block, p.kv_len}));
  }
  for (int64_t r0 = 0; r0 < p.q_len; r0 += block)
    MS_RETURN_IF_ERROR(attention_block(ctx, p, scores.data<float>(), probs16.defined() ? probs16.data<bf16>() : nullptr,
                                       r0, std::min(block, p.q_len - r0)));
  ctx.set_impl(std::string(p.dtype == DType::BF16 ? "attention-bf16+" : "attention+") + ctx.impl());
  return Status::ok();
}

namespace {

// Element strides of a contiguous tensor's dims.
Shape strides_of(const Shape& dims) {
  Shape s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// An operand read through its layout: strides of b, h, s, d (an absent b gets the whole size).
AttentionOperand operand(const Tensor& t, const ops::AttentionAxes& ax) {
  const Shape st = strides_of(t.shape());
  auto at = [&](int pos) { return pos < 0 ? std::max<int64_t>(t.numel(), 1) : st[static_cast<size_t>(pos)]; };
  return AttentionOperand{t.raw(), at(ax.b), at(ax.h), at(ax.s), at(ax.d)};
}

// The mask's strides over (b, h, i) broadcast to [B, H, Sq, Sk] by numpy's rules; false when its last
// dim is not Sk or it does not broadcast.
bool mask_strides(const Shape& m, int64_t heads, int64_t q_len, int64_t kv_len, int64_t batch, AttentionProblem& p) {
  if (m.empty() || m.size() > 4 || m.back() != kv_len) return false;
  int64_t md[4] = {1, 1, 1, 1};
  for (size_t j = 0; j < m.size(); ++j) md[4 - m.size() + j] = m[j];
  const int64_t want[3] = {batch, heads, q_len};
  for (int j = 0; j < 3; ++j)
    if (md[j] != 1 && md[j] != want[j]) return false;
  p.mi = md[2] == 1 ? 0 : md[3];
  p.mh = md[1] == 1 ? 0 : md[2] * md[3];
  p.mb = md[0] == 1 ? 0 : md[1] * md[2] * md[3];
  return true;
}

// A bf16 problem where oneDNN has no bf16 matmul (oneDNN 2.6 computes bf16 on AVX-512 only): the
// same attention in f32 on widened Q, K and V (contiguous, as `p` reads them), Y rounded to bf16 once.
Status attention_bf16_in_f32(runtime::KernelContext& ctx, AttentionProblem p, const Tensor& q, const Tensor& k,
                             const Tensor& v, Tensor& y) {
  auto widened = [&](const Tensor& x) -> Expected<Tensor> {
    MS_ASSIGN_OR_RETURN(Tensor w, ctx.scratch(DType::F32, x.shape()));
    widen_bf16(x.data<bf16>(), w.data<float>(), x.numel());
    return w;
  };
  MS_ASSIGN_OR_RETURN(Tensor qf, widened(q));
  MS_ASSIGN_OR_RETURN(Tensor kf, widened(k));
  MS_ASSIGN_OR_RETURN(Tensor vf, widened(v));
  MS_ASSIGN_OR_RETURN(Tensor yf, ctx.scratch(DType::F32, y.shape()));
  p.dtype = DType::F32;
  p.q.data = qf.raw();
  p.k.data = kf.raw();
  p.v.data = vf.raw();
  p.y = yf.raw();
  MS_RETURN_IF_ERROR(attention_f32(ctx, p));
  round_to_bf16(yf.data<float>(), y.data<bf16>(), y.numel());
  std::string inner = ctx.impl();  // "attention+" and the products' kernel
  if (inner.rfind("attention+", 0) == 0) inner.erase(0, std::string("attention+").size());
  ctx.set_impl("attention-bf16-in-f32+" + inner);
  return Status::ok();
}

Status fused_attention_kernel(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  ops::AttentionAxes qa, ka, va, ya;
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  const std::string yl = n.attr_string("y_layout", "");
  if (!ops::parse_attention_layout(n.attr_string("q_layout", ""), q.shape().size(), qa) ||
      !ops::parse_attention_layout(n.attr_string("k_layout", ""), k.shape().size(), ka) ||
      !ops::parse_attention_layout(n.attr_string("v_layout", ""), v.shape().size(), va) ||
      !ops::parse_attention_layout(yl, yl.size(), ya))
    return ctx.fail("operand layouts do not match the operands' ranks");
  const DType t = q.dtype();
  if ((t != DType::F32 && t != DType::BF16) || k.dtype() != t || v.dtype() != t)
    return ctx.fail("Q, K and V must be f32, or bf16");
  AttentionProblem p;
  p.dtype = t;
  p.batch = qa.dim('b', q.shape());
  p.heads = qa.dim('h', q.shape());
  p.q_len = qa.dim('s', q.shape());
  p.head_size = qa.dim('d', q.shape());
  p.kv_len = ka.dim('s', k.shape());
  p.v_head_size = va.dim('d', v.shape());
  if (ka.dim('b', k.shape()) != p.batch || va.dim('b', v.shape()) != p.batch || ka.dim('h', k.shape()) != p.heads ||
      va.dim('h', v.shape()) != p.heads || ka.dim('d', k.shape()) != p.head_size || va.dim('s', v.shape()) != p.kv_len)
    return ctx.fail("Q " + shape_to_string(q.shape()) + ", K " + shape_to_string(k.shape()) + " and V " +
                    shape_to_string(v.shape()) + " disagree");
  Shape y_dims(yl.size());
  for (size_t i = 0; i < yl.size(); ++i)
    y_dims[i] = yl[i] == 'b' ? p.batch : yl[i] == 'h' ? p.heads : yl[i] == 's' ? p.q_len : p.v_head_size;
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, t, y_dims));
  p.q = operand(q, qa);
  p.k = operand(k, ka);
  p.v = operand(v, va);
  const AttentionOperand yo = operand(*y, ya);
  p.y = y->raw();
  p.yb = yo.sb, p.yh = yo.sh, p.ys = yo.ss, p.yd = yo.sd;
  p.scale = n.attr_float("scale", 1.f);
  p.causal = n.attr_int("is_causal", 0) != 0;
  Tensor mask;  // f32: the softmax pass adds it to f32 scores (a bf16 graph's mask widened)
  if (ctx.has_input(3)) {
    mask = ctx.input(3);
    if ((mask.dtype() != DType::F32 && mask.dtype() != DType::BF16) ||
        !mask_strides(mask.shape(), p.heads, p.q_len, p.kv_len, p.batch, p))
      return ctx.fail("the mask " + shape_to_string(mask.shape()) +
                      " must be f32 or bf16 and broadcast to [B, H, Sq, Sk]");
    if (mask.dtype() == DType::BF16) {
      MS_ASSIGN_OR_RETURN(Tensor wide, ctx.scratch(DType::F32, mask.shape()));
      widen_bf16(mask.data<bf16>(), wide.data<float>(), mask.numel());
      mask = wide;
    }
    p.mask = mask.data<float>();
  }
  // Once oneDNN has refused a bf16 matmul here (the CPU's ISA does not change), later calls widen at
  // once instead of failing to create the primitive again on every run.
  static std::atomic<bool> no_bf16_matmul{false};
  if (t == DType::BF16 && no_bf16_matmul.load(std::memory_order_relaxed))
    return attention_bf16_in_f32(ctx, p, q, k, v, *y);
  const Status s = attention_f32(ctx, p);
  if (t != DType::BF16 || s.code() != ErrorCode::Unsupported) return s;
  no_bf16_matmul.store(true, std::memory_order_relaxed);
  return attention_bf16_in_f32(ctx, p, q, k, v, *y);
}

}  // namespace

std::optional<Status> attention_onnx_fast(runtime::KernelContext& ctx) {
  for (size_t i = 4; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) return std::nullopt;  // past key/value, nonpad lengths
  for (size_t i = 1; i < ctx.num_outputs() && i < ctx.node().outputs.size(); ++i)
    if (!ctx.node().outputs[i].empty()) return std::nullopt;  // present key/value, qk output
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.has_input(i) || ctx.input(i).dtype() != DType::F32) return std::nullopt;
  ops::AttentionAttrs a;
  if (!ops::attention_attrs(ctx.node(), ctx.opset(), a).empty() || a.softcap != 0 || a.left_window >= 0 ||
      a.right_window >= 0 || (a.softmax_precision != 0 && a.softmax_precision != 1))
    return std::nullopt;
  ops::AttentionInputDims in;
  in.q = &ctx.input(0).shape();
  in.k = &ctx.input(1).shape();
  in.v = &ctx.input(2).shape();
  in.has_mask = ctx.has_input(3);
  if (in.has_mask) in.mask = &ctx.input(3).shape();
  ops::AttentionGeometry g;
  if (!ops::attention_geometry(ctx.node(), ctx.opset(), in, g).empty() || g.q_heads != g.kv_heads || g.past_len != 0)
    return std::nullopt;
  AttentionProblem p;
  p.batch = g.batch, p.heads = g.q_heads, p.q_len = g.q_len, p.kv_len = g.kv_len;
  p.head_size = g.head_size, p.v_head_size = g.v_head_size;
  if (in.has_mask && (ctx.input(3).dtype() != DType::F32 ||
                      !mask_strides(ctx.input(3).shape(), p.heads, p.q_len, p.kv_len, p.batch, p)))
    return std::nullopt;
  const char* layout = g.three_d ? "bshd" : "bhsd";
  ops::AttentionAxes ax;
  ops::parse_attention_layout(layout, 4, ax);
  // 3-D operands are [B, S, H·D]: the same bytes as [B, S, H, D].
  auto view = [&](const Tensor& t, int64_t heads, int64_t head) {
    return g.three_d ? t.reshaped({t.dim(0), t.dim(1), heads, head}) : t;
  };
  const Tensor q = view(ctx.input(0), p.heads, p.head_size), k = view(ctx.input(1), p.heads, p.head_size);
  const Tensor v = view(ctx.input(2), p.heads, p.v_head_size);
  p.q = operand(q, ax);
  p.k = operand(k, ax);
  p.v = operand(v, ax);
  auto y = ctx.allocate_output(0, DType::F32, ops::attention_y_dims(g));
  if (!y) return y.status();
  const Tensor yv = view(**y, p.heads, p.v_head_size);
  const AttentionOperand yo = operand(yv, ax);
  p.y = (*y)->raw();
  p.yb = yo.sb, p.yh = yo.sh, p.ys = yo.ss, p.yd = yo.sd;
  p.scale = a.has_scale ? a.scale : 1.f / std::sqrt(static_cast<float>(p.head_size));
  p.causal = a.is_causal != 0;
  if (in.has_mask) p.mask = ctx.input(3).data<float>();
  return attention_f32(ctx, p);
}

void register_fused_attention_kernel(runtime::KernelRegistry& r) {
  r.add("FusedAttention", fused_attention_kernel, ops::kFusedDomain);
}

}  // namespace ms::cpu
