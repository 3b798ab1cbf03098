// CPU kernels of the random generators: RandomUniform(Like), RandomNormal(Like), Bernoulli,
// Multinomial. A node with attribute `seed` draws the same values on every run; without one each run
// draws fresh values. The stream is numpy's legacy RandomState(seed) (numpy_rng.h), so a seeded node
// gives what onnx's reference implementation gives for that seed. Registered by register_bitwise_kernels
// (backends/cpu/bitwise.cpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_kernels.h"
#include "engine/backends/cpu/numpy_rng.h"

namespace ms::cpu {
namespace {

// The node's seed (a float attribute: numpy takes integers in [0, 2^32); others are hashed), or a
// fresh one per run when it has none.
NumpyRng make_rng(const ir::Node& node) {
  if (node.has_attr("seed")) {
    const double s = node.attr_float("seed", 0.0f);
    if (s >= 0 && s < 4294967296.0) return NumpyRng(static_cast<uint32_t>(s));
    uint64_t bits = 0;
    std::memcpy(&bits, &s, sizeof(bits));
    return NumpyRng(static_cast<uint32_t>(bits ^ (bits >> 32)));
  }
  static std::atomic<uint32_t> runs{0};
  std::random_device rd;
  return NumpyRng(rd() ^ (runs.fetch_add(1) * 0x9E3779B9u));
}

// A double into any numeric or bool element type.
template <class T> inline T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>)
    return v != 0.0;
  else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

using nn::visit_float;

// Output 0 as inferred: attribute 'shape' (RandomUniform/Normal) or the input's shape (the *Like ops).
Status allocate_random_output(runtime::KernelContext& ctx, Tensor*& y) {
  const ir::Node& node = ctx.node();
  const bool like = ctx.num_inputs() > 0 && ctx.has_input(0);
  DType dt = like ? ctx.input(0).dtype() : DType::F32;
  if (node.has_attr("dtype")) {
    const auto t = dtype_from_onnx(static_cast<int>(node.attr_int("dtype", 0)));
    dt = t ? *t : DType::Undefined;
  }
  if (!is_float(dt)) return ctx.fail("output dtype " + std::string(dtype_name(dt)) + " is not a float type");
  const Shape shape = like ? ctx.input(0).shape() : Shape(node.attr_ints("shape"));
  for (int64_t d : shape)
    if (d < 0) return ctx.fail("attribute 'shape' " + shape_to_string(shape) + " has a negative dim");
  MS_ASSIGN_OR_RETURN(y, ctx.allocate_output(0, dt, shape));
  return Status::ok();
}

template <bool Normal> Status random_kernel(runtime::KernelContext& ctx) {
  Tensor* y = nullptr;
  MS_RETURN_IF_ERROR(allocate_random_output(ctx, y));
  const ir::Node& node = ctx.node();
  const double a = Normal ? node.attr_float("mean", 0.0f) : node.attr_float("low", 0.0f);
  const double b = Normal ? node.attr_float("scale", 1.0f) : node.attr_float("high", 1.0f);
  if (Normal && b < 0) return ctx.fail("attribute 'scale' must be >= 0, got " + std::to_string(b));
  NumpyRng rng = make_rng(node);
  // As the reference: the standard draw rounded to T, then scaled and shifted in T.
  visit_float(y->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y->data<T>();
    const T mul = from_double<T>(Normal ? b : b - a), add = from_double<T>(a);
    for (int64_t i = 0; i < y->numel(); ++i) {
      const T r = from_double<T>(Normal ? rng.normal() : rng.uniform());
      out[i] = static_cast<T>(r * mul + add);
    }
  });
  ctx.set_impl(Normal ? "mt19937:polar" : "mt19937");
  return Status::ok();
}

// Probabilities of input 0 as doubles; an error for values outside [0, 1] (NaN included).
Status read_probabilities(runtime::KernelContext& ctx, std::vector<double>& p) {
  const Tensor& x = ctx.input(0);
  p.resize(static_cast<size_t>(x.numel()));
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<double>(src[i]);
  });
  if (!ok) return ctx.fail("input must be a float tensor, got " + std::string(dtype_name(x.dtype())));
  for (size_t i = 0; i < p.size(); ++i)
    if (!(p[i] >= 0.0 && p[i] <= 1.0))
      return ctx.fail("input (probabilities) value " + std::to_string(p[i]) + " at flat index " + std::to_string(i) +
                      " is outside [0, 1]");
  return Status::ok();
}

