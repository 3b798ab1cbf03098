// Winograd 3x3 convolutions of our own, for CPUs where oneDNN 2.6 has none (it ships Winograd only
// for AVX-512): F(4x4,3x3) (4x fewer multiplications than the direct conv) where the output's sides
// are multiples of 4, F(2x2,3x3) (2.25x) elsewhere, over the blocked nChw8c/nChw16c activations the
// layout pass keeps between convs. Three steps, each OpenMP-parallel:
//   1. the input's 6x6 (4x4) patches, one vector of `block` channels at a time, through B^T d B into
//      V[xi][tile][C], zeros where a patch reaches past the input (padding, partial tiles);
//   2. one product per transform point xi, V_xi [tiles, C] x U_xi [C, M], through oneDNN's packed
//      sgemm, the weights transformed (G g G^T) and packed once per weights buffer;
//   3. A^T m A back to the output's tiles, the bias added, and the post-ops (activations, the
//      residual's Add) run over each finished strip of rows while it is in cache.
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
  const Tensor& w;         // [M, C, 3, 3], f32, a frozen constant (a compiled graph's weights)
  const Tensor* b;         // [M] f32, or null
  const Tensor* residual;  // [N, M, OH, OW] nChw<block>c, summed at the post-ops' Add; or null
  Tensor& y;               // [N, M, OH, OW] nChw<block>c
  int64_t pad_top = 0, pad_left = 0;
  int64_t block = 8;                               // 8 or 16 channels a vector
  const std::vector<ops::PostOp>* post = nullptr;  // after the bias, in order; may be null
};

// The output tile side taken for an OH x OW output: 4 where both are multiples of 4, else 2.
int winograd_tile(int64_t oh, int64_t ow);

// Scratch the transforms need (V and the products, f32).
size_t winograd_scratch_bytes(const WinogradConvArgs& a);

// Whether winograd_conv takes the case: f32 tensors of the shapes above with C and M multiples of
// the block, a 3x3 kernel, pads of at most 2, the CPU's vectors at least `block` wide, the packed
// sgemm built in and the weights frozen. Stride 1, no dilation and group 1 are the caller's to check.
bool winograd_conv_applies(const WinogradConvArgs& a);

// Runs the conv (see the file's comment); sets the impl "<prefix>modescope:wino_4x3" or "_2x3".
// The caller checked winograd_conv_applies and the scratch budget.
Status winograd_conv(runtime::KernelContext& ctx, const WinogradConvArgs& a, const char* impl_prefix);

}  // namespace ms::cpu::nn
