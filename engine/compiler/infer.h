// Static type inference over a whole graph (and its subgraphs), with small constant shape
// computations folded on the CPU so that shape subgraphs (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape) give static shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/runtime/backend.h"

namespace ms::compiler {

// Infers every value's type in `g` (and subgraphs) from the graph inputs' types, folding small
// constant shape computations on `fold_backend` (null: no folding). Fills g's Value types. Errors
// name the node.
Status infer_graph_types(ir::Graph& g, runtime::Backend* fold_backend);

// The sizes a symbolic dim takes in a shape bucket (compiler/buckets.h), by its name.
struct DimRange {
  int64_t lo = 1, hi = 1;
};

// While alive on this thread, infer_graph_types types a graph whose inputs have these symbolic dims
// more precisely than symbolic inference alone: it also infers the graph at the ends and the middle
// of each dim's range (shape computations folded there) and merges. A dim equal at every probe is
// static across the bucket (shape functions are monotone in practice); one that follows a dim as
// a*n+b gets the symbolic name "n" or "n*a+b", so equal dims are known equal (a residual Add of two
// [1,seq,256] values); any other stays unknown. A probe that fails leaves the symbolic types.
class SymbolicRangesScope {
 public:
  explicit SymbolicRangesScope(std::map<std::string, DimRange> ranges);
  ~SymbolicRangesScope();
  SymbolicRangesScope(const SymbolicRangesScope&) = delete;
  SymbolicRangesScope& operator=(const SymbolicRangesScope&) = delete;

 private:
  std::map<std::string, DimRange> ranges_;
  const std::map<std::string, DimRange>* prev_;
};

}  // namespace ms::compiler
