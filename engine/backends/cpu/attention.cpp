// CPU kernels: Attention (opset 23+), ai.onnx.preview FlexAttention.
//
// Attention follows onnx/reference/ops/op_attention.py step by step, rounding where the reference
// holds an intermediate in a narrower type: scaled Q and K, the scores, each softcap step, scores +
// bias and the probabilities in the input type T; every softmax step in the softmax precision (the
// running sum rounded after each add for bf16, as ml_dtypes reduces, and once at the end otherwise,
// as numpy sums f16 in f32). Products and dot products accumulate in double. With f16/bf16 inputs
// this reproduces the reference's roundings instead of a more precise result it would not match.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/backends/cpu/attention_fast.h"
#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_kernels.h"
#include "engine/ops/attention_shapes.h"

namespace ms::cpu {
namespace {

using std::vector;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// v rounded to the precision of the float type T, kept as a double.
template <class T> inline double rt(double v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return static_cast<double>(static_cast<float>(T(static_cast<float>(v))));
}

// v rounded to the precision of the float dtype t.
inline double round_to(DType t, double v) {
  switch (t) {
    case DType::F32: return rt<float>(v);
    case DType::F16: return rt<f16>(v);
    case DType::BF16: return rt<bf16>(v);
    default: return v;
  }
}

using nn::visit_float;

// numpy's result type of two float dtypes (f16 with bf16 gives f32).
DType promote(DType a, DType b) {
  if (a == b) return a;
  return a == DType::F64 || b == DType::F64 ? DType::F64 : DType::F32;
}

// A (B, H, S, D) operand stored 4-D or as 3-D (B, S, H * D): offset of element (b, h, s, 0).
struct Layout {
  bool three_d = false;
  int64_t heads = 0, len = 0, dim = 0;
  int64_t offset(int64_t b, int64_t h, int64_t s) const {
    return three_d ? (b * len + s) * heads * dim + h * dim : ((b * heads + h) * len + s) * dim;
  }
};

// Everything the per-row loop reads.
struct Plan {
  ops::AttentionGeometry g;
  ops::AttentionAttrs a;
  DType t = DType::F32;          // Q, K, Y and qk_matmul_output
  DType bias_prec = DType::F32;  // scores + bias (numpy promotes T with a float mask's type)
  DType soft_prec = DType::F32;  // softmax
  double scale = 1;              // sqrt(scale), rounded to T
  double softcap = 0;            // rounded to T; 0 = none
  bool has_past = false;
  // attn_mask as an additive bias (bool: 0 / -inf) with its last-dim length and (b, h, i) strides.
  bool has_mask = false;
  vector<double> mask;
  int64_t mask_len = 0, mask_sb = 0, mask_sh = 0, mask_si = 0;
  vector<int64_t> nonpad;  // valid keys per batch; empty when not given
  bool window() const { return a.left_window >= 0 || a.right_window >= 0; }
  // Keys that precede the query block of batch b (the causal / window alignment).
  int64_t offset(int64_t b) const {
    if (has_past) return g.past_len;
    return nonpad.empty() ? 0 : nonpad[static_cast<size_t>(b)] - g.q_len;
  }
};

bool output_wanted(runtime::KernelContext& ctx, size_t i) {
  return i < ctx.num_outputs() && i < ctx.node().outputs.size() && !ctx.node().outputs[i].empty();
}

Status load_mask(runtime::KernelContext& ctx, Plan& p) {
  const Tensor& m = ctx.input(3);
  p.has_mask = true;
  p.mask.resize(static_cast<size_t>(m.numel()));
  const bool is_bool = m.dtype() == DType::Bool;
  const bool ok = visit_dtype(m.dtype(), [&](auto tag) {
    using M = typename decltype(tag)::type;
    const M* src = m.data<M>();
    for (size_t i = 0; i < p.mask.size(); ++i)
      p.mask[i] = is_bool ? (static_cast<bool>(src[i]) ? 0.0 : kNegInf) : static_cast<double>(src[i]);
  });
  if (!ok) return ctx.fail("input 3 (attn_mask) has unsupported dtype " + std::string(dtype_name(m.dtype())));
  if (is_float(m.dtype())) p.bias_prec = promote(p.t, m.dtype());
  int64_t md[4] = {1, 1, 1, 1};  // right-aligned to (batch, q_heads, q_len, keys)
  const int64_t r = m.rank();
  for (int64_t j = 0; j < r; ++j) md[4 - r + j] = m.dim(j);
  p.mask_len = md[3];
  p.mask_si = md[2] == 1 ? 0 : md[3];
  p.mask_sh = md[1] == 1 ? 0 : md[2] * md[3];
  p.mask_sb = md[0] == 1 ? 0 : md[1] * md[2] * md[3];
  return Status::ok();
}

Status load_geometry(runtime::KernelContext& ctx, Plan& p) {
  ops::AttentionInputDims in;
  in.q = &ctx.input(0).shape();
  in.k = &ctx.input(1).shape();
  in.v = &ctx.input(2).shape();
  in.has_mask = ctx.has_input(3);
  in.has_past_key = ctx.has_input(4);
  in.has_past_value = ctx.has_input(5);
  in.has_nonpad = ctx.has_input(6);
  if (in.has_mask) in.mask = &ctx.input(3).shape();
  if (in.has_past_key) in.past_key = &ctx.input(4).shape();
  if (in.has_past_value) in.past_value = &ctx.input(5).shape();
  if (in.has_nonpad) in.nonpad = &ctx.input(6).shape();
  if (std::string e = ops::attention_attrs(ctx.node(), ctx.opset(), p.a); !e.empty()) return ctx.fail(e);
  if (std::string e = ops::attention_geometry(ctx.node(), ctx.opset(), in, p.g); !e.empty()) return ctx.fail(e);
  p.has_past = in.has_past_key;
  if (in.has_nonpad) {
    if (ctx.input(6).dtype() != DType::I64) return ctx.fail("input 6 (nonpad_kv_seqlen) must be int64");
    const int64_t* np = ctx.input(6).data<int64_t>();
    p.nonpad.assign(np, np + ctx.input(6).numel());
  }
  return Status::ok();
}

Status make_plan(runtime::KernelContext& ctx, Plan& p) {
  p.t = ctx.input(0).dtype();
  if (!is_float(p.t) || ctx.input(1).dtype() != p.t || !is_float(ctx.input(2).dtype()))
    return ctx.fail("Q and K must share a float dtype and V must be float");
  if ((ctx.has_input(4) && ctx.input(4).dtype() != p.t) ||
      (ctx.has_input(5) && ctx.input(5).dtype() != ctx.input(2).dtype()))
    return ctx.fail("past_key/past_value must have the dtypes of K/V");
  MS_RETURN_IF_ERROR(load_geometry(ctx, p));
  p.bias_prec = p.t;
  if (p.has_mask = ctx.has_input(3); p.has_mask) MS_RETURN_IF_ERROR(load_mask(ctx, p));
  p.soft_prec = p.bias_prec;
  if (p.a.softmax_precision) p.soft_prec = *dtype_from_onnx(static_cast<int>(p.a.softmax_precision));
  const double scale =
      p.a.has_scale ? static_cast<double>(p.a.scale) : 1.0 / std::sqrt(static_cast<double>(p.g.head_size));
  p.scale = round_to(p.t, std::sqrt(scale));
  p.softcap = p.a.softcap > 0 ? round_to(p.t, static_cast<double>(p.a.softcap)) : 0.0;
  return Status::ok();
}

// out (B, H, past + S, D) as doubles: past (4-D, P rows; may be null) then cur (layout l), each value
// times mul rounded to T (mul = 1 copies).
template <class T>
void gather_rows(const T* past, const T* cur, const Layout& l, int64_t batch, int64_t past_len, double mul,
                 double* out) {
  const int64_t n = past_len + l.len, d = l.dim;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < l.heads; ++h)
      for (int64_t t = 0; t < n; ++t) {
        const T* src =
            t < past_len ? past + ((b * l.heads + h) * past_len + t) * d : cur + l.offset(b, h, t - past_len);
        double* dst = out + ((b * l.heads + h) * n + t) * d;
        for (int64_t e = 0; e < d; ++e) dst[e] = rt<T>(static_cast<double>(src[e]) * mul);
      }
}

// Input `cur` (with past input `past_idx` in front when given) as (B, H, past + S, D) doubles.
vector<double> load_rows(runtime::KernelContext& ctx, size_t cur_idx, int past_idx, const Layout& l, int64_t batch,
                         int64_t past_len, double mul) {
  const Tensor& cur = ctx.input(cur_idx);
  const Tensor* past = past_idx >= 0 && ctx.has_input(static_cast<size_t>(past_idx))
                           ? &ctx.input(static_cast<size_t>(past_idx))
                           : nullptr;
  vector<double> out(static_cast<size_t>(batch * l.heads * (past_len + l.len) * l.dim));
  visit_float(cur.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gather_rows<T>(past ? past->data<T>() : nullptr, cur.data<T>(), l, batch, past ? past_len : 0, mul, out.data());
  });
  return out;
}

