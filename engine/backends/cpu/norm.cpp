// Normalization kernels: BatchNormalization (inference, and the training form that also returns the
// batch statistics), InstanceNormalization, LayerNormalization, LRN, MeanVarianceNormalization,
// LpNormalization, GroupNormalization.
// Plain loops: these are memory bound, one pass to gather statistics and one to normalize.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "engine/backends/cpu/bf16_convert.h"
#include "engine/backends/cpu/nn_kernels.h"
#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu::nn {
namespace {

using std::vector;

Status bad_dtype(runtime::KernelContext& ctx, DType t) {
  return ctx.unsupported_case("dtype " + std::string(dtype_name(t)) + " is not supported");
}

// Small per-channel parameter tensors in any float dtype, read as double.
vector<double> as_doubles(const Tensor& t) {
  vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.at_double(i);
  return v;
}

void store(Tensor& t, int64_t i, double v) {
  visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.data<T>()[i] = static_cast<T>(v);
  });
}

// y = x * a[c] + b[c] over planes of `inner` elements, channel = plane % channels.
template <class T>
void affine_per_channel(const T* x, T* y, int64_t planes, int64_t channels, int64_t inner, const vector<double>& a,
                        const vector<double>& b) {
  using A = acc_t<T>;
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const auto c = static_cast<size_t>(plane % channels);
    const A ac = static_cast<A>(a[c]), bc = static_cast<A>(b[c]);
    for (int64_t i = plane * inner; i < (plane + 1) * inner; ++i) y[i] = static_cast<T>(static_cast<A>(x[i]) * ac + bc);
  }
}

// Mean and (population) variance per channel over N and the spatial axes.
template <class T>
void channel_stats(const T* x, int64_t n, int64_t channels, int64_t inner, vector<double>& mean, vector<double>& var) {
  mean.assign(static_cast<size_t>(channels), 0);
  var.assign(static_cast<size_t>(channels), 0);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < channels; ++c) {
    double s = 0, s2 = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        const double v = static_cast<double>(x[(b * channels + c) * inner + i]);
        s += v;
        s2 += v * v;
      }
    const double count = static_cast<double>(n * inner);
    const double m = count > 0 ? s / count : 0;
    mean[static_cast<size_t>(c)] = m;
    var[static_cast<size_t>(c)] = count > 0 ? std::max(0.0, s2 / count - m * m) : 0;
  }
}

Status batchnorm_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t n = x.dim(0), c = x.dim(1), inner = c && n ? x.numel() / (n * c) : 0;
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const double momentum = ctx.node().attr_float("momentum", 0.9f);
  vector<double> scale = as_doubles(ctx.input(1)), bias = as_doubles(ctx.input(2));
  vector<double> mean = as_doubles(ctx.input(3)), var = as_doubles(ctx.input(4));
  bool training = ctx.opset() >= 14 && ctx.node().attr_int("training_mode", 0) != 0;
  for (size_t o = 1; ctx.opset() < 14 && o < ctx.num_outputs(); ++o) training = training || ctx.output(o).defined();
  vector<double> batch_mean, batch_var;
  if (training) {
    const bool ok = visit_float(x.dtype(), [&](auto tag) {
      channel_stats(x.data<typename decltype(tag)::type>(), n, c, inner, batch_mean, batch_var);
    });
    if (!ok) return bad_dtype(ctx, x.dtype());
    // Outputs: opset >= 14 (Y, running_mean, running_var); before (Y, mean, var, saved_mean, saved_var).
    for (size_t o = 1; o < ctx.num_outputs(); ++o) {
      Tensor& t = ctx.output(o);
      if (!t.defined()) continue;
      for (int64_t ch = 0; ch < c; ++ch) {
        const auto i = static_cast<size_t>(ch);
        const bool is_mean = o % 2 == 1;
        const double running = is_mean ? mean[i] * momentum + batch_mean[i] * (1 - momentum)
                                       : var[i] * momentum + batch_var[i] * (1 - momentum);
        store(t, ch, o <= 2 ? running : (is_mean ? batch_mean[i] : batch_var[i]));
      }
    }
  }
  vector<double> a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
  for (size_t ch = 0; ch < a.size(); ++ch) {
    const double m = training ? batch_mean[ch] : mean[ch], v = training ? batch_var[ch] : var[ch];
    a[ch] = scale[ch] / std::sqrt(v + eps);
    b[ch] = bias[ch] - m * a[ch];
  }
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    affine_per_channel(x.data<T>(), ctx.output(0).data<T>(), n * c, c, inner, a, b);
  });
  if (!ok) return bad_dtype(ctx, x.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

template <class T>
void instancenorm_loop(const T* x, T* y, int64_t planes, int64_t channels, int64_t inner, const vector<double>& scale,
                       const vector<double>& bias, double eps) {
  using A = acc_t<T>;
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * inner;
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < inner; ++i) s += static_cast<double>(xp[i]);
    const double m = inner ? s / static_cast<double>(inner) : 0;
    for (int64_t i = 0; i < inner; ++i) {
      const double d = static_cast<double>(xp[i]) - m;
      s2 += d * d;
    }
    const double var = inner ? s2 / static_cast<double>(inner) : 0;
    const auto c = static_cast<size_t>(plane % channels);
    const A a = static_cast<A>(scale[c] / std::sqrt(var + eps));
    const A b = static_cast<A>(bias[c] - m * scale[c] / std::sqrt(var + eps));
    for (int64_t i = 0; i < inner; ++i) y[plane * inner + i] = static_cast<T>(static_cast<A>(xp[i]) * a + b);
  }
}