Status bernoulli_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DType dt = x.dtype();
  if (ctx.node().has_attr("dtype")) {
    const auto t = dtype_from_onnx(static_cast<int>(ctx.node().attr_int("dtype", 0)));
    dt = t ? *t : DType::Undefined;
  }
  if (!is_numeric(dt) && dt != DType::Bool)
    return ctx.fail("attribute 'dtype' must name a numeric or bool type, got " + std::string(dtype_name(dt)));
  std::vector<double> p;
  MS_RETURN_IF_ERROR(read_probabilities(ctx, p));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, dt, x.shape()));
  NumpyRng rng = make_rng(ctx.node());
  visit_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y->data<T>();
    for (size_t i = 0; i < p.size(); ++i) out[i] = from_double<T>(rng.bernoulli(p[i]));
  });
  ctx.set_impl("mt19937");
  return Status::ok();
}

// Cumulative (unnormalized) probabilities of one row of log-probabilities; false when no class has
// a finite, non-zero weight.
template <class T> bool row_cdf(const T* logits, int64_t classes, std::vector<double>& cdf) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, static_cast<double>(logits[c]));
  if (!std::isfinite(mx)) return false;
  double total = 0;
  for (int64_t c = 0; c < classes; ++c) {
    const double v = static_cast<double>(logits[c]);
    if (std::isnan(v)) return false;
    total += std::exp(v - mx);
    cdf[static_cast<size_t>(c)] = total;
  }
  return total > 0 && std::isfinite(total);
}

template <class T, class O>
Status multinomial_loop(runtime::KernelContext& ctx, const T* x, O* y, int64_t batch, int64_t classes,
                        int64_t samples) {
  NumpyRng rng = make_rng(ctx.node());
  std::vector<double> cdf(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    if (!row_cdf(x + b * classes, classes, cdf))
      return ctx.fail("row " + std::to_string(b) + " of input has no finite log-probability (or holds NaN)");
    for (int64_t s = 0; s < samples; ++s) {
      const double u = rng.uniform() * cdf.back();
      const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
      y[b * samples + s] = static_cast<O>(std::min<int64_t>(it - cdf.begin(), classes - 1));
    }
  }
  return Status::ok();
}

Status multinomial_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) return ctx.fail("input must have rank 2 [batch, classes], got " + shape_to_string(x.shape()));
  const int64_t samples = ctx.node().attr_int("sample_size", 1);
  if (samples < 1) return ctx.fail("attribute 'sample_size' must be >= 1, got " + std::to_string(samples));
  const auto t = dtype_from_onnx(static_cast<int>(ctx.node().attr_int("dtype", 6)));
  const DType dt = t ? *t : DType::Undefined;
  if (dt != DType::I32 && dt != DType::I64)
    return ctx.fail("attribute 'dtype' must be int32 or int64, got " + std::string(dtype_name(dt)));
  const int64_t batch = x.dim(0), classes = x.dim(1);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, dt, {batch, samples}));
  if (batch == 0) return Status::ok();
  if (classes == 0) return ctx.fail("input has 0 classes (shape " + shape_to_string(x.shape()) + ")");
  Status st;
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (dt == DType::I32)
      st = multinomial_loop(ctx, x.data<T>(), y->data<int32_t>(), batch, classes, samples);
    else
      st = multinomial_loop(ctx, x.data<T>(), y->data<int64_t>(), batch, classes, samples);
  });
  if (!ok) return ctx.fail("input must be a float tensor, got " + std::string(dtype_name(x.dtype())));
  ctx.set_impl("mt19937");
  return st;
}

}  // namespace

void register_random_kernels(runtime::KernelRegistry& r) {
  r.add("RandomUniform", random_kernel<false>);
  r.add("RandomNormal", random_kernel<true>);
  r.add("RandomUniformLike", random_kernel<false>);
  r.add("RandomNormalLike", random_kernel<true>);
  r.add("Bernoulli", bernoulli_kernel);
  r.add("Multinomial", multinomial_kernel);
}

}  // namespace ms::cpu
