// Per-node facts for traces: name, op, origins, shapes and cost-model figures, from a typed graph.
#pragma once

#include <vector>

#include "engine/ir/graph.h"
#include "profiler/trace/trace.h"

namespace ms::prof {

// Every node of `g` and of its subgraphs (If/Loop bodies), in graph order.
std::vector<NodeInfo> collect_node_info(const ir::Graph& g);
NodeInfo node_info(const ir::Graph& g, const ir::Node& n);

}  // namespace ms::prof