Status instancenorm_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t n = x.dim(0), c = x.dim(1), inner = c && n ? x.numel() / (n * c) : 0;
  const vector<double> scale = as_doubles(ctx.input(1)), bias = as_doubles(ctx.input(2));
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    instancenorm_loop(x.data<T>(), ctx.output(0).data<T>(), n * c, c, inner, scale, bias, eps);
  });
  if (!ok) return bad_dtype(ctx, x.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

// Values of a tensor broadcast (numpy, right-aligned) onto `tail`, flattened.
vector<double> broadcast_to_tail(const Tensor& t, const Shape& tail) {
  const int64_t size = numel(tail);
  vector<double> out(static_cast<size_t>(size));
  const Shape& s = t.shape();
  const Shape st = contiguous_strides(s);
  const size_t off = tail.size() - s.size();
  for (int64_t i = 0; i < size; ++i) {
    int64_t rest = i, src = 0;
    for (int64_t a = static_cast<int64_t>(tail.size()) - 1; a >= 0; --a) {
      const int64_t pos = rest % tail[static_cast<size_t>(a)];
      rest /= tail[static_cast<size_t>(a)];
      if (static_cast<size_t>(a) >= off && s[a - off] != 1) src += pos * st[a - off];
    }
    out[static_cast<size_t>(i)] = t.at_double(src);
  }
  return out;
}

// One f32 row of LayerNormalization: mean, then the variance of the centred values (two passes over
// a row that stays in cache; numerically as good as the double path for rows of a few thousand),
// then y = (x - mean) * inv * scale + bias. Vectorized (float accumulators in SIMD lanes).
MS_SIMD_CLONES void layernorm_row_f32(const float* __restrict x, float* __restrict y, int64_t n,
                                      const float* __restrict scale, const float* __restrict bias, float eps) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i];
  const float m = s / static_cast<float>(n);
  float s2 = 0.f;
#pragma omp simd reduction(+ : s2)
  for (int64_t i = 0; i < n; ++i) s2 += (x[i] - m) * (x[i] - m);
  const float inv = 1.f / std::sqrt(s2 / static_cast<float>(n) + eps);
  if (bias) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * scale[i] + bias[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * scale[i];
  }
}

// Elements [0, n) of a float tensor's row as f32: itself when it is f32, else widened into `buf`.
const float* row_f32(const Tensor& t, int64_t offset, int64_t n, std::vector<float>& buf) {
  if (t.dtype() == DType::F32) return t.data<float>() + offset;
  buf.resize(static_cast<size_t>(n));
  widen_bf16(t.data<bf16>() + offset, buf.data(), n);
  return buf.data();
}

