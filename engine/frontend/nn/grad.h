// Gradient builders: one rule per op type, written with F:: ops on Vars so the same rule runs
// eagerly (PyNative backward, op by op) or appends backward nodes to the active trace (Graph mode).
// A rule receives the forward node (op type and attributes), its input and output Vars and the
// gradient of each output, and returns one gradient per input (an undefined Var: none).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/frontend/nn/functional.h"
#include "engine/ir/graph.h"

namespace ms::autodiff {

using nn::Var;
using nn::Vars;

struct GradContext {
  const ir::Node& node;      // op_type, domain, attrs, name (module path of the forward op)
  const Vars& inputs;        // forward inputs (undefined where an optional input was left out)
  const Vars& outputs;       // forward outputs
  const Vars& grad_outputs;  // d loss / d output i (undefined: the output does not reach the loss)

  const Var& in(size_t i) const { return inputs[i]; }
  const Var& out(size_t i) const { return outputs[i]; }
  const Var& gout(size_t i) const { return grad_outputs[i]; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].defined(); }
  Status fail(const std::string& what) const;
};

using GradFn = std::function<Expected<Vars>(const GradContext&)>;

class GradRegistry {
 public:
  static GradRegistry& instance();
  void add(const std::string& op_type, GradFn fn, const std::string& domain = "");
  const GradFn* find(const std::string& op_type, const std::string& domain = "") const;
  std::vector<std::string> op_types() const;

 private:
  std::vector<std::pair<std::string, GradFn>> rules_;
};

// Rule families (engine/frontend/nn/grad_*.cpp), registered once by GradRegistry::instance().
void register_elementwise_grads(GradRegistry& r);  // grad_elementwise.cpp
void register_nn_grads(GradRegistry& r);           // grad_nn.cpp: Gemm, MatMul, Conv, pools
void register_norm_grads(GradRegistry& r);         // grad_norm.cpp: Softmax, LogSoftmax, norms, losses
void register_tensor_grads(GradRegistry& r);       // grad_tensor.cpp: shapes, data movement, reductions

// Helpers shared by the rules.
// Sums `g` down to `shape` (the inverse of numpy broadcasting): leading axes and axes where the
// target has 1 are summed, then reshaped.
Var reduce_to(const Var& g, const Shape& shape);
Var sum_keepdims(const Var& x, const std::vector<int64_t>& axes);
Var zeros(DType dtype, const Shape& shape);
Var full(double value, DType dtype, const Shape& shape);
Var scalar_like(double v, const Var& like);
// `mask` (bool or numeric) as `like`'s dtype.
Var cast_like(const Var& mask, const Var& like);
// Concrete int vector of an input (shape/axes inputs are constants in both modes).
Expected<std::vector<int64_t>> const_ints(const Var& v, const std::string& what);

}  // namespace ms::autodiff
