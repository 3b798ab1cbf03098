// CPU kernels of ONNX Runtime's contrib ops (schemas in ops/contrib.cpp; MatMulNBits in
// contrib_nbits.cpp): the norms run a row at a time in double sums (the f32 skip norms: rows in
// parallel, each one vectorized pass and the normalized row); GroupQueryAttention builds the present
// cache, then runs each token's query heads against their group's keys in parallel; the GELU forms
// are elementwise, f32 rows vectorized per instruction set over the SIMD variants of erff, tanhf and
// expf.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#if MS_SIMD_DISPATCH
#include <immintrin.h>
#endif

#include "engine/backends/cpu/contrib_internal.h"
#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_kernels.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/backends/cpu/simd_exp.h"
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
  bool first_prompt = false;  // a prompt with no past: positions from 0
  // attention_bias [bias_b, bias_h, seq, total] (bias_b 1 or batch, bias_h 1 or heads), or none
  bool has_bias = false;
  int64_t bias_b = 0, bias_h = 0;
  int64_t q_width() const { return packed ? (heads + 2 * kv) * head : heads * head; }
};

// The step's tensors as f32, read in place where they are f32 (converted copies in `held`
// otherwise), and the outputs it writes: the allocated f32 outputs, or storage in `held` (another
// type, or a present cache no one asked for).
struct GqaData {
  const float *q = nullptr, *k = nullptr, *v = nullptr, *past_k = nullptr, *past_v = nullptr, *cos = nullptr,
              *sin = nullptr;
  float *present_k = nullptr, *present_v = nullptr, *out = nullptr;
  const float *bias = nullptr, *sink = nullptr;  // attention_bias and head_sink, where given
  std::vector<int64_t> position_ids;             // [batch, seq], where given with do_rotary
  std::vector<std::vector<float>> held;
};

// Input i as f32: in place, or a converted copy held by d.
const float* gqa_input(runtime::KernelContext& ctx, size_t i, GqaData& d) {
  if (!ctx.has_input(i)) return nullptr;
  if (ctx.input(i).dtype() == DType::F32) return ctx.input(i).data<float>();
  d.held.push_back(floats_of(ctx, i));
  return d.held.back().data();
}

// Whether output i is asked for.
bool gqa_wants(runtime::KernelContext& ctx, size_t i) {
  return i < ctx.num_outputs() && i < ctx.node().outputs.size() && !ctx.node().outputs[i].empty();
}

// Output i's f32 storage: the output itself where it is f32 and asked for, else held by d (written
// out after where asked for).
Expected<float*> gqa_output(runtime::KernelContext& ctx, size_t i, const Shape& shape, GqaData& d) {
  if (gqa_wants(ctx, i) && ctx.input(0).dtype() == DType::F32) {
    MS_ASSIGN_OR_RETURN(Tensor * t, ctx.allocate_output(i, DType::F32, shape));
    return t->data<float>();
  }
  d.held.emplace_back(static_cast<size_t>(numel(shape)));
  return d.held.back().data();
}

// x[i], x[i + half] rotated by (c[i], s[i]): rotary embedding's halves form.
MS_SIMD_CLONES void rotate_halves(float* x, const float* c, const float* s, int64_t half) {
#pragma omp simd
  for (int64_t i = 0; i < half; ++i) {
    const float xa = x[i], xb = x[i + half];
    x[i] = xa * c[i] - xb * s[i];
    x[i + half] = xa * s[i] + xb * c[i];
  }
}

