// Tracing: while a TraceState is active on this thread, functional ops append nodes to its graph
// instead of running. A root trace owns the model graph (initializers live there); child traces
// build the subgraphs of If/Loop and share the root's ids and name space.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/frontend/nn/var.h"
#include "engine/ir/graph.h"

namespace ms::nn {

// Opsets of traced graphs: ai.onnx 17, and our own domain for Print.
inline constexpr int64_t kTraceOpset = 17;
inline constexpr const char* kModescopeDomain = "ai.modescope";

class TraceState {
 public:
  // Root trace of a graph named `name`; `prefix` is the module path the traced call runs under.
  TraceState(std::string name, std::string prefix);
  // Child trace (a subgraph of a node in `parent`).
  explicit TraceState(TraceState* parent);
  TraceState(const TraceState&) = delete;
  TraceState& operator=(const TraceState&) = delete;

  ir::Graph graph;
  TraceState* parent() const { return parent_; }
  TraceState* root() { return root_; }

  // Graph input of this (sub)graph.
  Var add_input(const std::string& name, const ir::ValueType& type);
  // Names a concrete tensor as the root's initializer (parameters by their registered name; the
  // first name given for a tensor is kept).
  void register_parameter(const Tensor& t, const std::string& name);
  // The symbolic handle for a Var used as an op input here: symbolic Vars of this trace or an
  // enclosing one pass through; concrete ones become initializers of the root graph.
  Expected<std::string> input_name(const Var& v);

  // Appends a node (named from the module path) with inferred output types; returns its outputs.
  Vars add_op(const std::string& op_type, const std::string& domain, const Vars& inputs,
              std::map<std::string, ir::Attribute> attrs, int num_outputs);
  // Appends a node whose output names and types are already decided (If/Loop).
  Vars add_node_typed(ir::Node node, const std::vector<ir::ValueType>& out_types);

  // First error of the whole trace (kept at the root): an error anywhere fails the traced call,
  // even when the failing Var is never used (e.g. `if (x)` on a symbolic x).
  void fail(const Status& st);
  const Status& error() const { return root_->error_; }

  // Unique name in the model (values and nodes share one space, subgraphs included).
  std::string unique_name(const std::string& base);
  // Is `t` this trace or an enclosing one?
  bool encloses(const TraceState* t) const;

 private:
  TraceState* parent_ = nullptr;
  TraceState* root_ = this;
  std::string prefix_;
  Status error_;
  std::set<std::string> names_;
  std::unordered_map<const void*, std::string> param_names_;  // data pointer -> initializer
  std::unordered_map<const void*, std::string> consts_;       // captured tensor -> initializer
  int next_const_ = 0;
};

// Makes `outs` the root graph's outputs. A value that is not this trace's own node output (a
// constant, an enclosing value), a graph input, or one already listed goes through an Identity, so
// every output is a distinct value the graph defines. Call with `root` active.
Status add_graph_outputs(TraceState& root, Vars& outs);

// The trace active on this thread (nullptr in PyNative).
TraceState* active_trace();
// Sets the active trace for a scope.
class TraceGuard {
 public:
  explicit TraceGuard(TraceState* t);
  ~TraceGuard();
  TraceGuard(const TraceGuard&) = delete;
  TraceGuard& operator=(const TraceGuard&) = delete;

 private:
  TraceState* saved_;
};

}  // namespace ms::nn
