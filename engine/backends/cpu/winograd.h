// Winograd 3x3 convolutions of our own, for CPUs where oneDNN 2.6 has none (it ships Winograd only
// for AVX-512) and, on AVX-512, for the cases where ours is the faster (winograd_preferred_over_onednn):
// F(4x4,3x3) (4x fewer multiplications than the direct conv) where the output's sides
// are multiples of 4, F(2x2,3x3) (2.25x) elsewhere, over the blocked nChw8c/nChw16c activations the
// layout pass keeps between convs. Three steps, each OpenMP-parallel:
//   1. the input's 6x6 (4x4) patches, one vector of `block` channels at a time, through B^T d B into
//      V[xi][tile][C], zeros where a patch reaches past the input (padding, partial tiles);
//   2. one product per transform point xi, V_xi [tiles, C] x U_xi [C, M], through oneDNN's packed
//      sgemm, or on AVX-512 (f32, 16-channel blocks) our own kernel: up to 14 tiles at a time against
//      a panel of 32 output channels in registers over all of C (16 tiles against 16 channels where
//      the output has no more), the panels prefetched as they stream; the weights transformed
//      (G g G^T) and packed once per weights buffer;
//   3. A^T m A back to the output's tiles, the bias added, and the post-ops (activations, the
//      residual's Add) run over each finished strip of rows while it is in cache.
// Where U fits the cache (F(4x4,3x3), f32, 16-channel blocks, AVX-512; at most 2.5 MiB), the three
// steps run fused instead: a work item is a run of at most 14 tiles taken through all three by one
// thread, V and the products in that thread's scratch, never leaving its L2.
// In a bf16 graph (x, w, y bf16, on AVX-512-BF16 without AMX, planes of 14x14 or more) it is
// F(2x2,3x3) always: V and U rounded to bf16, the products by oneDNN's packed bf16 gemm into f32 sums,
// the output transform, bias and post-ops in f32, the result rounded once. F(4x4,3x3)'s transforms
// scale V and U by up to 25x and its bf16 rounding errors with them: 20x the direct bf16 conv's error
// against 2x for F(2x2,3x3) (relative to the output's largest value, ReLU activations, 64 and 256
// channels: 5.5e-2 and 4.3e-3 against 2.5e-3).
// The conv-algorithm pass marks the convs (3x3, stride 1, >= 64 channels each way, planes >= 7x7);
// the FusedConv kernel takes this where oneDNN has no Winograd for the case and the transforms'
// scratch fits the step's room. ResNet-50's 64-channel 56x56 conv at one thread on AVX2: measured
// figures in engine/backends/cpu/winograd.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ops/fused.h"

namespace ms::runtime {
class KernelContext;
}

namespace ms::cpu::nn {

struct WinogradConvArgs {
  const Tensor& x;         // [N, C, H, W], nChw<block>c in memory
  const Tensor& w;         // [M, C, 3, 3], x's type, a frozen constant (a compiled graph's weights)
  const Tensor* b;         // [M] f32 (or bf16 with bf16 x), or null
  const Tensor* residual;  // [N, M, OH, OW] nChw<block>c, y's type, summed at the post-ops' Add; or null
  Tensor& y;               // [N, M, OH, OW] nChw<block>c, x's type
  int64_t pad_top = 0, pad_left = 0;
  int64_t block = 8;                               // 8 or 16 channels a vector
  const std::vector<ops::PostOp>* post = nullptr;  // after the bias, in order; may be null
};

// The output tile side taken for an OH x OW output: 4 where both are multiples of 4, else 2; 2 in
// bf16.
int winograd_tile(int64_t oh, int64_t ow, bool bf16 = false);

// Scratch the transforms need (V in x's type and the products in f32).
size_t winograd_scratch_bytes(const WinogradConvArgs& a);

// Whether winograd_conv takes the case: f32 tensors of the shapes above with C and M multiples of
// the block, a 3x3 kernel, pads of at most 2, the CPU's vectors at least `block` wide, the packed
// sgemm built in and the weights frozen; or bf16 ones (above) with 16-channel blocks where
// `bf16_products` (the CPU has AVX-512-BF16 and no bf16 matrix units, which run oneDNN's direct bf16
// convs faster). Stride 1, no dilation and group 1 are the caller's to check.
bool winograd_conv_applies(const WinogradConvArgs& a, bool bf16_products = false);

// oneDNN's Winograd (AVX-512) takes F(4x4,3x3) only on output planes from this side up, its
// F(2x2,3x3) being faster than its F(4x4,3x3) below (conv_onednn.cpp's winograd_primitive).
inline constexpr int64_t kOneDnnLargeTilesMinSide = 32;

// Whether ours runs the case faster than oneDNN's Winograd where oneDNN has one (f32 on AVX-512,
// 16-channel blocks; step 2 then runs our own kernel, products_avx512): outputs of at most 16 tiles,
// whose transformed weights stream from memory once per run and serve few tiles (ResNet-50's
// 512-channel 7x7 convs, two threads, in the model: 1.05 -> 0.93-0.98 ms), and planes below
// kOneDnnLargeTilesMinSide of whole 4x4 tiles, where ours takes F(4x4,3x3) and oneDNN F(2x2,3x3)
// (its 128-channel 28x28 ones: 0.45-0.49 -> 0.41-0.42 ms, fused 0.33), and wherever the fused steps
// apply (its 64-channel 56x56 ones: 0.40-0.42 -> 0.30-0.34 ms). Elsewhere oneDNN's is faster (ours in three
// steps, with our products: 56x56 64 channels 0.40 -> 0.50 ms, 14x14 256 channels 0.39 -> 0.44).
bool winograd_preferred_over_onednn(const WinogradConvArgs& a);

// Runs the conv (see the file's comment); sets the impl "<prefix>modescope:wino_4x3", "_4x3_rows"
// (fused) or "_2x3".
// The caller checked winograd_conv_applies and the scratch budget.
Status winograd_conv(runtime::KernelContext& ctx, const WinogradConvArgs& a, const char* impl_prefix);

}  // namespace ms::cpu::nn