// Rotates the first rot_dim values of a head at position `pos` (cos/sin caches [positions, rot_dim/2]).
void rotate(float* x, int64_t pos, const GqaData& d, const GqaPlan& p) {
  const int64_t half = p.rot_dim / 2;
  const float *c = d.cos + pos * half, *sn = d.sin + pos * half;
  if (!p.interleaved) return rotate_halves(x, c, sn, half);
  for (int64_t i = 0; i < half; ++i) {
    const float xa = x[2 * i], xb = x[2 * i + 1];
    x[2 * i] = xa * c[i] - xb * sn[i];
    x[2 * i + 1] = xa * sn[i] + xb * c[i];
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
  if (node.attr_int("causal", 1) != 1) return ctx.unsupported_case("causal = 0 (bidirectional attention)");
  if (node.attr_int("qk_output", 0) != 0) return ctx.unsupported_case("qk_output (the QK matrix as an output)");
  if (node.attr_int("sliding_window_cache", 0) != 0)
    return ctx.unsupported_case("sliding_window_cache (window-sized past and present buffers)");
  static const char* const kRefused[] = {"k_scale", "v_scale", "q_norm_weight", "k_norm_weight", "query_seqlens"};
  for (size_t i = 12; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i))
      return ctx.unsupported_case("input " + to_string(i) + " (" + (i < 17 ? kRefused[i - 12] : "unknown") + ")");
  if (ctx.has_input(9)) {
    const Tensor& pos = ctx.input(9);
    if ((pos.dtype() != DType::I64 && pos.dtype() != DType::I32) || pos.shape() != Shape{p.batch, p.seq})
      return ctx.fail("position_ids must be int64 [batch, sequence] = [" + to_string(p.batch) + ", " +
                      to_string(p.seq) + "], got " + shape_to_string(pos.shape()));
  }
  if (ctx.has_input(10)) {
    const Tensor& bias = ctx.input(10);
    if (bias.rank() != 4 || (bias.dim(0) != 1 && bias.dim(0) != p.batch) ||
        (bias.dim(1) != 1 && bias.dim(1) != p.heads) || bias.dim(2) != p.seq || bias.dim(3) != p.total)
      return ctx.fail("attention_bias must be [batch or 1, num_heads or 1, sequence, total_sequence_length] = [" +
                      to_string(p.batch) + ", " + to_string(p.heads) + ", " + to_string(p.seq) + ", " +
                      to_string(p.total) + "], got " + shape_to_string(bias.shape()));
    p.has_bias = true, p.bias_b = bias.dim(0), p.bias_h = bias.dim(1);
  }
  if (ctx.has_input(11) && ctx.input(11).numel() != p.heads)
    return ctx.fail("head_sink must hold num_heads = " + to_string(p.heads) + " values, got " +
                    shape_to_string(ctx.input(11).shape()));
  return Status::ok();
}

// The rotary position of batch b's token s: position_ids' where given, else its place in the
// sequence. A first prompt reads only the first id, every batch counting on from it (as ONNX Runtime
// does).
int64_t gqa_position(const GqaPlan& p, const GqaData& d, int64_t b, int64_t s, int64_t past_b) {
  if (d.position_ids.empty()) return past_b + s;
  return p.first_prompt ? d.position_ids.front() + s : d.position_ids[static_cast<size_t>(b * p.seq + s)];
}

// Batch b's present cache: its past tokens, then the new keys (rotated) and values; zeros past them.
void gqa_fill_cache(const GqaPlan& p, GqaData& d, int64_t b, int64_t past_b) {
  const int64_t H = p.head, qw = p.q_width();
  for (int64_t h = 0; h < p.kv; ++h) {
    float* dk = d.present_k + ((b * p.kv + h) * p.present) * H;
    float* dv = d.present_v + ((b * p.kv + h) * p.present) * H;
    if (p.has_past && past_b > 0) {
      std::memcpy(dk, d.past_k + ((b * p.kv + h) * p.past_buffer) * H, static_cast<size_t>(past_b * H) * 4);
      std::memcpy(dv, d.past_v + ((b * p.kv + h) * p.past_buffer) * H, static_cast<size_t>(past_b * H) * 4);
    }
    int64_t s = 0;
    for (; s < p.seq && past_b + s < p.present; ++s) {
      const float* ks =
          p.packed ? d.q + (b * p.seq + s) * qw + (p.heads + h) * H : d.k + ((b * p.seq + s) * p.kv + h) * H;
      const float* vs =
          p.packed ? d.q + (b * p.seq + s) * qw + (p.heads + p.kv + h) * H : d.v + ((b * p.seq + s) * p.kv + h) * H;
      float* kd = dk + (past_b + s) * H;
      std::memcpy(kd, ks, static_cast<size_t>(H) * 4);
      std::memcpy(dv + (past_b + s) * H, vs, static_cast<size_t>(H) * 4);
      if (p.rotary) rotate(kd, gqa_position(p, d, b, s, past_b), d, p);
    }
    const int64_t filled = past_b + s;
    std::memset(dk + filled * H, 0, static_cast<size_t>((p.present - filled) * H) * 4);
    std::memset(dv + filled * H, 0, static_cast<size_t>((p.present - filled) * H) * 4);
  }
}

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

#if MS_SIMD_DISPATCH
// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which its
// uninitialized-use analysis reports once inlined; the values are never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// AVX-512, heads of a multiple of 16 values: the scaled scores of q against n keys (rows of H), four
// keys at a time.
MS_TARGET_AVX512 void gqa_scores_avx512(const float* q, const float* k, int64_t H, int64_t n, float scale, float* out) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4, k += 4 * H) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t e = 0; e < H; e += 16) {
      const __m512 qv = _mm512_loadu_ps(q + e);
      a0 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k + e), a0);
      a1 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k + H + e), a1);
      a2 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k + 2 * H + e), a2);
      a3 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k + 3 * H + e), a3);
    }
    out[j] = _mm512_reduce_add_ps(a0) * scale, out[j + 1] = _mm512_reduce_add_ps(a1) * scale;
    out[j + 2] = _mm512_reduce_add_ps(a2) * scale, out[j + 3] = _mm512_reduce_add_ps(a3) * scale;
  }
  for (; j < n; ++j, k += H) {
    __m512 a0 = _mm512_setzero_ps();
    for (int64_t e = 0; e < H; e += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + e), _mm512_loadu_ps(k + e), a0);
    out[j] = _mm512_reduce_add_ps(a0) * scale;
  }
}