// present_key / present_value: past rows then the new ones, copied bytewise into (B, H, past + S, D).
Status write_present(runtime::KernelContext& ctx, size_t out_idx, size_t cur_idx, size_t past_idx, const Layout& l,
                     const Plan& p) {
  if (!output_wanted(ctx, out_idx)) return Status::ok();
  const Tensor& cur = ctx.input(cur_idx);
  const Tensor* past = ctx.has_input(past_idx) ? &ctx.input(past_idx) : nullptr;
  const int64_t batch = p.g.batch, pl = past ? p.g.past_len : 0, n = pl + l.len;
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(out_idx, cur.dtype(), {batch, l.heads, n, l.dim}));
  const size_t es = dtype_size(cur.dtype()), row = static_cast<size_t>(l.dim) * es;
  auto* dst = static_cast<char*>(out->raw());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < l.heads; ++h)
      for (int64_t t = 0; t < n; ++t) {
        const int64_t src = t < pl ? ((b * l.heads + h) * pl + t) * l.dim : l.offset(b, h, t - pl);
        const char* base = static_cast<const char*>(t < pl ? past->raw() : cur.raw());
        std::memcpy(dst + static_cast<size_t>(((b * l.heads + h) * n + t) * l.dim) * es,
                    base + static_cast<size_t>(src) * es, row);
      }
  return Status::ok();
}

