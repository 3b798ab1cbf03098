// Custom ops from plain functions (F::custom): the builder API's counterpart of an operator plugin.
//
//   auto twice_plus_one = F::custom("twice_plus_one", [](const Tensor& x) -> Expected<Tensor> { ... });
//   Var y = twice_plus_one(x);           // PyNative: the function runs on the concrete tensor
//
// Such an op is eager-only until it says how its outputs are typed: Graph mode (a trace, jit) plans
// each value before anything runs, so tracing it without an inference function fails with a message
// naming the op. With `.infer(...)` it traces to a node of domain `ai.modescope.custom` and runs
// in both modes (Graph mode checks each result against the inferred type). Ops are process-wide by
// name; defining a name again replaces its function.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/frontend/nn/var.h"

namespace ms::nn::F {

inline constexpr const char* kCustomDomain = "ai.modescope.custom";

// The function: host tensors in, one tensor per output out.
using CustomFn = std::function<Expected<std::vector<Tensor>>(const std::vector<Tensor>&)>;
using CustomUnaryFn = std::function<Expected<Tensor>(const Tensor&)>;
// Output types from input types (a tensor's dtype and dims; -1 for an unknown dim).
using CustomInferFn = std::function<Expected<std::vector<ir::ValueType>>(const std::vector<ir::ValueType>&)>;

class CustomOp {
 public:
  struct State;
  explicit CustomOp(std::shared_ptr<State> state) : state_(std::move(state)) {}

  // Gives the op an inference function, so it traces into Graph mode too.
  CustomOp& infer(CustomInferFn fn);
  // Same type and shape as input 0.
  CustomOp& infer_same_as_input();

  Var operator()(const Var& x) const { return (*this)(Vars{x})[0]; }
  Vars operator()(const Vars& inputs) const;
  const std::string& name() const;

 private:
  std::shared_ptr<State> state_;
};

CustomOp custom(const std::string& name, CustomFn fn, int num_outputs = 1);
CustomOp custom(const std::string& name, CustomUnaryFn fn);

}  // namespace ms::nn::F
