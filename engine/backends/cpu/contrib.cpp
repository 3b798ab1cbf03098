// CPU kernels of ONNX Runtime's contrib ops (schemas in ops/contrib.cpp; MatMulNBits in
// contrib_nbits.cpp): the norms run a row at a time in double sums (the f32 skip norms: rows in
// parallel, each one vectorized pass and the normalized row); GroupQueryAttention builds the present
// cache, then runs each token's query heads against their group's keys in parallel; the GELU forms
// are elementwise, f32 rows vectorized per instruction set over the SIMD variants of erff, tanhf and
// expf.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/backends/cpu/contrib_internal.h"
#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_kernels.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/backends/cpu/simd_math.h"

namespace ms::cpu {
namespace contrib {
namespace {

using std::to_string;

// --- the norms --------------------------------------------------------------------------------------

struct NormSpec {
  bool simplified = false;  // RMS: no mean subtracted, no beta
  double eps = 1e-5;
};

// y = (x - mean) * inv_std * gamma (+ beta) over rows of `hidden`, statistics kept per row.
void norm_rows(const std::vector<float>& x, int64_t hidden, const std::vector<float>& gamma,
               const std::vector<float>& beta, const NormSpec& spec, std::vector<float>& y, std::vector<float>& mean,
               std::vector<float>& inv_std) {
  const int64_t rows = hidden > 0 ? static_cast<int64_t>(x.size()) / hidden : 0;
  y.resize(x.size());
  mean.assign(static_cast<size_t>(rows), 0.f);
  inv_std.assign(static_cast<size_t>(rows), 0.f);
#pragma omp parallel for schedule(static) if (x.size() > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * hidden;
    double s = 0, s2 = 0;
    for (int64_t j = 0; j < hidden; ++j) {
      s += xr[j];
      s2 += static_cast<double>(xr[j]) * xr[j];
    }
    const double m = spec.simplified ? 0.0 : s / static_cast<double>(hidden);
    const double var = s2 / static_cast<double>(hidden) - m * m;
    const double inv = 1.0 / std::sqrt(std::max(var, 0.0) + spec.eps);
    mean[static_cast<size_t>(r)] = static_cast<float>(m);
    inv_std[static_cast<size_t>(r)] = static_cast<float>(inv);
    float* yr = y.data() + r * hidden;
    for (int64_t j = 0; j < hidden; ++j) {
      const auto ju = static_cast<size_t>(j);
      yr[j] = static_cast<float>((xr[j] - m) * inv * gamma[ju] + (beta.empty() ? 0.0 : beta[ju]));
    }
  }
}

Status simplified_ln_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank(), a = ctx.node().attr_int("axis", -1), axis = a < 0 ? a + rank : a;
  if (axis < 0 || axis >= rank)
    return ctx.fail("attribute 'axis' = " + to_string(a) + " is out of range for X of rank " + to_string(rank));
  int64_t hidden = 1;
  for (int64_t d = axis; d < rank; ++d) hidden *= x.dim(d);
  MS_RETURN_IF_ERROR(check_vector(ctx, 1, "scale", hidden));
  std::vector<float> y, mean, inv;
  norm_rows(floats_of(ctx, 0), hidden, floats_of(ctx, 1), {}, {true, ctx.node().attr_float("epsilon", 1e-5f)}, y, mean,
            inv);
  MS_RETURN_IF_ERROR(write_output(ctx, 0, ctx.input(1).dtype(), x.shape(), y));
  Shape stats = x.shape();
  for (int64_t d = axis; d < rank; ++d) stats[static_cast<size_t>(d)] = 1;
  MS_RETURN_IF_ERROR(write_output(ctx, 1, DType::F32, stats, inv));
  ctx.set_impl("ref");
  return Status::ok();
}

// Whether every input of a skip norm is f32.
bool skip_ln_f32_applies(const runtime::KernelContext& ctx, size_t last) {
  for (size_t i = 0; i <= last && i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype() != DType::F32) return false;
  return true;
}

// The f32 skip norms: rows in parallel, x + skip + bias and the row's sums (double) in one
// vectorized pass, then the normalized row; the statistics and the sum where asked for.
template <bool Simplified> Status skip_ln_f32(runtime::KernelContext& ctx, int64_t hidden) {
  const Tensor &x = ctx.input(0), &skip = ctx.input(1);
  const float* gamma = ctx.input(2).data<float>();
  const size_t beta_at = Simplified ? 99 : 3, bias_at = Simplified ? 3 : 4;
  const float* beta = !Simplified && ctx.has_input(beta_at) ? ctx.input(beta_at).data<float>() : nullptr;
  const float* bias = ctx.has_input(bias_at) ? ctx.input(bias_at).data<float>() : nullptr;
  const double eps = ctx.node().attr_float("epsilon", 1e-12f);
  auto wants = [&](size_t i) { return i < ctx.num_outputs() && !ctx.node().outputs[i].empty(); };
  Shape stats = x.shape();
  stats.back() = 1;
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, x.shape()));
  // Output i's floats where it is asked for, else null.
  auto optional_output = [&](size_t i, const Shape& shape) -> Expected<float*> {
    if (!wants(i)) return static_cast<float*>(nullptr);
    MS_ASSIGN_OR_RETURN(Tensor * t, ctx.allocate_output(i, DType::F32, shape));
    return t->data<float>();
  };
  float* mean = nullptr;
  if (!Simplified) {
    MS_ASSIGN_OR_RETURN(mean, optional_output(1, stats));
  }
  MS_ASSIGN_OR_RETURN(float* inv_std, optional_output(2, stats));
  MS_ASSIGN_OR_RETURN(float* sum, optional_output(3, x.shape()));
  const float *xs = x.data<float>(), *ss = skip.data<float>();
  const int64_t rows = x.numel() / hidden, skip_rows = skip.numel() / hidden;
  float* ys = y->data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xs + r * hidden;
    const float* sr = ss + (r % skip_rows) * hidden;
    float* yr = ys + r * hidden;
    double s1 = 0, s2 = 0;
