// Graph diff between two snapshots, joined by NodeId (the spine of the pass stepper):
//   added     ids only in `after` (new nodes that stand for nothing removed)
//   removed   ids only in `before` (and not covered by a fused node)
//   rewritten same id in both, op/attrs/inputs/outputs changed
//   fused     new node whose origins cover removed nodes: the node and the removed ids it covers
// Nodes of subgraphs (If branches, Loop bodies) take part like any other: a node whose subgraph
// changed is not rewritten for that alone.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::compiler {

struct FusedFrom {
  ir::NodeId node;               // the new node in `after`
  std::vector<ir::NodeId> from;  // ids of `before` it replaces (by origins)
};

struct GraphDiff {
  std::vector<ir::NodeId> added;
  std::vector<ir::NodeId> removed;
  std::vector<ir::NodeId> rewritten;
  std::vector<FusedFrom> fused;
  bool empty() const { return added.empty() && removed.empty() && rewritten.empty() && fused.empty(); }
};

GraphDiff diff_graphs(const ir::Graph& before, const ir::Graph& after);

// {"added":[ids],"removed":[...],"rewritten":[...],"fused":[{"node":id,"from":[ids]}]}
std::string diff_to_json(const GraphDiff& d);

}  // namespace ms::compiler
