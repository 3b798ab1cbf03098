// An inverted-residual block (MobileNetV2/V3, EfficientNet) as one kernel over blocked activations:
//   e = act1(Conv1x1(x, W1) + b1)        expand (optional)
//   d = act2(DepthwiseConv(e, Wd) + bd)  depthwise
//   y = post3(Conv1x1(d, W3) + b3 [+ r]) project (optional; its post-ops may add the residual r)
// computed a band of rows at a time: the expanded rows live in a ring of rows and the depthwise
// rows in a band buffer, both sized for L2, so the block's wide (6x) tensors never go to memory.
// With oneDNN each conv wrote its result to the arena and the next read it back: MobileNetV2's
// 96x112x112 expansion alone is 4.8 MB written and read again.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ops/fused.h"
#include "engine/runtime/kernel.h"

namespace ms::cpu::nn {

// The geometry of one block over blocked channels (nChw8c or nChw16c). cin: x's channels (a
// multiple of the block or padded with zeros to one), cexp: the depthwise conv's channels (a
// multiple of the block), cout: y's channels (padded likewise; the padding written as zeros).
struct InvertedResidualProblem {
  int64_t batch = 1, block = 8;
  int64_t cin = 0, cexp = 0, cout = 0;
  int64_t ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0;
  bool expand = true, project = true;
  // The 1x1 convs' products in bf16 (x, the depthwise result and W1/W3 rounded to bf16, f32 sums):
  // 16-lane blocks on a CPU with AVX-512-BF16 (cpu_has_avx512_bf16), f32 elsewhere.
  bool bf16 = false;
};

// Whether this CPU has AVX-512-BF16 (vdpbf16ps) and runs 16-lane kernels (simd_width()).
bool cpu_has_avx512_bf16();

// Weights as the kernel reads them (pack_inverted_residual): w1 [cexp/B][cin][B], b1 [cexp],
// wd [cexp/B][kh][kw][B], bd [cexp], w3 [ceil(cout/B)][cexp][B] (zeros past cout), b3
// [ceil(cout/B)*B]. Absent stages' are empty.
struct InvertedResidualWeights {
  std::vector<float> w1, b1, wd, bd, w3, b3;
  std::vector<uint16_t> w1h, w3h;  // with bf16: W1 and W3 in bf16, [ob][in rounded up to even][B], pairs adjacent
};

// From ONNX weights: w1 [cexp, cin, 1, 1], wd [cexp, 1, kh, kw], w3 [cout, cexp, 1, 1]; a null bias
// is zeros; a null w1 or w3 leaves that stage out.
InvertedResidualWeights pack_inverted_residual(const InvertedResidualProblem& p, const float* w1, const float* b1,
                                               const float* wd, const float* bd, const float* w3, const float* b3);

// x [N, ceil(cin/B), IH, IW, B] -> y [N, ceil(cout/B), OH, OW, B]; r (y's layout) or null. post1
// and post2 hold activations only; post3 may hold the residual's Add. OpenMP: bands of rows per
// thread on large planes, the expanded channels split between threads on small ones.
void inverted_residual_blocked(const float* x, const InvertedResidualWeights& w, const float* r, float* y,
                               const InvertedResidualProblem& p, const std::vector<ops::PostOp>& post1,
                               const std::vector<ops::PostOp>& post2, const std::vector<ops::PostOp>& post3);

// The FusedInvertedResidual kernel (the fuse-inverted-residual pass's node): inputs x, W1, B1, Wd,
// Bd, W3, B3, R (W1/B1 and W3/B3 empty where the block has no such stage, B* optional, R with the
// projection's Add), x and y blocked by layout_block; the depthwise geometry in strides and pads
// and each stage's post-ops under expand_ / dw_ / project_ prefixed post_ops attributes;
// products="bf16" (a bf16 graph's) asks for the bf16 products where the CPU has AVX-512-BF16 without AMX (with
// AMX, vdpbf16ps ran no faster than the f32 FMAs).
void register_inverted_residual_kernel(runtime::KernelRegistry& r);

}  // namespace ms::cpu::nn
