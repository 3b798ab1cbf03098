// CPU kernels of the recurrent-state LLM ops: LinearAttention (linear / gated / delta / gated_delta
// recurrence, GQA) and CausalConvWithState (depthwise causal conv1d with a carried state). Both follow
// onnx/reference: LinearAttention runs in f32 whatever the input types, CausalConvWithState in f32 for
// f16/bf16 (double for f64) with the conv result rounded to the input type before the activation.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "engine/backends/cpu/llm_internal.h"

namespace ms::cpu::llm {
namespace {

using ops::llm::CausalConvPlan;
using ops::llm::LinearAttentionPlan;
using std::vector;

vector<float> to_floats(const Tensor& t) {
  vector<float> v(static_cast<size_t>(t.numel()));
  nn::visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(p[i]);
  });
  return v;
}

void store_floats(const vector<float>& v, Tensor& t) {
  nn::visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
  });
}

// Every given input among `inputs` must be a float tensor of input `like`'s dtype.
Status require_dtypes(runtime::KernelContext& ctx, std::initializer_list<size_t> inputs, size_t like,
                      const char* like_name) {
  const DType t = ctx.input(like).dtype();
  if (!is_float(t)) return bad_dtype(ctx, like_name, t);
  for (size_t i : inputs)
    if (ctx.has_input(i) && ctx.input(i).dtype() != t)
      return ctx.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.input(i).dtype())) +
                      " but input " + std::to_string(like) + " is " + std::string(dtype_name(t)));
  return Status::ok();
}

// --- LinearAttention ------------------------------------------------------------------------------

struct LaView {
  const float *q, *k, *v, *decay, *beta;
  float *state, *out;  // state (B, H_kv, d_k, d_v); out (B, T, H_q, d_v)
};

// S *= exp(g): one gate per key row (per_key) or one for the head.
void decay_state(float* s, const float* g, bool per_key, int64_t dk, int64_t dv) {
  const float head = per_key ? 0.f : std::exp(g[0]);
  for (int64_t d = 0; d < dk; ++d) {
    const float f = per_key ? std::exp(g[d]) : head;
    for (int64_t m = 0; m < dv; ++m) s[d * dv + m] *= f;
  }
}

// v <- beta * (v - S^T k).
void delta_correct(const float* s, const float* k, float beta, float* v, float* ret, int64_t dk, int64_t dv) {
  std::fill(ret, ret + dv, 0.f);
  for (int64_t d = 0; d < dk; ++d)
    for (int64_t m = 0; m < dv; ++m) ret[m] += s[d * dv + m] * k[d];
  for (int64_t m = 0; m < dv; ++m) v[m] = beta * (v[m] - ret[m]);
}

// The whole sequence of one (batch, kv head): its state and the outputs of its group of query heads.
void la_head(const LinearAttentionPlan& p, const LaView& w, int64_t b, int64_t h, float* vt, float* ret) {
  const int64_t dk = p.dk, dv = p.dv, hkv = p.kv_heads, hq = p.q_heads, group = hq / hkv;
  float* s = w.state + (b * hkv + h) * dk * dv;
  for (int64_t t = 0; t < p.steps; ++t) {
    const int64_t bt = b * p.steps + t;
    const float* kt = w.k + (bt * hkv + h) * dk;
    const float* vs = w.v + (bt * hkv + h) * dv;
    if (p.gating)
      decay_state(s, w.decay + (p.decay_per_key ? (bt * hkv + h) * dk : bt * hkv + h), p.decay_per_key, dk, dv);
    std::copy(vs, vs + dv, vt);
    if (p.delta) delta_correct(s, kt, w.beta[bt * p.beta_heads + (p.beta_heads == 1 ? 0 : h)], vt, ret, dk, dv);
    for (int64_t d = 0; d < dk; ++d)
      for (int64_t m = 0; m < dv; ++m) s[d * dv + m] += kt[d] * vt[m];
    for (int64_t g = 0; g < group; ++g) {
      const int64_t qh = h * group + g;
      const float* qt = w.q + (bt * hq + qh) * dk;
      float* o = w.out + (bt * hq + qh) * dv;
      std::fill(o, o + dv, 0.f);
      for (int64_t d = 0; d < dk; ++d)
        for (int64_t m = 0; m < dv; ++m) o[m] += qt[d] * s[d * dv + m];
      for (int64_t m = 0; m < dv; ++m) o[m] *= p.scale;
    }
  }
}

