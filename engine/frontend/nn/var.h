// Var: the tensor handle of the builder API. It is one of
//   - a concrete Tensor (PyNative: every op has already run),
//   - a symbolic value of a graph being traced (Graph mode / jit: the op was appended to the trace),
//   - an error (the first failure of the ops it came from; errors are values, they propagate).
// Copies share state, so ops::print can re-route a traced value through its Print node.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"

namespace ms::nn {

class TraceState;

struct VarImpl {
  Tensor value;                 // concrete (PyNative, or a tensor captured while tracing)
  std::string sym;              // symbolic: value name in the trace's graph
  ir::ValueType type;           // symbolic: static type
  TraceState* trace = nullptr;  // symbolic: the (sub)graph it was defined in
  Status error;                 // failed
  std::string path;             // module path that produced it (for messages)
};

class Var {
 public:
  Var() = default;
  Var(Tensor t);  // NOLINT: a concrete tensor is a Var
  static Var symbolic(TraceState* trace, std::string name, ir::ValueType type, std::string path);
  static Var failed(Status st);

  bool defined() const { return impl_ != nullptr; }
  bool ok() const { return impl_ && impl_->error.is_ok(); }
  // Ok for a good Var; the first error for a failed one; "undefined" for an empty handle.
  Status status() const;
  bool is_symbolic() const { return impl_ && impl_->error.is_ok() && impl_->trace != nullptr; }
  bool is_concrete() const { return impl_ && impl_->error.is_ok() && !impl_->trace && impl_->value.defined(); }

  DType dtype() const;
  // Dims; symbolic dims unknown at trace time are -1 (traces are per static signature, so rare).
  Shape shape() const;
  int64_t rank() const { return static_cast<int64_t>(shape().size()); }
  int64_t dim(int64_t i) const;

  // The concrete tensor (PyNative). A symbolic Var has none: the returned Expected says so and
  // points at ops::print / cond.
  Expected<Tensor> tensor() const;
  // First element as a number. On a symbolic Var this is Python-style control flow on a traced
  // value: the trace fails with an error naming the module path and pointing at cond().
  Expected<double> item() const;
  // `if (x)` / `if (x.sum() > 0)`: concrete -> item() != 0; symbolic -> records the same error in
  // the trace (so the jit call fails) and returns false.
  explicit operator bool() const;

  // Name of the symbolic value ("" otherwise) and the module path that produced the Var.
  const std::string& name() const;
  const std::string& path() const;
  // "Tensor(f32[2,3], [...])" or "SymbolicTensor(f32[2,3], name='fc1', ...)"; a symbolic one warns
  // once per process that plain printing does not run in the compiled graph.
  std::string to_string() const;

  VarImpl* impl() const { return impl_.get(); }

 private:
  std::shared_ptr<VarImpl> impl_;
};

using Vars = std::vector<Var>;

std::ostream& operator<<(std::ostream& os, const Var& v);

// First error among `vs`, or ok.
Status first_error(const Vars& vs);

}  // namespace ms::nn
