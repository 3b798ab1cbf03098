// Shared by the fused kernels (fused_*.cpp): the post-op tail as one loop, and running a plain
// anchor kernel (Conv, Gemm, MatMul) for the same node.
#pragma once

#include <string>
#include <vector>

#include <dnnl.hpp>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/ops/fused.h"
#include "engine/runtime/kernel.h"

namespace ms::cpu::fused {

// y[i] = tail(y[i] + bias[i % bias_n]) with the residual r (may be null) added at the Add post-op.
// One pass over memory, OpenMP-parallel for large outputs; bias may be null.
void apply_tail(float* y, int64_t n, const float* bias, int64_t bias_n, const float* residual,
                const std::vector<ops::PostOp>& post);

// The post-ops as oneDNN post-ops: activations become eltwise post-ops; Add becomes a sum over dst
// (the residual placed there first) when sum_residual, and is left to the caller otherwise.
dnnl::post_ops onednn_post_ops(const std::vector<ops::PostOp>& post, bool sum_residual);

// The post-ops as a primitive-cache key fragment ("|kind:alpha:beta" each).
std::string post_ops_key(const std::vector<ops::PostOp>& post);

// A plain Gemm or MatMul (no post-ops) through the fused kernels' one-primitive path, its weights
// reordered once into the primitive's layout: a bf16 Graph's constant weights. Unsupported when the
// case is not one it takes.
Status prepacked_product(runtime::KernelContext& ctx, bool gemm);

// Runs the registered kernel of `op_type` on this node's first `n_inputs` inputs into output 0.
// `b`, where given, stands in for input 1 (a transB product's weights, transposed).
Status run_anchor(runtime::KernelContext& ctx, const char* op_type, size_t n_inputs, const Tensor* b = nullptr);

}  // namespace ms::cpu::fused