Status linear_attention_kernel(runtime::KernelContext& ctx) {
  LinearAttentionPlan p;
  if (auto e = ops::llm::linear_attention_plan(ctx.node(), arg_of(ctx, 0), arg_of(ctx, 1), arg_of(ctx, 2),
                                               arg_of(ctx, 3), arg_of(ctx, 4), arg_of(ctx, 5), p);
      !e.empty())
    return ctx.fail(e);
  MS_RETURN_IF_ERROR(require_dtypes(ctx, {1, 2, 4, 5}, 0, "query"));
  if (ctx.has_input(3) && !is_float(ctx.input(3).dtype())) return bad_dtype(ctx, "past_state", ctx.input(3).dtype());
  const auto in = [&](size_t i) { return ctx.has_input(i) ? to_floats(ctx.input(i)) : vector<float>{}; };
  const vector<float> q = in(0), k = in(1), v = in(2), decay = in(4), beta = in(5);
  vector<float> state = in(3);
  state.resize(static_cast<size_t>(p.batch * p.kv_heads * p.dk * p.dv), 0.f);
  vector<float> out(static_cast<size_t>(p.batch * p.steps * p.q_heads * p.dv), 0.f);
  const LaView view{q.data(), k.data(), v.data(), decay.data(), beta.data(), state.data(), out.data()};
  const int64_t pairs = p.batch * p.kv_heads;
#pragma omp parallel if (static_cast <int64_t>(state.size()) * p.steps > 65536)
  {
    vector<float> vt(static_cast<size_t>(p.dv)), ret(static_cast<size_t>(p.dv));
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < pairs; ++bh) la_head(p, view, bh / p.kv_heads, bh % p.kv_heads, vt.data(), ret.data());
  }
  const DType qt = ctx.input(0).dtype();
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, qt, {p.batch, p.steps, p.q_heads * p.dv}));
  store_floats(out, *y);
  if (wants_output(ctx, 1)) {
    const DType st = ctx.has_input(3) ? ctx.input(3).dtype() : qt;
    MS_ASSIGN_OR_RETURN(Tensor * present, ctx.allocate_output(1, st, {p.batch, p.kv_heads, p.dk, p.dv}));
    store_floats(state, *present);
  }
  ctx.set_impl("ref");
  return Status::ok();
}

// --- CausalConvWithState --------------------------------------------------------------------------

template <class T> struct ConvIo {
  const T *x, *w, *bias, *past;
  T *y, *present;
};

// One (batch, channel) row: pad = [past or zeros (k-1), x (L)], y[l] = sum_j w[j] * pad[l + j] + bias.
template <class T, class A>
void causal_conv_row(const CausalConvPlan& p, const ConvIo<T>& io, int64_t bc, vector<A>& pad) {
  const int64_t len = p.length, k = p.kernel, carry = k - 1, c = bc % p.channels;
  for (int64_t j = 0; j < carry; ++j)
    pad[static_cast<size_t>(j)] = io.past ? static_cast<A>(io.past[bc * carry + j]) : A(0);
  for (int64_t l = 0; l < len; ++l) pad[static_cast<size_t>(carry + l)] = static_cast<A>(io.x[bc * len + l]);
  const T* wc = io.w + c * k;
  for (int64_t l = 0; l < len; ++l) {
    A acc = 0;
    for (int64_t j = 0; j < k; ++j) acc += static_cast<A>(wc[j]) * pad[static_cast<size_t>(l + j)];
    if (io.bias) acc += static_cast<A>(io.bias[c]);
    T out = static_cast<T>(acc);
    if (p.silu) {
      const auto o = static_cast<A>(out);
      out = static_cast<T>(o * (A(1) / (A(1) + std::exp(-o))));
    }
    io.y[bc * len + l] = out;
  }
  if (io.present)
    for (int64_t j = 0; j < carry; ++j) io.present[bc * carry + j] = static_cast<T>(pad[static_cast<size_t>(len + j)]);
}

template <class T> void causal_conv_loop(const CausalConvPlan& p, const ConvIo<T>& io) {
  using A = nn::acc_t<T>;
  const int64_t rows = p.batch * p.channels;
#pragma omp parallel if (rows * (p.length + 1) * p.kernel > 65536)
  {
    vector<A> pad(static_cast<size_t>(p.length + p.kernel - 1));
#pragma omp for schedule(static)
    for (int64_t bc = 0; bc < rows; ++bc) causal_conv_row(p, io, bc, pad);
  }
}

Status causal_conv_kernel(runtime::KernelContext& ctx) {
  CausalConvPlan p;
  if (auto e =
          ops::llm::causal_conv_plan(ctx.node(), arg_of(ctx, 0), arg_of(ctx, 1), arg_of(ctx, 2), arg_of(ctx, 3), p);
      !e.empty())
    return ctx.fail(e);
  MS_RETURN_IF_ERROR(require_dtypes(ctx, {1, 2, 3}, 0, "input"));
  const DType t = ctx.input(0).dtype();
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, t, {p.batch, p.channels, p.length}));
  Tensor* present = nullptr;
  if (wants_output(ctx, 1)) {
    MS_ASSIGN_OR_RETURN(present, ctx.allocate_output(1, t, {p.batch, p.channels, p.kernel - 1}));
  }
  const bool ok = nn::visit_float(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto opt = [&](size_t i) { return ctx.has_input(i) ? ctx.input(i).data<T>() : nullptr; };
    const ConvIo<T> io{ctx.input(0).data<T>(),
                       ctx.input(1).data<T>(),
                       opt(2),
                       opt(3),
                       y->data<T>(),
                       present ? present->data<T>() : nullptr};
    causal_conv_loop(p, io);
  });
  if (!ok) return bad_dtype(ctx, "input", t);
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace

void register_state_kernels(runtime::KernelRegistry& r) {
  r.add("LinearAttention", linear_attention_kernel);
  r.add("CausalConvWithState", causal_conv_kernel);
}

}  // namespace ms::cpu::llm