// o[0, 16 V) = Σ_j w[j] v_j[0, 16 V) over n rows of v (leading dimension H), in V accumulators.
template <int V>
MS_TARGET_AVX512 void gqa_weighted_chunk(const float* w, const float* v, int64_t H, int64_t n, float* o) {
  __m512 acc[V];
#pragma GCC unroll 8
  for (int i = 0; i < V; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; ++j, v += H) {
    const __m512 wb = _mm512_set1_ps(w[j]);
#pragma GCC unroll 8
    for (int i = 0; i < V; ++i) acc[i] = _mm512_fmadd_ps(wb, _mm512_loadu_ps(v + 16 * i), acc[i]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < V; ++i) _mm512_storeu_ps(o + 16 * i, acc[i]);
}

// o [H] = Σ_j w[j] v_j over n keys, 128 values at a time in registers (H a multiple of 16).
MS_TARGET_AVX512 void gqa_weighted_avx512(const float* w, const float* v, int64_t H, int64_t n, float* o) {
  using Chunk = void (*)(const float*, const float*, int64_t, int64_t, float*);
  static constexpr Chunk kChunks[9] = {nullptr,
                                       &gqa_weighted_chunk<1>,
                                       &gqa_weighted_chunk<2>,
                                       &gqa_weighted_chunk<3>,
                                       &gqa_weighted_chunk<4>,
                                       &gqa_weighted_chunk<5>,
                                       &gqa_weighted_chunk<6>,
                                       &gqa_weighted_chunk<7>,
                                       &gqa_weighted_chunk<8>};
  for (int64_t c0 = 0; c0 < H; c0 += 128) kChunks[std::min<int64_t>(8, (H - c0) / 16)](w, v + c0, H, n, o + c0);
}
#pragma GCC diagnostic pop
#endif

// Batch b's outputs: each query head against its group's cache, causal (and within the window),
// over the first tot_b positions.
void gqa_attend(const GqaPlan& p, GqaData& d, int64_t b, int64_t past_b, int64_t tot_b) {
  const int64_t H = p.head, qw = p.q_width(), pairs = p.seq * p.heads;
#if MS_SIMD_DISPATCH
  const bool wide = H % 16 == 0 && simd_width() >= 16;
#else
  const bool wide = false;
#endif
  // Each (token, query head) in parallel: the scores, their softmax, the weighted sum of the values.
#pragma omp parallel if (pairs * (past_b + p.seq) * H > 32768)
  {
    std::vector<float> qh(static_cast<size_t>(H)), score(static_cast<size_t>(p.present));
    // Round robin: a causal step's later tokens see more keys (in blocks, thread 0 took the first
    // half of a 64-token prompt's work at a third of the second's).
#pragma omp for schedule(static, 1)
    for (int64_t sh = 0; sh < pairs; ++sh) {
      const int64_t s = sh / p.heads, h = sh % p.heads;
      std::memcpy(qh.data(), d.q + (b * p.seq + s) * qw + h * H, static_cast<size_t>(H) * 4);
      const int64_t pos = past_b + s;
      if (p.rotary) rotate(qh.data(), gqa_position(p, d, b, s, past_b), d, p);
      const int64_t kvh = h / (p.heads / p.kv);
      const float* kc = d.present_k + ((b * p.kv + kvh) * p.present) * H;
      const float* vc = d.present_v + ((b * p.kv + kvh) * p.present) * H;
      const int64_t end = std::min(pos + 1, tot_b);
      const int64_t begin = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;  // the last `window` keys
      const int64_t n = std::max<int64_t>(0, end - begin);
      float* sc = score.data() + begin;
      const float scale = static_cast<float>(p.scale);
#if MS_SIMD_DISPATCH
      if (wide)
        gqa_scores_avx512(qh.data(), kc + begin * H, H, n, scale, sc);
      else
#endif
        for (int64_t j = 0; j < n; ++j) sc[j] = dot_f32(qh.data(), kc + (begin + j) * H, H) * scale;
      if (p.softcap > 0)
        for (int64_t j = 0; j < n; ++j)
          sc[j] = static_cast<float>(p.softcap) * std::tanh(sc[j] / static_cast<float>(p.softcap));
      if (d.bias) {  // attention_bias, after the softcap: its columns are absolute key positions
        const float* row =
            d.bias + (((p.bias_b == 1 ? 0 : b) * p.bias_h + (p.bias_h == 1 ? 0 : h)) * p.seq + s) * p.total;
        for (int64_t j = 0; j < n; ++j) sc[j] += row[begin + j];
      }
      // smooth softmax or head_sink: one more logit (0, or the head's sink) in the denominator only
      const bool extra = p.smooth || d.sink;
      const float extra_logit = d.sink ? d.sink[h] : 0.f;
      float top = extra ? extra_logit : -INFINITY;
      for (int64_t j = 0; j < n; ++j) top = std::max(top, sc[j]);
      const float sum = (extra ? std::exp(extra_logit - top) : 0.f) + (n > 0 ? exp_shifted_sum_f32(sc, n, top) : 0.f);
      float* o = d.out + ((b * p.seq + s) * p.heads + h) * H;
      const float inv = sum > 0 ? 1.f / sum : 0.f;
      for (int64_t j = 0; j < n; ++j) sc[j] *= inv;
#if MS_SIMD_DISPATCH
      if (wide) {
        gqa_weighted_avx512(sc, vc + begin * H, H, n, o);
        continue;
      }
#endif
      std::memset(o, 0, static_cast<size_t>(H) * 4);
      for (int64_t j = 0; j < n; ++j) axpy_f32(sc[j], vc + (begin + j) * H, o, H);
    }
  }
}

Status gqa_kernel(runtime::KernelContext& ctx) {
  GqaPlan p;
  MS_RETURN_IF_ERROR(gqa_plan(ctx, p));
  GqaData d;
  d.held.reserve(12);
  d.q = gqa_input(ctx, 0, d);
  if (!p.packed) d.k = gqa_input(ctx, 1, d), d.v = gqa_input(ctx, 2, d);
  if (p.has_past) d.past_k = gqa_input(ctx, 3, d), d.past_v = gqa_input(ctx, 4, d);
  if (p.rotary) d.cos = gqa_input(ctx, 7, d), d.sin = gqa_input(ctx, 8, d);
  if (p.has_bias) d.bias = gqa_input(ctx, 10, d);
  if (ctx.has_input(11)) d.sink = gqa_input(ctx, 11, d);
  if (p.rotary && ctx.has_input(9)) {
    const Tensor& pos = ctx.input(9);
    d.position_ids.resize(static_cast<size_t>(pos.numel()));
    for (int64_t i = 0; i < pos.numel(); ++i) d.position_ids[static_cast<size_t>(i)] = pos.at_int(i);
  }
  const Shape out_shape{p.batch, p.seq, p.heads * p.head}, cache_shape{p.batch, p.kv, p.present, p.head};
  MS_ASSIGN_OR_RETURN(d.out, gqa_output(ctx, 0, out_shape, d));
  MS_ASSIGN_OR_RETURN(d.present_k, gqa_output(ctx, 1, cache_shape, d));
  MS_ASSIGN_OR_RETURN(d.present_v, gqa_output(ctx, 2, cache_shape, d));
  const int32_t* len = ctx.input(5).data<int32_t>();
  p.first_prompt = p.seq > 1 && p.seq == p.total;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t tot_b = int64_t{len[b]} + 1;
    const int64_t past_b = p.first_prompt ? 0 : tot_b - p.seq;
    if (tot_b < 1 || tot_b > p.present || past_b < 0 || past_b > p.past_buffer)
      return ctx.fail("seqlens_k[" + to_string(b) + "] = " + to_string(len[b]) + " does not fit a step of " +
                      to_string(p.seq) + " tokens after a past of " + to_string(p.past_buffer));
    if (p.has_bias && tot_b > p.total)
      return ctx.fail("seqlens_k[" + to_string(b) + "] = " + to_string(len[b]) +
                      " reaches past attention_bias's total_sequence_length " + to_string(p.total) + " columns");
    for (int64_t s = 0; p.rotary && s < p.seq; ++s) {
      const int64_t pos = gqa_position(p, d, b, s, past_b);
      if (pos < 0 || pos >= p.rot_positions)
        return ctx.fail("position " + to_string(pos) + " (batch " + to_string(b) + ", token " + to_string(s) +
                        ") is outside the rotary caches' " + to_string(p.rot_positions) + " positions");
    }
    gqa_fill_cache(p, d, b, past_b);
    gqa_attend(p, d, b, past_b, tot_b);
  }
  // Outputs of another type: converted from the f32 results.
  const DType dt = ctx.input(0).dtype();
  if (dt != DType::F32) {
    const std::pair<float*, Shape> outs[] = {
        {d.out, out_shape}, {d.present_k, cache_shape}, {d.present_v, cache_shape}};
    for (size_t i = 0; i < 3; ++i) {
      if (!gqa_wants(ctx, i)) continue;
      const int64_t n = numel(outs[i].second);
      MS_RETURN_IF_ERROR(
          write_output(ctx, i, dt, outs[i].second, std::vector<float>(outs[i].first, outs[i].first + n)));
    }
  }
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