// Additive bias of query row (b, h, i) over the keys; returns whether every key is masked (-inf).
bool bias_row(const Plan& p, int64_t b, int64_t h, int64_t i, double* bias) {
  const int64_t n = p.g.total_len, pos = i + p.offset(b);
  const int64_t valid = p.nonpad.empty() ? n : p.nonpad[static_cast<size_t>(b)];
  const double* m = p.has_mask ? p.mask.data() + b * p.mask_sb + h * p.mask_sh + i * p.mask_si : nullptr;
  const int64_t left = p.a.left_window, right = p.a.right_window;
  bool all_masked = true;
  for (int64_t j = 0; j < n; ++j) {
    double v = m ? (j < p.mask_len ? m[j] : kNegInf) : 0.0;
    if (p.a.is_causal && j > pos) v += kNegInf;
    if ((left >= 0 && pos - j > left) || (right >= 0 && j - pos > right)) v += kNegInf;
    if (j >= valid) v += kNegInf;
    bias[j] = v;
    all_masked = all_masked && v == kNegInf;
  }
  return all_masked;
}

// The reference's _softmax in precision w (see the file comment). With `safe_max`, an all -inf row
// subtracts 0 (Attention's _softmax, zeros); without, it subtracts -inf (the Softmax op, NaN).
void softmax_row(DType w, const double* x, double* y, int64_t n, bool safe_max = true) {
  double mx = kNegInf;
  bool nan = false;
  for (int64_t j = 0; j < n; ++j) {
    nan = nan || std::isnan(x[j]);
    mx = std::max(mx, x[j]);
  }
  if (nan) mx = std::numeric_limits<double>::quiet_NaN();
  const double safe = safe_max && mx == kNegInf ? 0.0 : mx;
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    y[j] = round_to(w, std::exp(round_to(w, x[j] - safe)));
    sum = w == DType::BF16 ? round_to(w, sum + y[j]) : sum + y[j];
  }
  sum = round_to(w, sum);
  if (sum == 0) sum = 1;
  for (int64_t j = 0; j < n; ++j) y[j] = round_to(w, y[j] / sum);
}

