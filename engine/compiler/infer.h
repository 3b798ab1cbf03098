// Static type inference over a whole graph (and its subgraphs), with small constant shape
// computations folded on the CPU so that shape subgraphs (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape) give static shapes.
#pragma once

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/runtime/backend.h"

namespace ms::compiler {

// Infers every value's type in `g` (and subgraphs) from the graph inputs' types, folding small
// constant shape computations on `fold_backend` (null: no folding). Fills g's Value types. Errors
// name the node.
Status infer_graph_types(ir::Graph& g, runtime::Backend* fold_backend);

}  // namespace ms::compiler
