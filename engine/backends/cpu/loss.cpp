// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over an [N, C, D] view of the scores (D =
// product of the extra dims). Labels equal to ignore_index contribute nothing, not even weight.
#include <cmath>

#include "engine/backends/cpu/nn_kernels.h"

namespace ms::cpu::nn {
namespace {

struct LossView {
  int64_t n, c, d;
};

// loss[n, d] = -logp[n, t, d] * w[t]; reduces into `out`. Returns false with `bad` set when a label
// is out of range.
template <class T, class L>
bool nll(const T* logp, const L* labels, const T* weights, const LossView& v, int64_t ignore_index,
         const std::string& reduction, T* out, int64_t& bad) {
  using A = double;  // sums over the whole batch: keep them exact enough for f16 inputs too
  A total = 0, weight_sum = 0;
  for (int64_t b = 0; b < v.n; ++b)
    for (int64_t j = 0; j < v.d; ++j) {
      const auto t = static_cast<int64_t>(labels[b * v.d + j]);
      A loss = 0;
      if (t != ignore_index) {
        if (t < 0 || t >= v.c) {
          bad = t;
          return false;
        }
        const A w = weights ? static_cast<A>(weights[t]) : A(1);
        loss = -static_cast<A>(logp[(b * v.c + t) * v.d + j]) * w;
        weight_sum += w;
      }
      if (reduction == "none") out[b * v.d + j] = static_cast<T>(loss);
      total += loss;
    }
  if (reduction == "sum") out[0] = static_cast<T>(total);
  if (reduction == "mean") out[0] = static_cast<T>(total / weight_sum);  // all ignored: 0/0 = NaN, as the reference
  return true;
}

template <class T> void log_softmax_axis1(const T* x, T* y, const LossView& v) {
  if (v.c == 0) return;  // no classes: nothing to normalize (every label is then out of range)
  for (int64_t b = 0; b < v.n; ++b)
    for (int64_t j = 0; j < v.d; ++j) {
      const T* xp = x + b * v.c * v.d + j;
      T* yp = y + b * v.c * v.d + j;
      double mx = static_cast<double>(xp[0]);
      for (int64_t k = 1; k < v.c; ++k) mx = std::max(mx, static_cast<double>(xp[k * v.d]));
      double sum = 0;
      for (int64_t k = 0; k < v.c; ++k) sum += std::exp(static_cast<double>(xp[k * v.d]) - mx);
      const double lse = mx + std::log(sum);
      for (int64_t k = 0; k < v.c; ++k) yp[k * v.d] = static_cast<T>(static_cast<double>(xp[k * v.d]) - lse);
    }
}

Status loss_kernel(runtime::KernelContext& ctx, bool softmax) {
  const Tensor& scores = ctx.input(0);
  const Tensor& labels = ctx.input(1);
  const Tensor* weights = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const std::string reduction = ctx.node().attr_string("reduction", "mean");
  // No ignore_index attribute: no label is ignored (every valid label is in [0, C)).
  const int64_t ignore = ctx.node().attr_int("ignore_index", std::numeric_limits<int64_t>::min());
  const LossView v{scores.dim(0), scores.dim(1),
                   scores.dim(1) ? scores.numel() / std::max<int64_t>(1, scores.dim(0) * scores.dim(1)) : 0};
  int64_t bad = 0;
  bool labels_ok = true;
  Status st = Status::ok();
  const bool ok = visit_float(scores.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* logp = scores.data<T>();
    Tensor tmp;
    if (softmax) {
      Tensor* lp = ctx.num_outputs() > 1 && ctx.output(1).defined() ? &ctx.output(1) : nullptr;
      if (!lp) {
        auto s = ctx.scratch(scores.dtype(), scores.shape());
        if (!s) {
          st = std::move(s).take_status();
          return;
        }
        tmp = std::move(*s);
        lp = &tmp;
      }
      log_softmax_axis1(scores.data<T>(), lp->data<T>(), v);
      logp = lp->data<T>();
    }
    const T* w = weights ? weights->data<T>() : nullptr;
    T* out = ctx.output(0).data<T>();
    labels_ok = labels.dtype() == DType::I32 ? nll(logp, labels.data<int32_t>(), w, v, ignore, reduction, out, bad)
                                             : nll(logp, labels.data<int64_t>(), w, v, ignore, reduction, out, bad);
  });
  MS_RETURN_IF_ERROR(st);
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(scores.dtype())) + " is not supported");
  if (!labels_ok)
    return ctx.fail("label " + std::to_string(bad) + " is out of range [0, " + std::to_string(v.c) +
                    ") and is not ignore_index");
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace

void register_loss_kernels(runtime::KernelRegistry& r) {
  r.add("NegativeLogLikelihoodLoss", [](runtime::KernelContext& c) { return loss_kernel(c, false); });
  r.add("SoftmaxCrossEntropyLoss", [](runtime::KernelContext& c) { return loss_kernel(c, true); });
}

}  // namespace ms::cpu::nn
