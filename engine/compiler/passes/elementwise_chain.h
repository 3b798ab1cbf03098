// Links of a fused elementwise chain (FusedElementwise, ai.modescope): shared by the chain fusion
// (fuse_elementwise.cpp) and the reduction fusion (fuse_reduce.cpp).
#pragma once

#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::compiler {

// One op of a chain: unary (the chain value in) or binary (the chain value on `side`, the other
// operand broadcast into the chain's shape).
struct Link {
  std::string op;  // an ONNX elementwise op, or Square (Mul of the chain value by itself)
  int arity = 1, side = 0;
  float alpha = 0, beta = 0;
  std::string operand;
};

// The static type of an f32 or bf16 value (the dtypes fused loops run on), or null. A chain has one
// dtype: its input, operands and every link's result.
const ir::ValueType* static_float(const ir::Graph& g, const std::string& name);

// The link `n` makes when the chain value `cur` (of shape `dims`) flows into it; false if it cannot.
bool as_link(const ir::Graph& g, const ir::Node& n, const std::string& cur, const std::vector<int64_t>& dims, Link& l);

// The FusedElementwise node running `links` over `x` into `out`, standing for `nodes` (origins);
// not yet in the graph.
ir::Node chain_node(ir::Graph& g, const std::string& x, const std::vector<Link>& links,
                    const std::vector<const ir::Node*>& nodes, const std::string& out);

}  // namespace ms::compiler
