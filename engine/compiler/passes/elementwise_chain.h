// Links of a fused elementwise chain (FusedElementwise, ai.modescope): shared by the chain fusion
// (fuse_elementwise.cpp) and the reduction fusion (fuse_reduce.cpp).
#pragma once

#include <string>
#include <unordered_map>
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

// The static type of an f32 or bf16 value (the dtypes fused loops run on), or null. A chain's value
// has one dtype between Casts (a Cast link between f32 and bf16 changes it); a binary link's operand
// has the chain value's dtype, or is bf16 in an f32 stretch (the loop widens every operand to f32).
const ir::ValueType* static_float(const ir::Graph& g, const std::string& name);

// Which node makes each value (rewrite.h's producer_index).
using Producers = std::unordered_map<std::string, size_t>;

// The bf16 value an f32 value `name` is a Cast of (same shape), or "": a chain reads that instead, as
// widening is exact and the loop widens anyway, so the Cast's f32 copy need not be written (and once
// every reader does so, the Cast is dead). Mixed precision casts each conv's bf16 result to f32 for
// BatchNorm, and each bf16 gradient to f32 for BatchNorm's backward, with several readers each.
std::string widened_from(const ir::Graph& g, const Producers& prod, const std::string& name);

// How a chain can compute the f32 value `name` from a narrower one instead of reading it: from a
// Cast of bf16 (links [Cast]), or from such a Cast combined by Add/Sub/Mul/Div with an f32 operand
// at most an eighth its size (links [Cast, op]: under mixed precision, BatchNorm's centred input
// x - mean, read by the variance, the normalization and three gradient loops). `source` is "" when
// it cannot. The loop then reads bf16 where it would read f32, and once no reader reads the value
// itself, it is never written.
struct Recompute {
  std::string source;
  std::vector<Link> links;
};
Recompute recompute_of(const ir::Graph& g, const Producers& prod, const std::string& name);

// The link `n` makes when the chain value `cur` (of shape `dims`) flows into it; false if it cannot.
// With `prod`, a binary operand that is a widening Cast's result is read as the Cast's input.
bool as_link(const ir::Graph& g, const ir::Node& n, const std::string& cur, const std::vector<int64_t>& dims, Link& l,
             const Producers* prod = nullptr);

// The link a QDQ model's fake-quantization makes (QuantizeDequantizeU8 / S8: scale in alpha, zero
// point in beta) when the f32 chain value `cur` (of shape `dims`) flows into QuantizeLinear `q`
// whose only reader is DequantizeLinear `dq`: one constant f32 scale and one constant 8-bit zero
// point (or none: uint8 0), the same on both, and dq's f32 result of `cur`'s shape. False otherwise.
bool qdq_link(const ir::Graph& g, const ir::Node& q, const ir::Node& dq, const std::string& cur,
              const std::vector<int64_t>& dims, Link& l);

// The FusedElementwise node running `links` over `x` into `out`, standing for `nodes` (origins);
// not yet in the graph.
ir::Node chain_node(ir::Graph& g, const std::string& x, const std::vector<Link>& links,
                    const std::vector<const ir::Node*>& nodes, const std::string& out);

}  // namespace ms::compiler