#pragma omp simd reduction(+ : s1, s2)
    for (int64_t j = 0; j < hidden; ++j) {
      const float v = xr[j] + sr[j] + (bias ? bias[j] : 0.f);
      yr[j] = v;
      s1 += v;
      s2 += static_cast<double>(v) * v;
    }
    if (sum) std::memcpy(sum + r * hidden, yr, static_cast<size_t>(hidden) * sizeof(float));
    const double m = Simplified ? 0.0 : s1 / static_cast<double>(hidden);
    const double inv = 1.0 / std::sqrt(std::max(s2 / static_cast<double>(hidden) - m * m, 0.0) + eps);
    const auto mf = static_cast<float>(m), invf = static_cast<float>(inv);
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) yr[j] = (yr[j] - mf) * invf * gamma[j] + (beta ? beta[j] : 0.f);
    if (mean) mean[r] = mf;
    if (inv_std) inv_std[r] = invf;
  }
  ctx.set_impl("simd");
  return Status::ok();
}

template <bool Simplified> Status skip_ln_kernel(runtime::KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &skip = ctx.input(1);
  if (x.rank() < 2 || x.rank() > 3)
    return ctx.fail("input must be 2-D or 3-D ([batch, sequence, hidden]), got " + shape_to_string(x.shape()));
  const int64_t hidden = x.dim(x.rank() - 1);
  // skip is input's shape, or the same without the batch ([1, S, H] or [S, H]): repeated over it.
  if (skip.numel() == 0 || x.numel() % std::max<int64_t>(skip.numel(), 1) != 0 || skip.dim(skip.rank() - 1) != hidden)
    return ctx.fail("skip " + shape_to_string(skip.shape()) + " does not match input " + shape_to_string(x.shape()));
  MS_RETURN_IF_ERROR(check_vector(ctx, 2, "gamma", hidden));
  const size_t beta_at = Simplified ? 99 : 3, bias_at = Simplified ? 3 : 4;
  if (!Simplified) MS_RETURN_IF_ERROR(check_vector(ctx, beta_at, "beta", hidden));
  MS_RETURN_IF_ERROR(check_vector(ctx, bias_at, "bias", hidden));
  if (skip_ln_f32_applies(ctx, Simplified ? 3 : 4)) return skip_ln_f32<Simplified>(ctx, hidden);
  std::vector<float> sum = floats_of(ctx, 0);
  const std::vector<float> s = floats_of(ctx, 1), bias = floats_of(ctx, bias_at);
  for (size_t i = 0; i < sum.size(); ++i)
    sum[i] += s[i % s.size()] + (bias.empty() ? 0.f : bias[i % static_cast<size_t>(hidden)]);
  std::vector<float> y, mean, inv;
  norm_rows(sum, hidden, floats_of(ctx, 2), Simplified ? std::vector<float>{} : floats_of(ctx, beta_at),
            {Simplified, ctx.node().attr_float("epsilon", 1e-12f)}, y, mean, inv);
  Shape stats = x.shape();
  stats.back() = 1;
  MS_RETURN_IF_ERROR(write_output(ctx, 0, x.dtype(), x.shape(), y));
  if (!Simplified) MS_RETURN_IF_ERROR(write_output(ctx, 1, DType::F32, stats, mean));
  MS_RETURN_IF_ERROR(write_output(ctx, 2, DType::F32, stats, inv));
  MS_RETURN_IF_ERROR(write_output(ctx, 3, x.dtype(), x.shape(), sum));
  ctx.set_impl("ref");
  return Status::ok();
}

