// Losses written with F:: ops on Vars, so the same code runs eagerly (PyNative), is traced into a
// training-step graph (Graph mode), and is differentiated by the ops' gradient rules. Only plain
// ops are used (LogSoftmax, OneHot, Mul, Sub, ReduceSum/ReduceMean): no loss needs a gradient
// rule of its own. Labels never need a gradient (OneHot only reads them).
#pragma once

#include <cstdint>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/frontend/nn/var.h"

namespace ms::nn::train {

// Softmax cross-entropy with logits, mean over the batch.
//   logits [B, C] float, labels [B] int (class indices in [0, C)).
// label_smoothing e in [0, 1): targets are (1 - e) on the label and e / C everywhere (PyTorch's
// definition), folded into OneHot's [off, on] values. A concrete label out of range, a rank or
// batch mismatch or e outside [0, 1) is a failed Var naming the shapes.
Var cross_entropy(const Var& logits, const Var& labels, double label_smoothing = 0.0);
// The same with soft targets [B, C] (each row a distribution).
Var cross_entropy_soft(const Var& logits, const Var& targets);
// Mean squared error over all elements (same shapes; no broadcasting, to catch [B] vs [B, 1]).
Var mse(const Var& pred, const Var& target);

// Host-side: rows of `logits` [B, C] whose argmax (first on ties) equals `labels` [B].
Expected<int64_t> count_correct(const Tensor& logits, const Tensor& labels);
Expected<double> accuracy(const Tensor& logits, const Tensor& labels);

}  // namespace ms::nn::train
