// Automatic differentiation of the builder API.
//  - PyNative (wrt concrete): a tape records every op F:: runs while loss_fn runs; the backward
//    walks it back op by op, running each op's gradient rule eagerly.
//  - Inside an active trace (wrt symbolic): the forward ops go into the trace and the gradient
//    rules append the backward nodes to the same graph (the whole step is one graph), named under
//    the top-level scope "grad" ("grad.fc1.gemm") so views can show the backward as one group.
// Gradient rules live in engine/frontend/nn/grad_*.cpp (one per op type, written with F:: ops).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/frontend/nn/module.h"
#include "engine/frontend/nn/var.h"

namespace ms::nn {

// Scope (first component of node names) of backward nodes in traced graphs.
inline constexpr const char* kGradScope = "grad";
bool is_backward_node_name(const std::string& node_name);

struct ValueAndGrad {
  Var value;
  Vars grads;  // grads[i] has wrt[i]'s shape and dtype (zeros when the loss does not depend on it)
};

// Gradient of the scalar returned by loss_fn w.r.t. each of `wrt`. Concrete wrt Vars are matched
// by their tensor (so trainable_parameters(m) match the tensors the module's forward uses).
Expected<ValueAndGrad> value_and_grad(const std::function<Var()>& loss_fn, const Vars& wrt);
// Same, calling on_ready(i, grad) as soon as wrt[i]'s gradient is final during the backward (in
// PyNative a data-parallel step starts reducing a bucket of gradients while the backward goes on);
// every wrt index is reported exactly once, those the loss does not reach (zeros) at the end.
using GradReadyFn = std::function<void(size_t wrt_index, const Var& grad)>;
Expected<ValueAndGrad> value_and_grad(const std::function<Var()>& loss_fn, const Vars& wrt,
                                      const GradReadyFn& on_ready);
// Only the grads.
Expected<Vars> grad(const std::function<Var()>& loss_fn, const Vars& wrt);

// Module parameters as Vars that value_and_grad can differentiate against, in named_parameters()
// order (trainable ones only; BatchNorm running stats are buffers), and their names.
Vars trainable_parameters(Module& m);
std::vector<std::string> trainable_parameter_names(Module& m);
// Writes new values into the module's trainable tensors (same order, dtype and shape), in place,
// and drops compiled forward graphs that captured the old values.
Status assign_parameters(Module& m, const std::vector<Tensor>& values);
// BatchNorm in training mode uses batch statistics and updates running stats; Dropout draws a
// (seeded) mask.
void set_training(Module& m, bool training);
// Drops the compiled-graph caches of m and its children.
void clear_graph_caches(Module& m);

}  // namespace ms::nn