// --- GroupQueryAttention ----------------------------------------------------------------------------

// The step's sizes and options: B batches of S new tokens, N query heads over KV key/value heads of
// H values, a present cache of `present` positions (past room P), rotary over the first rot_dim.
struct GqaPlan {
  int64_t batch = 0, seq = 0, heads = 0, kv = 0, head = 0, present = 0, past_buffer = 0, total = 0;
  bool packed = false, has_past = false;
  bool rotary = false, interleaved = false, smooth = false;
  int64_t rot_dim = 0, rot_positions = 0, window = -1;
  double scale = 1, softcap = 0;
  int64_t q_width() const { return packed ? (heads + 2 * kv) * head : heads * head; }
};

// The step's tensors as f32 (the caches, the rotary tables) and the caches it makes.
struct GqaData {
  std::vector<float> q, k, v, past_k, past_v, cos, sin, present_k, present_v, out;
};

// Rotates the first rot_dim values of a head at position `pos` (cos/sin caches [positions, rot_dim/2]).
void rotate(float* x, int64_t pos, const GqaData& d, const GqaPlan& p) {
  const int64_t half = p.rot_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t a = p.interleaved ? 2 * i : i, b = p.interleaved ? 2 * i + 1 : i + half;
    const float c = d.cos[static_cast<size_t>(pos * half + i)], s = d.sin[static_cast<size_t>(pos * half + i)];
    const float xa = x[a], xb = x[b];
    x[a] = xa * c - xb * s;
    x[b] = xa * s + xb * c;
  }
}

