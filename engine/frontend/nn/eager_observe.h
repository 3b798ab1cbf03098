// Observing eager ops (a PyNative training step, profiled): while an EagerObserveScope is alive on
// this thread, every eager op reports to the observer the way an interpreter step does (op, kernel
// with its implementation, the allocations of its outputs), under a node id of its own. A copy of
// each node, with its input and output types, is appended to a record graph: the profiler takes
// op names, types and shapes from it as it does from the graph an executor ran.
#pragma once

#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/observer.h"

namespace ms::nn {

class EagerObserveScope {
 public:
  EagerObserveScope(runtime::RunObserver& observer, ir::Graph& record);
  ~EagerObserveScope();
  EagerObserveScope(const EagerObserveScope&) = delete;
  EagerObserveScope& operator=(const EagerObserveScope&) = delete;

  runtime::RunObserver& observer() const { return observer_; }
  // Gives `node` an id and value names unique in the record graph, and appends it with the types.
  void record(ir::Node& node, const std::vector<ir::ValueType>& inputs, const std::vector<ir::ValueType>& outputs);

 private:
  runtime::RunObserver& observer_;
  ir::Graph& graph_;
  EagerObserveScope* previous_;
};

// The innermost scope of this thread (null when eager ops are not observed).
EagerObserveScope* eager_observer();

}  // namespace ms::nn