// The inference form on f32, or bf16 (a bf16 Graph's: computed in f32 row by row, rounded once on
// the way out), with a scale (and bias) of exactly the normalized shape: rows split across the
// threads. False when the case is not that one (the general path then runs).
bool layernorm_rows(runtime::KernelContext& ctx, const Tensor& x, int64_t outer, int64_t inner, float eps) {
  const Tensor& scale = ctx.input(1);
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const DType t = x.dtype();
  auto param_ok = [t](const Tensor& p) { return p.dtype() == DType::F32 || p.dtype() == t; };
  if ((t != DType::F32 && t != DType::BF16) || !param_ok(scale) || scale.numel() != inner || inner == 0 ||
      (bias && (!param_ok(*bias) || bias->numel() != inner)))
    return false;
  for (size_t o = 1; o < ctx.num_outputs(); ++o)
    if (ctx.output(o).defined()) return false;  // the training form also returns mean and 1/stddev
  std::vector<float> sbuf, bbuf;
  const float* sd = row_f32(scale, 0, inner, sbuf);
  const float* bd = bias ? row_f32(*bias, 0, inner, bbuf) : nullptr;
  Tensor& y = ctx.output(0);
  const bool parallel = outer > 1 && outer * inner >= (1 << 14) && omp_get_max_threads() > 1;
  if (t == DType::F32) {
    const float* xd = x.data<float>();
    float* yd = y.data<float>();
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < outer; ++o) layernorm_row_f32(xd + o * inner, yd + o * inner, inner, sd, bd, eps);
    ctx.set_impl("rows-f32");
    return true;
  }
  bf16* yd = y.data<bf16>();
#pragma omp parallel if (parallel)
  {
    std::vector<float> in, out(static_cast<size_t>(inner));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      layernorm_row_f32(row_f32(x, o * inner, inner, in), out.data(), inner, sd, bd, eps);
      round_to_bf16(out.data(), yd + o * inner, inner);
    }
  }
  ctx.set_impl("rows-bf16");
  return true;
}

