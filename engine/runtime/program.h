// A graph prepared for interpretation: values numbered into slots, each node a Step with its input
// and output slots and the slots whose last use it is. Shared by both executors and by subgraphs.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/schema.h"
#include "engine/runtime/backend.h"

namespace ms::runtime {

struct Step {
  const ir::Node* node = nullptr;
  const ops::OpSchema* schema = nullptr;
  KernelFn kernel = nullptr;  // resolved by the graph executor; eager looks it up per dispatch
  int64_t opset = 0;
  bool view_op = false;       // may return a view of its input (Reshape, Squeeze, ...)
  std::vector<int> inputs;    // slot per input, -1 for a left-out optional input
  std::vector<int> outputs;   // slot per output, -1 for a left-out optional output
  std::vector<int> implicit;  // slots read by the node's subgraphs (outer-scope names)
  std::vector<int> release;   // slots whose last use is this step
};

struct Program {
  const ir::Graph* graph = nullptr;
  std::vector<std::string> slot_names;
  std::unordered_map<std::string, int> slot_of;
  std::vector<int> input_slots;     // graph inputs in order
  std::vector<int> output_slots;    // graph outputs in order
  std::vector<int> constant_slots;  // initializers (values filled from the graph)
  std::vector<int> outer_slots;     // names defined in an enclosing graph
  std::vector<int> producer_step;   // step defining each slot, -1 for inputs/constants/outer
  std::vector<int> last_use;        // last step reading each slot; steps.size() for graph outputs
  std::vector<Step> steps;
};

// Names a node's subgraphs read from enclosing scopes (recursively), sorted.
std::vector<std::string> implicit_inputs(const ir::Node& node);
// Op types whose kernels may alias their input.
bool is_view_op(const std::string& op_type);

Expected<Program> build_program(const ir::Graph& g);

// Sets every subgraph's parent pointer to its enclosing graph (after copies).
void link_subgraph_parents(ir::Graph& g);

}  // namespace ms::runtime
