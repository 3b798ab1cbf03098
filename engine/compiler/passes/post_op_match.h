// An activation node as a fused kernel's post-op, shared by the passes that fold activations into
// fused nodes (fuse-ops, fuse-squeeze-excite).
#pragma once

#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/fused.h"

namespace ms::compiler {

// The post-op an activation node (default domain, one output) stands for, with its alpha/beta from
// the node's attributes (the ONNX defaults where absent; Clip needs constant bounds); false for any
// other node, Add included (fuse_ops.cpp).
bool activation_post_op(const ir::Graph& g, const ir::Node& n, ops::PostOp& p);

// The post-ops as a fused node's post_ops, post_alphas and post_betas (none when empty).
void set_post_op_attrs(const std::vector<ops::PostOp>& post, ir::Node& f);

}  // namespace ms::compiler