struct RowBuffers {
  vector<double> bias, s, prob, acc;
};

// Operands of one query row: the scaled query, its key/value head, and where its results go.
template <class T> struct RowIo {
  const double* q;
  const double* k;
  const double* v;
  T* y;
  T* qk;  // null when qk_matmul_output is not wanted
};

template <class T> void store_row(T* dst, const double* src, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<T>(src[j]);
}

template <class T> void attention_row(const Plan& p, RowBuffers& rb, int64_t b, int64_t h, int64_t i, RowIo<T> io) {
  const int64_t n = p.g.total_len, dk = p.g.head_size, dv = p.g.v_head_size, mode = p.a.mode;
  double* s = rb.s.data();
  double* prob = rb.prob.data();
  const bool all_masked = bias_row(p, b, h, i, rb.bias.data());
  for (int64_t j = 0; j < n; ++j) {
    double acc = 0;
    for (int64_t e = 0; e < dk; ++e) acc += io.q[e] * io.k[j * dk + e];
    s[j] = rt<T>(acc);
  }
  if (io.qk && mode == 0) store_row(io.qk, s, n);
  if (p.softcap > 0)
    for (int64_t j = 0; j < n; ++j) s[j] = rt<T>(rt<T>(std::tanh(rt<T>(s[j] / p.softcap))) * p.softcap);
  if (io.qk && mode == 1) store_row(io.qk, s, n);
  for (int64_t j = 0; j < n; ++j) s[j] = round_to(p.bias_prec, s[j] + rb.bias[static_cast<size_t>(j)]);
  if (io.qk && mode == 2) store_row(io.qk, s, n);
  if (p.soft_prec != p.bias_prec)
    for (int64_t j = 0; j < n; ++j) s[j] = round_to(p.soft_prec, s[j]);
  softmax_row(p.soft_prec, s, prob, n);
  if (all_masked) std::fill(prob, prob + n, 0.0);  // a row with no attendable key gives zeros
  if (io.qk && mode == 3) store_row(io.qk, prob, n);
  std::fill(rb.acc.begin(), rb.acc.end(), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    const double pj = rt<T>(prob[j]);
    for (int64_t e = 0; e < dv; ++e) rb.acc[static_cast<size_t>(e)] += pj * io.v[j * dv + e];
  }
  store_row(io.y, rb.acc.data(), dv);
}

template <class T>
void attention_rows(const Plan& p, const double* qs, const double* ks, const double* vs, T* y, T* qk) {
  const ops::AttentionGeometry& g = p.g;
  const int64_t n = g.total_len, dk = g.head_size, dv = g.v_head_size, reps = g.q_heads / g.kv_heads;
#pragma omp parallel
  {
    RowBuffers rb{vector<double>(static_cast<size_t>(n)), vector<double>(static_cast<size_t>(n)),
                  vector<double>(static_cast<size_t>(n)), vector<double>(static_cast<size_t>(dv))};
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t h = 0; h < g.q_heads; ++h) {
        const int64_t kv = b * g.kv_heads + h / reps;
        for (int64_t i = 0; i < g.q_len; ++i) {
          const int64_t row = (b * g.q_heads + h) * g.q_len + i;
          T* yrow = g.three_d ? y + (b * g.q_len + i) * g.q_heads * dv + h * dv : y + row * dv;
          attention_row<T>(
              p, rb, b, h, i,
              RowIo<T>{qs + row * dk, ks + kv * n * dk, vs + kv * n * dv, yrow, qk ? qk + row * n : nullptr});
        }
      }
  }
}