// Shapes, attributes and total_sequence_length, checked.
Status gqa_plan(runtime::KernelContext& ctx, GqaPlan& p) {
  const ir::Node& node = ctx.node();
  p.heads = node.attr_int("num_heads", 0);
  p.kv = node.attr_int("kv_num_heads", 0);
  const Tensor& q = ctx.input(0);
  if (p.heads <= 0 || p.kv <= 0 || p.heads % p.kv != 0 || q.rank() != 3)
    return ctx.fail("num_heads, kv_num_heads or query " + shape_to_string(q.shape()) + " do not fit together");
  p.packed = !ctx.has_input(1);
  p.batch = q.dim(0);
  p.seq = q.dim(1);
  const int64_t per = p.packed ? p.heads + 2 * p.kv : p.heads;
  p.head = q.dim(2) / per;
  if (p.head <= 0 || q.dim(2) != p.head * per)
    return ctx.fail("query " + shape_to_string(q.shape()) + " does not hold whole heads");
  const Shape kv_shape{p.batch, p.seq, p.kv * p.head};
  if (!p.packed && (!ctx.has_input(2) || ctx.input(1).shape() != kv_shape || ctx.input(2).shape() != kv_shape))
    return ctx.fail("key and value must both be " + shape_to_string(kv_shape));
  p.has_past = ctx.has_input(3) && ctx.has_input(4);
  if (p.has_past) {
    const Tensor& pk = ctx.input(3);
    if (pk.rank() != 4 || pk.dim(0) != p.batch || pk.dim(1) != p.kv || pk.dim(3) != p.head ||
        ctx.input(4).shape() != pk.shape())
      return ctx.fail("past_key and past_value must both be [batch, kv_num_heads, length, head_size] = [" +
                      to_string(p.batch) + ", " + to_string(p.kv) + ", L, " + to_string(p.head) + "]");
    p.past_buffer = pk.dim(2);
  }
  const Tensor &lens = ctx.input(5), &total = ctx.input(6);
  if (lens.dtype() != DType::I32 || lens.numel() != p.batch || total.dtype() != DType::I32 || total.numel() != 1)
    return ctx.fail("seqlens_k must be int32 [batch] and total_sequence_length an int32 scalar");
  p.total = total.data<int32_t>()[0];
  // The cache holds at most the past's room and the new tokens: the present cache is never larger
  // than the inputs it is made from.
  if (p.total < p.seq || p.total > p.past_buffer + p.seq)
    return ctx.fail("total_sequence_length " + to_string(p.total) + " is not between the sequence length " +
                    to_string(p.seq) + " and the past's length + the sequence length (" +
                    to_string(p.past_buffer + p.seq) + ")");
  p.present = std::max(p.total, p.past_buffer);
  p.rotary = node.attr_int("do_rotary", 0) != 0;
  p.interleaved = node.attr_int("rotary_interleaved", 0) != 0;
  if (p.rotary) {
    if (!ctx.has_input(7) || !ctx.has_input(8) || ctx.input(7).rank() != 2 ||
        ctx.input(8).shape() != ctx.input(7).shape())
      return ctx.fail("do_rotary needs cos_cache and sin_cache, both [positions, rotary_dim / 2]");
    p.rot_positions = ctx.input(7).dim(0);
    p.rot_dim = 2 * ctx.input(7).dim(1);
    if (p.rot_dim > p.head)
      return ctx.fail("rotary dim " + to_string(p.rot_dim) + " exceeds head_size " + to_string(p.head));
  }
  const double scale = node.attr_float("scale", 0.f);
  p.scale = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(p.head));
  p.softcap = node.attr_float("softcap", 0.f);
  p.window = node.attr_int("local_window_size", -1);
  p.smooth = node.attr_int("smooth_softmax", 0) != 0;
  return Status::ok();
}

// Batch b's present cache: its past tokens, then the new keys (rotated) and values.
void gqa_fill_cache(const GqaPlan& p, GqaData& d, int64_t b, int64_t past_b) {
  const int64_t H = p.head, qw = p.q_width();
  for (int64_t h = 0; h < p.kv; ++h) {
    float* dk = d.present_k.data() + ((b * p.kv + h) * p.present) * H;
    float* dv = d.present_v.data() + ((b * p.kv + h) * p.present) * H;
    if (p.has_past && past_b > 0) {
      std::memcpy(dk, d.past_k.data() + ((b * p.kv + h) * p.past_buffer) * H, static_cast<size_t>(past_b * H) * 4);
      std::memcpy(dv, d.past_v.data() + ((b * p.kv + h) * p.past_buffer) * H, static_cast<size_t>(past_b * H) * 4);
    }
    for (int64_t s = 0; s < p.seq && past_b + s < p.present; ++s) {
      const float* ks = p.packed ? d.q.data() + (b * p.seq + s) * qw + (p.heads + h) * H
                                 : d.k.data() + ((b * p.seq + s) * p.kv + h) * H;
      const float* vs = p.packed ? d.q.data() + (b * p.seq + s) * qw + (p.heads + p.kv + h) * H
                                 : d.v.data() + ((b * p.seq + s) * p.kv + h) * H;
      float* kd = dk + (past_b + s) * H;
      std::memcpy(kd, ks, static_cast<size_t>(H) * 4);
      std::memcpy(dv + (past_b + s) * H, vs, static_cast<size_t>(H) * 4);
      if (p.rotary) rotate(kd, past_b + s, d, p);
    }
  }
}

// Batch b's outputs: each query head against its group's cache, causal (and within the window),
// over the first tot_b positions.
// Σ a·b over n floats, and y += w·x: built per instruction set (the build's baseline is SSE).
MS_SIMD_CLONES float dot_f32(const float* a, const float* b, int64_t n) {
  float dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int64_t e = 0; e < n; ++e) dot += a[e] * b[e];
  return dot;
}
MS_SIMD_CLONES void axpy_f32(float w, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t e = 0; e < n; ++e) y[e] += w * x[e];
}