Status layernorm_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), x.rank());
  const Shape tail(x.shape().begin() + axis, x.shape().end());
  if (ctx.input(1).rank() > static_cast<int64_t>(tail.size()) ||
      (ctx.has_input(2) && ctx.input(2).rank() > static_cast<int64_t>(tail.size())))
    return ctx.fail("scale and bias may have at most the normalized rank (" + std::to_string(tail.size()) + ")");
  const int64_t inner = numel(tail), outer = inner ? x.numel() / inner : 0;
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  if (layernorm_rows(ctx, x, outer, inner, static_cast<float>(eps))) return Status::ok();
  const vector<double> scale = broadcast_to_tail(ctx.input(1), tail);
  const vector<double> bias =
      ctx.has_input(2) ? broadcast_to_tail(ctx.input(2), tail) : vector<double>(scale.size(), 0);
  Tensor* mean_out = ctx.num_outputs() > 1 && ctx.output(1).defined() ? &ctx.output(1) : nullptr;
  Tensor* inv_out = ctx.num_outputs() > 2 && ctx.output(2).defined() ? &ctx.output(2) : nullptr;
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const T* xd = x.data<T>();
    T* yd = ctx.output(0).data<T>();
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const T* xp = xd + o * inner;
      double s = 0, s2 = 0;
      for (int64_t i = 0; i < inner; ++i) s += static_cast<double>(xp[i]);
      const double m = s / static_cast<double>(inner);
      for (int64_t i = 0; i < inner; ++i) {
        const double d = static_cast<double>(xp[i]) - m;
        s2 += d * d;
      }
      const double inv = 1.0 / std::sqrt(s2 / static_cast<double>(inner) + eps);
      for (int64_t i = 0; i < inner; ++i) {
        const auto k = static_cast<size_t>(i);
        yd[o * inner + i] = static_cast<T>(static_cast<A>((static_cast<double>(xp[i]) - m) * inv * scale[k] + bias[k]));
      }
      if (mean_out) store(*mean_out, o, m);
      if (inv_out) store(*inv_out, o, inv);
    }
  });
  if (!ok) return bad_dtype(ctx, x.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

Status lrn_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const ir::Node& node = ctx.node();
  const int64_t size = node.attr_int("size", 1);
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f);
  const double bias = node.attr_float("bias", 1.0f);
  const int64_t n = x.dim(0), c = x.dim(1), inner = c && n ? x.numel() / (n * c) : 0;
  const int64_t before = (size - 1) / 2, after = size - 1 - before;  // floor / ceil of (size-1)/2
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = x.data<T>();
    T* yd = ctx.output(0).data<T>();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < inner; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
            const double v = static_cast<double>(xd[(b * c + k) * inner + i]);
            sq += v * v;
          }
          const int64_t at = (b * c + ch) * inner + i;
          yd[at] = static_cast<T>(static_cast<double>(xd[at]) /
                                  std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
        }
  });
  if (!ok) return bad_dtype(ctx, x.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

Status mvn_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  vector<bool> reduced(s.size(), false);
  for (int64_t a : ctx.node().attr_ints("axes", {0, 2, 3}))
    reduced[static_cast<size_t>(normalize_axis(a, x.rank()))] = true;
  // Group id of every element: its index over the kept axes.
  const int64_t total = x.numel();
  vector<int64_t> group(static_cast<size_t>(total));
  int64_t groups = 1;
  for (size_t a = 0; a < s.size(); ++a)
    if (!reduced[a]) groups *= s[a];
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, gid = 0, mul = 1;
    for (int64_t a = x.rank() - 1; a >= 0; --a) {
      const int64_t pos = rest % s[static_cast<size_t>(a)];
      rest /= s[static_cast<size_t>(a)];
      if (!reduced[static_cast<size_t>(a)]) {
        gid += pos * mul;
        mul *= s[static_cast<size_t>(a)];
      }
    }
    group[static_cast<size_t>(i)] = gid;
  }
  vector<double> sum(static_cast<size_t>(groups), 0), sum2(static_cast<size_t>(groups), 0),
      count(static_cast<size_t>(groups), 0);
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = x.data<T>();
    T* yd = ctx.output(0).data<T>();
    for (int64_t i = 0; i < total; ++i) {
      const auto g = static_cast<size_t>(group[static_cast<size_t>(i)]);
      const double v = static_cast<double>(xd[i]);
      sum[g] += v;
      sum2[g] += v * v;
      count[g] += 1;
    }
    for (int64_t i = 0; i < total; ++i) {
      const auto g = static_cast<size_t>(group[static_cast<size_t>(i)]);
      const double m = sum[g] / count[g];
      const double sd = std::sqrt(std::max(0.0, sum2[g] / count[g] - m * m));
      yd[i] = static_cast<T>((static_cast<double>(xd[i]) - m) / (sd + 1e-9));
    }
  });
  if (!ok) return bad_dtype(ctx, x.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

// --- LpNormalization ---------------------------------------------------------------------------------

// y = x / ||x||_p along the axis of the [outer, red, inner] view (0 where the norm is 0). The norms of
// one outer slice accumulate across a row of `inner` doubles, so the input is read contiguously.
template <class T> void lpnorm_loop(const T* x, T* y, int64_t outer, int64_t red, int64_t inner, int64_t p) {
#pragma omp parallel if (outer > 1 && outer * red * inner >= (1 << 16))
  {
    vector<double> norm(static_cast<size_t>(inner));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const T* xs = x + o * red * inner;
      T* ys = y + o * red * inner;
      std::fill(norm.begin(), norm.end(), 0.0);
      for (int64_t r = 0; r < red; ++r)
        for (int64_t i = 0; i < inner; ++i) {
          const double v = static_cast<double>(xs[r * inner + i]);
          norm[static_cast<size_t>(i)] += p == 1 ? std::fabs(v) : v * v;
        }
      if (p == 2)
        for (double& n : norm) n = std::sqrt(n);
      for (int64_t r = 0; r < red; ++r)
        for (int64_t i = 0; i < inner; ++i) {
          const double n = norm[static_cast<size_t>(i)];
          ys[r * inner + i] = static_cast<T>(n == 0 ? 0.0 : static_cast<double>(xs[r * inner + i]) / n);
        }
    }
  }
}