Status attention_kernel(runtime::KernelContext& ctx) {
  if (std::optional<Status> fast = attention_onnx_fast(ctx)) return *fast;
  Plan p;
  MS_RETURN_IF_ERROR(make_plan(ctx, p));
  const ops::AttentionGeometry& g = p.g;
  const Layout lq{g.three_d, g.q_heads, g.q_len, g.head_size};
  const Layout lk{g.three_d, g.kv_heads, g.kv_len, g.head_size};
  const Layout lv{g.three_d, g.kv_heads, g.kv_len, g.v_head_size};
  MS_RETURN_IF_ERROR(write_present(ctx, 1, 1, 4, lk, p));
  MS_RETURN_IF_ERROR(write_present(ctx, 2, 2, 5, lv, p));
  const vector<double> qs = load_rows(ctx, 0, -1, lq, g.batch, 0, p.scale);
  const vector<double> ks = load_rows(ctx, 1, 4, lk, g.batch, g.past_len, p.scale);
  const vector<double> vs = load_rows(ctx, 2, 5, lv, g.batch, g.past_len, 1.0);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, p.t, ops::attention_y_dims(g)));
  Tensor* qk = nullptr;
  if (output_wanted(ctx, 3)) {
    MS_ASSIGN_OR_RETURN(qk, ctx.allocate_output(3, p.t, ops::attention_qk_dims(g)));
  }
  visit_float(p.t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    attention_rows<T>(p, qs.data(), ks.data(), vs.data(), y->data<T>(), qk ? qk->data<T>() : nullptr);
  });
  ctx.set_impl("ref");
  return Status::ok();
}

// ---- FlexAttention (ai.onnx.preview): the function body's steps. Scores and probabilities live in
// the softmax precision W as whole (B, Hq, L, S) tensors so score_mod / prob_mod subgraphs can run
// on them.

vector<double> as_doubles(const Tensor& t) {
  vector<double> out(static_cast<size_t>(t.numel()));
  visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(src[i]);
  });
  return out;
}

Tensor from_doubles(DType dtype, const Shape& shape, const vector<double>& v) {
  Tensor t = Tensor::empty(dtype, shape);
  visit_float(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) dst[i] = static_cast<T>(v[i]);
  });
  return t;
}

// Runs the score_mod / prob_mod subgraph `name` (when set) on x in place; it must keep shape and dtype.
Status run_mod(runtime::KernelContext& ctx, const char* name, DType w, const Shape& shape, vector<double>& x) {
  auto graph = ctx.node().attr_graph(name);
  if (!graph) return Status::ok();
  if (!ctx.subgraphs()) return ctx.unsupported_case(std::string(name) + " needs an executor that runs subgraphs");
  auto outs = ctx.subgraphs()->run_subgraph(*graph, {from_doubles(w, shape, x)});
  if (!outs) return std::move(outs).take_status();
  if (outs->size() != 1 || (*outs)[0].shape() != shape || (*outs)[0].dtype() != w)
    return ctx.fail(std::string(name) + " must return one " + std::string(dtype_name(w)) +
                    " tensor of the scores' shape " + shape_to_string(shape));
  x = as_doubles((*outs)[0]);
  return Status::ok();
}

// Scale factor sqrt(scale) as the function body computes it (in f32), rounded to T.
double flex_scale(const ir::Node& node, DType t, int64_t head_size) {
  const double scale = node.has_attr("scale") ? static_cast<double>(node.attr_float("scale", 1.f))
                                              : rt<float>(1.0 / rt<float>(std::sqrt(static_cast<double>(head_size))));
  return round_to(t, rt<float>(std::sqrt(scale)));
}