void gqa_attend(const GqaPlan& p, GqaData& d, int64_t b, int64_t past_b, int64_t tot_b) {
  const int64_t H = p.head, qw = p.q_width(), pairs = p.seq * p.heads;
  // Each (token, query head) in parallel: f32 dot products and weighted sums, vectorized over H.
#pragma omp parallel if (pairs * (past_b + p.seq) * H > 32768)
  {
    std::vector<float> qh(static_cast<size_t>(H)), score(static_cast<size_t>(p.present));
#pragma omp for schedule(static)
    for (int64_t sh = 0; sh < pairs; ++sh) {
      const int64_t s = sh / p.heads, h = sh % p.heads;
      std::memcpy(qh.data(), d.q.data() + (b * p.seq + s) * qw + h * H, static_cast<size_t>(H) * 4);
      const int64_t pos = past_b + s;
      if (p.rotary) rotate(qh.data(), pos, d, p);
      const int64_t kvh = h / (p.heads / p.kv);
      const float* kc = d.present_k.data() + ((b * p.kv + kvh) * p.present) * H;
      const float* vc = d.present_v.data() + ((b * p.kv + kvh) * p.present) * H;
      const int64_t end = std::min(pos + 1, tot_b);
      const int64_t begin = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;  // the last `window` keys
      const float* q = qh.data();
      float top = p.smooth ? 0.f : -INFINITY;  // smooth softmax: one more logit, 0
      for (int64_t j = begin; j < end; ++j) {
        float dot = dot_f32(q, kc + j * H, H) * static_cast<float>(p.scale);
        if (p.softcap > 0) dot = static_cast<float>(p.softcap) * std::tanh(dot / static_cast<float>(p.softcap));
        score[static_cast<size_t>(j)] = dot;
        top = std::max(top, dot);
      }
      float sum = p.smooth ? std::exp(-top) : 0.f;
      for (int64_t j = begin; j < end; ++j)
        sum += (score[static_cast<size_t>(j)] = std::exp(score[static_cast<size_t>(j)] - top));
      float* o = d.out.data() + ((b * p.seq + s) * p.heads + h) * H;
      for (int64_t j = begin; j < end && sum > 0; ++j) {
        axpy_f32(score[static_cast<size_t>(j)] / sum, vc + j * H, o, H);
      }
    }
  }
}

Status gqa_kernel(runtime::KernelContext& ctx) {
  GqaPlan p;
  MS_RETURN_IF_ERROR(gqa_plan(ctx, p));
  GqaData d;
  d.q = floats_of(ctx, 0);
  if (!p.packed) d.k = floats_of(ctx, 1), d.v = floats_of(ctx, 2);
  if (p.has_past) d.past_k = floats_of(ctx, 3), d.past_v = floats_of(ctx, 4);
  if (p.rotary) d.cos = floats_of(ctx, 7), d.sin = floats_of(ctx, 8);
  d.present_k.assign(static_cast<size_t>(p.batch * p.kv * p.present * p.head), 0.f);
  d.present_v.assign(d.present_k.size(), 0.f);
  d.out.assign(static_cast<size_t>(p.batch * p.seq * p.heads * p.head), 0.f);
  const int32_t* len = ctx.input(5).data<int32_t>();
  const bool first_prompt = p.seq > 1 && p.seq == p.total;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t tot_b = int64_t{len[b]} + 1;
    const int64_t past_b = first_prompt ? 0 : tot_b - p.seq;
    if (tot_b < 1 || tot_b > p.present || past_b < 0 || past_b > p.past_buffer)
      return ctx.fail("seqlens_k[" + to_string(b) + "] = " + to_string(len[b]) + " does not fit a step of " +
                      to_string(p.seq) + " tokens after a past of " + to_string(p.past_buffer));
    if (p.rotary && past_b + p.seq > p.rot_positions)
      return ctx.fail("position " + to_string(past_b + p.seq - 1) + " is past the rotary caches' " +
                      to_string(p.rot_positions) + " positions");
    gqa_fill_cache(p, d, b, past_b);
    gqa_attend(p, d, b, past_b, tot_b);
  }
  const DType dt = ctx.input(0).dtype();
  MS_RETURN_IF_ERROR(write_output(ctx, 0, dt, {p.batch, p.seq, p.heads * p.head}, d.out));
  MS_RETURN_IF_ERROR(write_output(ctx, 1, dt, {p.batch, p.kv, p.present, p.head}, d.present_k));
  MS_RETURN_IF_ERROR(write_output(ctx, 2, dt, {p.batch, p.kv, p.present, p.head}, d.present_v));
  ctx.set_impl("ref");
  return Status::ok();
}

