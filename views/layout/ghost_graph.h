// The pass stepper's "after" graph with the nodes the pass removed put back as ghosts, so that one
// Graphviz layout places each ghost where it stood (between the live nodes it read from). Qt-free.
#pragma once

#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::views {

struct GhostGraph {
  std::shared_ptr<const ir::Graph> graph;  // `after` plus the ghosts (appended, in `before`'s order)
  std::unordered_set<uint64_t> ghosts;     // NodeId values of the ghost nodes in `graph`
  // Ghost -> live node that read one of its outputs before the pass (for GraphModel::build's
  // links: the ghost is laid out between the nodes it sat between).
  std::vector<std::pair<ir::NodeId, ir::NodeId>> links;
};

// A copy of `after` with the nodes `removed` (ids of `before` that `after` lacks) added back. A
// ghost keeps its inputs, so it hangs off the live producers it read from and off other ghosts; an
// output name that `after` still produces (a fused node took it over) gets the suffix " (removed)"
// so live edges stay live. Input values `after` dropped (folded weights) are copied from `before`.
GhostGraph ghost_graph(const ir::Graph& before, const ir::Graph& after, const std::vector<ir::NodeId>& removed);

}  // namespace ms::views
