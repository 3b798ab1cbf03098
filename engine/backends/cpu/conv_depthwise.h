// Our depthwise 2-D convolution for a Graph's blocked activations (nChw8c with AVX2, nChw16c with
// AVX-512: one vector of channels per pixel), with the bias and the activation post-ops applied to
// each output row while it is still in L1. oneDNN 2.6's jit depthwise conv applies SiLU through its
// eltwise injector at ~0.5 ns a value, or (our loop tail) leaves it to a second pass over the result
// in memory; here the row's activations run in our vectorized loop (simd_exp.h) right after the row.
#pragma once

#include <optional>
#include <vector>

#include "engine/backends/cpu/conv_onednn.h"

namespace ms::cpu::nn {

// The geometry of one depthwise conv over blocked channels (channels a multiple of the block).
struct DepthwiseProblem {
  int64_t batch = 1, channels = 0, block = 8;
  int64_t ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0;
};

// The kernel: x [N, C/B, IH, IW, B], weights packed [C/B, KH, KW, B], bias [C] or null, y [N, C/B,
// OH, OW, B]; `post` holds activations only (no Add). OpenMP over the output rows.
void depthwise_blocked(const float* x, const float* w_packed, const float* bias, float* y, const DepthwiseProblem& p,
                       const std::vector<ops::PostOp>& post);

// ONNX depthwise weights [C, 1, KH, KW] packed as the kernel reads them.
std::vector<float> pack_depthwise_weights(const float* w, int64_t channels, int64_t kh, int64_t kw, int64_t block);

// Whether our kernel takes this conv: f32, 2-D, one input and one output channel per group, input
// and output blocked in memory with the channels a multiple of the block, no dilation, activation
// post-ops only (a residual goes to oneDNN), and either among them one that oneDNN's depthwise conv
// computes slowly or not at all (Swish, Sigmoid, Gelu) or an output of 56x56 or more.
// MODESCOPE_DEPTHWISE=onednn leaves every one to oneDNN, =ours takes every one it can.
bool depthwise_applies(const ConvArgs& a);

// Runs it; the weights, when constant (a frozen buffer), are packed at the first call and kept with
// the node's memo, which depthwise_again finds.
Status depthwise_conv(runtime::KernelContext& ctx, const ConvArgs& a);

// The node's call again, from its memo (weights packed, post-ops and geometry parsed); nullopt when
// there is none or it does not match the call.
std::optional<Status> depthwise_again(runtime::KernelContext& ctx, const ConvTensors& t);

}  // namespace ms::cpu::nn
