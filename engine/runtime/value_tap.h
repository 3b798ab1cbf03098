// Values handed out as a run produces them: what numerics work reads (the inspector's captures, the
// node-by-node diff of the two modes, the NaN/inf trap). Both executors call the tap after every
// top-level step (subgraph steps are not tapped) with the step's node, its inputs and its outputs,
// while they still hold the step's results: in Graph mode before the arena hands their blocks to
// later values, so a tap copies what it keeps. Steps of concurrent branches call from their own
// threads; a tap serializes itself. An error a tap returns stops the run with that error. A Graph
// run with a tap launches step by step (no whole-graph replay).
#pragma once

#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/runtime/observer.h"

namespace ms::runtime {

class Backend;

struct TappedStep {
  const ir::Node* node = nullptr;
  std::vector<const Tensor*> inputs;   // by the node's inputs; nullptr for an absent optional input
  std::vector<const Tensor*> outputs;  // by the node's outputs; nullptr for an output nobody reads
  Backend* backend = nullptr;          // the tensors live on its device (copy to the host through it)
  ExecMode mode = ExecMode::PyNative;
};

class ValueTap {
 public:
  virtual ~ValueTap() = default;
  virtual Status on_step(const TappedStep& step) = 0;
};

}  // namespace ms::runtime