// scores[b, h, i, j] = Qs . Ks rounded to T, then to W.
vector<double> flex_scores(const ops::AttentionGeometry& g, DType t, DType w, const double* qs, const double* ks) {
  const int64_t n = g.kv_len, dk = g.head_size, reps = g.q_heads / g.kv_heads;
  vector<double> s(static_cast<size_t>(g.batch * g.q_heads * g.q_len * n));
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t h = 0; h < g.q_heads; ++h)
      for (int64_t i = 0; i < g.q_len; ++i) {
        const int64_t row = (b * g.q_heads + h) * g.q_len + i;
        const double* q = qs + row * dk;
        const double* k = ks + (b * g.kv_heads + h / reps) * n * dk;
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < dk; ++e) acc += q[e] * k[j * dk + e];
          s[static_cast<size_t>(row * n + j)] = round_to(w, round_to(t, acc));
        }
      }
  return s;
}

// Y[b, h, i] = probs . V in W, rounded to T.
template <class T> void flex_output(const ops::AttentionGeometry& g, DType w, const double* p, const double* vs, T* y) {
  const int64_t n = g.kv_len, dv = g.v_head_size, reps = g.q_heads / g.kv_heads;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t h = 0; h < g.q_heads; ++h) {
      vector<double> acc(static_cast<size_t>(dv));
      const double* v = vs + (b * g.kv_heads + h / reps) * n * dv;
      for (int64_t i = 0; i < g.q_len; ++i) {
        const int64_t row = (b * g.q_heads + h) * g.q_len + i;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t e = 0; e < dv; ++e) acc[static_cast<size_t>(e)] += p[row * n + j] * v[j * dv + e];
        for (int64_t e = 0; e < dv; ++e) y[row * dv + e] = static_cast<T>(round_to(w, acc[static_cast<size_t>(e)]));
      }
    }
}

Status flex_attention_kernel(runtime::KernelContext& ctx) {
  const DType t = ctx.input(0).dtype();
  if (!is_float(t) || ctx.input(1).dtype() != t || ctx.input(2).dtype() != t)
    return ctx.fail("Q, K and V must share a float dtype");
  ops::AttentionGeometry g;
  const std::string e =
      ops::flex_attention_geometry(ctx.input(0).shape(), ctx.input(1).shape(), ctx.input(2).shape(), g);
  if (!e.empty()) return ctx.fail(e);
  const int64_t wp = ctx.node().attr_int("softmax_precision", t == DType::F64 ? 11 : 1);
  const auto w_opt = dtype_from_onnx(static_cast<int>(wp));
  if (!w_opt || !is_float(*w_opt)) return ctx.fail("attribute 'softmax_precision' must name a float type");
  const DType w = *w_opt;
  const double scale = flex_scale(ctx.node(), t, g.head_size);
  const vector<double> qs = load_rows(ctx, 0, -1, Layout{false, g.q_heads, g.q_len, g.head_size}, g.batch, 0, scale);
  const vector<double> ks = load_rows(ctx, 1, -1, Layout{false, g.kv_heads, g.kv_len, g.head_size}, g.batch, 0, scale);
  const vector<double> vs = load_rows(ctx, 2, -1, Layout{false, g.kv_heads, g.kv_len, g.v_head_size}, g.batch, 0, 1.0);
  const Shape sshape{g.batch, g.q_heads, g.q_len, g.kv_len};
  vector<double> s = flex_scores(g, t, w, qs.data(), ks.data());
  MS_RETURN_IF_ERROR(run_mod(ctx, "score_mod", w, sshape, s));
  vector<double> p(s.size());
  for (size_t r = 0; g.kv_len > 0 && r < s.size(); r += static_cast<size_t>(g.kv_len))
    softmax_row(w, s.data() + r, p.data() + r, g.kv_len, false);
  MS_RETURN_IF_ERROR(run_mod(ctx, "prob_mod", w, sshape, p));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, t, {g.batch, g.q_heads, g.q_len, g.v_head_size}));
  visit_float(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    flex_output<T>(g, w, p.data(), vs.data(), y->data<T>());
  });
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace

void register_attention_kernels(runtime::KernelRegistry& r) {
  r.add("Attention", attention_kernel);
  r.add("FlexAttention", flex_attention_kernel, "ai.onnx.preview");
}

}  // namespace ms::cpu
