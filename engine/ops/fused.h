// Fused ops of the graph compiler, in the custom domain "ai.modescope" (made only by compiler passes):
//   FusedConv(X, W, B?, R?)     Conv, then post_ops
//   FusedGemm(A, B, C?, R?)     Gemm, then post_ops
//   FusedMatMul(A, B, bias?, R?) MatMul (+ bias over the last axis), then post_ops
//   FusedElementwise(X, ...)    a chain of elementwise ops in one loop (see `chain`)
//   FusedPool(X)                the pooling op named by `pool` (MaxPool, GlobalAveragePool,
//                               GlobalMaxPool; that op's attributes) over a value the layout pass
//                               keeps blocked (src_blocked / dst_blocked: nChw8c or nChw16c), so
//                               a conv region does not end at a pooling op
// post_ops (strings) lists what follows the anchor op, in order: an activation (Relu, LeakyRelu,
// Sigmoid, Tanh, Clip, Elu; alpha/beta in post_alphas/post_betas) or "Add" (the residual input R,
// same shape as the output). Kernels use oneDNN post-ops where they can, one fused loop elsewhere.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/elementwise_math.h"

namespace ms::ops {

inline constexpr const char* kFusedDomain = "ai.modescope";

struct PostOp {
  // Gelu: alpha 0 (erf) or 1 (tanh approximation), as the op table's `a`; HardSigmoid: alpha, beta;
  // Swish: alpha.
  enum class Kind : uint8_t { Relu, LeakyRelu, Sigmoid, Tanh, Clip, Elu, Gelu, HardSigmoid, HardSwish, Swish, Add };
  Kind kind = Kind::Relu;
  float alpha = 0, beta = 0;
};

// A conv (not grouped) of less than 5 MFLOPs: oneDNN's gemm-based conv over plain nchw beats its
// direct conv on blocked channels there, reorders included (measurements in
// compiler/passes/conv_layout.cpp). `w` is the weight's shape [M, C/g, k...].
inline bool small_dense_conv(int64_t group, const std::vector<int64_t>& w, int64_t output_numel) {
  if (group != 1 || w.size() < 3) return false;
  double per_output = 2.0;  // multiply-adds per output element: C x kernel
  for (size_t i = 1; i < w.size(); ++i) per_output *= static_cast<double>(w[i]);
  return per_output * static_cast<double>(output_numel) < 5e6;
}

// Activation op types a post-op can stand for (with their ONNX default alpha/beta): the op table's
// names (ops/elementwise_math.h).
bool post_op_kind(const std::string& op_type, PostOp::Kind& kind);
const char* post_op_name(PostOp::Kind k);

// The table op an activation post-op computes (Add: none, Relu returned).
constexpr ew::Op post_op_math(PostOp::Kind k) {
  switch (k) {
    case PostOp::Kind::LeakyRelu: return ew::Op::LeakyRelu;
    case PostOp::Kind::Sigmoid: return ew::Op::Sigmoid;
    case PostOp::Kind::Tanh: return ew::Op::Tanh;
    case PostOp::Kind::Clip: return ew::Op::Clip;
    case PostOp::Kind::Elu: return ew::Op::Elu;
    case PostOp::Kind::Gelu: return ew::Op::Gelu;
    case PostOp::Kind::HardSigmoid: return ew::Op::HardSigmoid;
    case PostOp::Kind::HardSwish: return ew::Op::HardSwish;
    case PostOp::Kind::Swish: return ew::Op::Swish;
    default: return ew::Op::Relu;
  }
}

// Parses post_ops/post_alphas/post_betas; an error names the node.
Expected<std::vector<PostOp>> parse_post_ops(const ir::Node& n);

inline float apply_activation(const PostOp& p, float x) {
  return p.kind == PostOp::Kind::Add ? x : ew::apply_unary(post_op_math(p.kind), x, p.alpha, p.beta);
}

}  // namespace ms::ops