Status lpnorm_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) return ctx.fail("attribute 'p' must be 1 or 2, got " + std::to_string(p));
  const int64_t axis_attr = ctx.node().attr_int("axis", -1);
  const int64_t axis = normalize_axis(axis_attr, x.rank());
  if (axis < 0)
    return ctx.fail("attribute 'axis' = " + std::to_string(axis_attr) + " is out of range for input " +
                    shape_to_string(x.shape()));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.shape()));
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= x.dim(a);
  for (int64_t a = axis + 1; a < x.rank(); ++a) inner *= x.dim(a);
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    lpnorm_loop(x.data<T>(), y->data<T>(), outer, x.dim(axis), inner, p);
  });
  if (!ok) return bad_dtype(ctx, x.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

// --- GroupNormalization ------------------------------------------------------------------------------

struct GroupNormDims {
  int64_t n = 0, c = 0, groups = 1, inner = 0;  // inner: elements per channel
  bool per_channel = true;                      // scale/bias per channel (opset 21) or per group
};

// Statistics per (instance, group) in double; then y = (x - mean) / sqrt(var + eps) * scale + bias.
// stash_type only sets the least precision of the first stage: double covers every float type.
template <class T>
void groupnorm_loop(const T* x, T* y, const GroupNormDims& d, const vector<double>& scale, const vector<double>& bias,
                    double eps) {
  const int64_t cpg = d.c / d.groups, len = cpg * d.inner;
#pragma omp parallel for schedule(static) if (d.n * d.groups > 1 && d.n * d.c * d.inner >= (1 << 14))
  for (int64_t ng = 0; ng < d.n * d.groups; ++ng) {
    const T* xs = x + ng * len;
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < len; ++i) s += static_cast<double>(xs[i]);
    const double m = len ? s / static_cast<double>(len) : 0;
    for (int64_t i = 0; i < len; ++i) {
      const double v = static_cast<double>(xs[i]) - m;
      s2 += v * v;
    }
    const double inv = 1.0 / std::sqrt((len ? s2 / static_cast<double>(len) : 0) + eps);
    const int64_t g = ng % d.groups;
    for (int64_t k = 0; k < cpg; ++k) {
      const auto at = static_cast<size_t>(d.per_channel ? g * cpg + k : g);
      const double a = inv * scale[at], b = bias[at] - m * inv * scale[at];
      for (int64_t i = k * d.inner; i < (k + 1) * d.inner; ++i)
        y[ng * len + i] = static_cast<T>(static_cast<double>(xs[i]) * a + b);
    }
  }
}

Status groupnorm_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) return ctx.fail("X must have rank >= 2, got " + shape_to_string(x.shape()));
  GroupNormDims d;
  d.n = x.dim(0);
  d.c = x.dim(1);
  d.groups = ctx.node().attr_int("num_groups", 0);
  d.inner = d.n && d.c ? x.numel() / (d.n * d.c) : 0;
  d.per_channel = ctx.opset() >= 21;
  if (d.groups < 1 || d.c % d.groups != 0)
    return ctx.fail("attribute 'num_groups' = " + std::to_string(d.groups) + " must be >= 1 and divide the " +
                    std::to_string(d.c) + " channels of X");
  const vector<double> scale = as_doubles(ctx.input(1)), bias = as_doubles(ctx.input(2));
  const auto want = static_cast<size_t>(d.per_channel ? d.c : d.groups);
  if (scale.size() != want || bias.size() != want)
    return ctx.fail("scale and bias must have " + std::to_string(want) + " values (" +
                    (d.per_channel ? "one per channel" : "one per group") + "), got " + std::to_string(scale.size()) +
                    " and " + std::to_string(bias.size()));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.shape()));
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    groupnorm_loop(x.data<T>(), y->data<T>(), d, scale, bias, eps);
  });
  if (!ok) return bad_dtype(ctx, x.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace

void register_norm_kernels(runtime::KernelRegistry& r) {
  r.add("BatchNormalization", batchnorm_kernel);
  r.add("InstanceNormalization", instancenorm_kernel);
  r.add("LayerNormalization", layernorm_kernel);
  r.add("LRN", lrn_kernel);
  r.add("MeanVarianceNormalization", mvn_kernel);
  r.add("LpNormalization", lpnorm_kernel);
  r.add("GroupNormalization", groupnorm_kernel);
}

}  // namespace ms::cpu::nn
