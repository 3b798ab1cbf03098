// The attributes of a table elementwise op (ops/elementwise_math.h) read from a node, once, for the
// eager kernels, the fusion passes and the CUDA ops.
#pragma once

#include "engine/ir/graph.h"
#include "engine/ops/elementwise_math.h"

namespace ms::ops {

struct ElementwiseParams {
  float a = 0, b = 0;
};

// `a` and `b` of ew::apply_unary for `op` from the node's attributes (the table's ONNX defaults where
// absent). Gelu's approximate="tanh" is a = 1. Clip's bounds are only its attributes (opset < 11):
// from opset 11 on they are inputs, which the caller reads.
ElementwiseParams elementwise_params(const ir::Node& n, ew::Op op);

}  // namespace ms::ops
