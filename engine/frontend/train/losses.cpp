#include "engine/frontend/train/losses.h"

#include <string>

#include "engine/frontend/nn/functional.h"

namespace ms::nn::train {
namespace {

std::string desc(const Var& v) { return std::string(dtype_name(v.dtype())) + shape_to_string(v.shape()); }

Var fail(const std::string& what) { return Var::failed(invalid_argument(what)); }

// Rank/size checks that both modes can do (symbolic Vars know their static shapes); -1 dims pass.
Status check_logits(const char* loss, const Var& logits) {
  if (!logits.ok()) return logits.status();
  if (logits.rank() != 2 || !is_float(logits.dtype()))
    return invalid_argument(std::string(loss) + ": logits must be float [batch, classes], got " + desc(logits));
  return Status::ok();
}

bool dims_differ(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

Var mean_neg_rowsum(const Var& targets, const Var& logits) {
  Var logp = F::op("LogSoftmax", {logits}, {{"axis", int64_t{-1}}});
  Var per_row = F::reduce_sum(F::mul(targets, logp), {1});
  return F::neg(F::reduce_mean(per_row));
}

}  // namespace

Var cross_entropy(const Var& logits, const Var& labels, double label_smoothing) {
  if (Status st = check_logits("cross_entropy", logits); !st.is_ok()) return Var::failed(st);
  if (!labels.ok()) return labels;
  if (labels.rank() != 1 || !is_integer(labels.dtype()))
    return fail("cross_entropy: labels must be integer class indices [batch], got " + desc(labels));
  if (dims_differ(labels.dim(0), logits.dim(0)))
    return fail("cross_entropy: " + std::to_string(labels.dim(0)) + " labels for logits " + desc(logits));
  if (!(label_smoothing >= 0.0 && label_smoothing < 1.0))
    return fail("cross_entropy: label smoothing " + std::to_string(label_smoothing) + " is not in [0, 1)");
  const int64_t classes = logits.dim(1);
  if (classes < 1) return fail("cross_entropy: logits " + desc(logits) + " need a static class count");
  // A concrete label out of range would silently give an all-"off" target row: say so instead.
  if (labels.is_concrete()) {
    const Tensor& t = labels.impl()->value;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t v = t.at_int(i);
      if (v < 0 || v >= classes)
        return fail("cross_entropy: label " + std::to_string(v) + " at row " + std::to_string(i) +
                    " out of range [0, " + std::to_string(classes) + ") for logits " + desc(logits));
    }
  }
  const double off = label_smoothing / static_cast<double>(classes);
  const double on = 1.0 - label_smoothing + off;
  Var values = F::constant(Tensor::from_vector<float>({static_cast<float>(off), static_cast<float>(on)}, {2}));
  if (logits.dtype() != DType::F32) values = F::cast(values, logits.dtype());
  Var targets = F::op("OneHot", {labels, F::ints({classes}), values}, {{"axis", int64_t{-1}}});
  return mean_neg_rowsum(targets, logits);
}

Var cross_entropy_soft(const Var& logits, const Var& targets) {
  if (Status st = check_logits("cross_entropy_soft", logits); !st.is_ok()) return Var::failed(st);
  if (!targets.ok()) return targets;
  if (targets.rank() != 2 || dims_differ(targets.dim(0), logits.dim(0)) || dims_differ(targets.dim(1), logits.dim(1)))
    return fail("cross_entropy_soft: targets " + desc(targets) + " do not match logits " + desc(logits));
  return mean_neg_rowsum(targets, logits);
}

Var mse(const Var& pred, const Var& target) {
  if (!pred.ok()) return pred;
  if (!target.ok()) return target;
  const Shape a = pred.shape(), b = target.shape();
  bool differ = a.size() != b.size();
  for (size_t i = 0; !differ && i < a.size(); ++i) differ = dims_differ(a[i], b[i]);
  if (differ) return fail("mse: prediction " + desc(pred) + " and target " + desc(target) + " differ in shape");
  Var d = F::sub(pred, target);
  return F::reduce_mean(F::mul(d, d));
}

Expected<int64_t> count_correct(const Tensor& logits, const Tensor& labels) {
  if (!logits.defined() || !labels.defined()) return invalid_argument("accuracy: undefined tensor");
  if (logits.rank() != 2 || labels.rank() != 1 || labels.dim(0) != logits.dim(0) || !is_integer(labels.dtype()))
    return invalid_argument("accuracy: logits " + shape_to_string(logits.shape()) + " and labels " +
                            std::string(dtype_name(labels.dtype())) + shape_to_string(labels.shape()) +
                            " are not [B, C] and int [B]");
  const int64_t b = logits.dim(0), c = logits.dim(1);
  int64_t correct = 0;
  for (int64_t i = 0; i < b; ++i) {
    int64_t best = 0;
    double best_v = logits.at_double(i * c);
    for (int64_t j = 1; j < c; ++j) {
      const double v = logits.at_double(i * c + j);
      if (v > best_v) best_v = v, best = j;
    }
    correct += best == labels.at_int(i);
  }
  return correct;
}

Expected<double> accuracy(const Tensor& logits, const Tensor& labels) {
  MS_ASSIGN_OR_RETURN(int64_t n, count_correct(logits, labels));
  return logits.dim(0) > 0 ? static_cast<double>(n) / static_cast<double>(logits.dim(0)) : 0.0;
}

}  // namespace ms::nn::train