// --- GELU forms -------------------------------------------------------------------------------------

enum class GeluForm : uint8_t { Erf, Tanh, Quick };

template <GeluForm F> inline float gelu_of(float e, float alpha) {
  if constexpr (F == GeluForm::Erf) {
    return 0.5f * e * (1.f + erff(e * static_cast<float>(M_SQRT1_2)));
  } else if constexpr (F == GeluForm::Tanh) {
    return 0.5f * e * (1.f + tanhf(0.7978845608028654f * (e + 0.044715f * e * e * e)));
  } else {
    return e / (1.f + expf(-alpha * e));
  }
}

// One row of n values, y = gelu(x + b): built per instruction set, each a vector loop over the SIMD
// variants of erff, tanhf and expf.
template <GeluForm F> MS_SIMD_CLONES void gelu_row(const float* x, const float* b, float* y, int64_t n, float alpha) {
  if (b) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = gelu_of<F>(x[j] + b[j], alpha);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = gelu_of<F>(x[j], alpha);
  }
}

template <GeluForm F, bool Bias> Status gelu_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t hidden = x.rank() ? x.dim(x.rank() - 1) : 1;
  const bool bias = Bias && ctx.num_inputs() > 1 && ctx.has_input(1);
  if (bias) MS_RETURN_IF_ERROR(check_vector(ctx, 1, "bias", hidden));
  const float alpha = ctx.node().attr_float("alpha", 1.702f);
  if (x.dtype() == DType::F32 && (!bias || ctx.input(1).dtype() == DType::F32) && hidden > 0) {
    // f32: rows in parallel, each a vectorized loop (the SIMD variants of erff, tanhf, expf).
    MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, x.shape()));
    const float* src = x.data<float>();
    const float* b = bias ? ctx.input(1).data<float>() : nullptr;
    float* dst = y->data<float>();
    const int64_t rows = x.numel() / hidden;
#pragma omp parallel for schedule(static) if (x.numel() > 32768)
    for (int64_t r = 0; r < rows; ++r) gelu_row<F>(src + r * hidden, b, dst + r * hidden, hidden, alpha);
    ctx.set_impl("simd");
    return Status::ok();
  }
  std::vector<float> v = floats_of(ctx, 0);
  if (bias) {
    const std::vector<float> b = floats_of(ctx, 1);
    for (size_t i = 0; i < v.size(); ++i) v[i] += b[i % b.size()];
  }
  for (float& e : v) e = gelu_of<F>(e, alpha);
  MS_RETURN_IF_ERROR(write_output(ctx, 0, x.dtype(), x.shape(), v));
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace
}  // namespace contrib

void register_contrib_kernels(runtime::KernelRegistry& r) {
  using namespace contrib;
  r.add("SimplifiedLayerNormalization", simplified_ln_kernel);
  r.add("SkipLayerNormalization", skip_ln_kernel<false>, "com.microsoft");
  r.add("SkipSimplifiedLayerNormalization", skip_ln_kernel<true>, "com.microsoft");
  r.add("MatMulNBits", matmul_nbits_kernel, "com.microsoft");
  r.add("GatherBlockQuantized", gather_block_quantized_kernel, "com.microsoft");
  r.add("GroupQueryAttention", gqa_kernel, "com.microsoft");
  r.add("FastGelu", gelu_kernel<GeluForm::Tanh, true>, "com.microsoft");
  r.add("BiasGelu", gelu_kernel<GeluForm::Erf, true>, "com.microsoft");
  r.add("QuickGelu", gelu_kernel<GeluForm::Quick, false>, "com.microsoft");
  r.add("Gelu", gelu_kernel<GeluForm::Erf, false>, "com.microsoft");
}

}  // namespace ms::cpu
