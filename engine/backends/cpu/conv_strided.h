// Our f32 direct 3x3 convolutions over the nChw16c activations the layout pass keeps between convs,
// on AVX-512, for two cases where oneDNN 2.6 is slower: stride 2 (ResNet's downsampling convs, its
// direct jit conv otherwise) and stride 1 on planes of rows of 7 or fewer (ResNet-50's layer 4, a
// Winograd conv otherwise, whose transformed weights are 1.8x the direct conv's to stream). The
// weights are packed once per weights buffer into panels of output channels ([M / pw][C / 16][3][3]
// [16][pw]); a tile is up to 14 output pixels of a row against a panel of 32 channels, or two whole
// rows of up to 7 against 32 (7 against 64 where unpadded), in 28 accumulators over all input
// channels and taps, each pixel's input broadcast from its channel block; the bias, the residual's
// Add and Relu or Clip in the accumulators before the one store, other post-ops over the stored
// tile. The panels are prefetched as they stream (ResNet-50's layer-4 weights come from memory).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ops/fused.h"

namespace ms::runtime {
class KernelContext;
}

namespace ms::cpu::nn {

struct ConvArgs;  // conv_onednn.h

struct StridedConvArgs {
  const Tensor& x;         // [N, C, H, W], nChw16c in memory, f32
  const Tensor& w;         // [M, C, 3, 3] f32, a frozen constant (a compiled graph's weights)
  const Tensor* b;         // [M] f32, or null
  const Tensor* residual;  // [N, M, OH, OW] nChw16c f32, summed at the post-ops' Add; or null
  Tensor& y;               // [N, M, OH, OW] nChw16c f32
  int64_t pad_top = 1, pad_left = 1;
  const std::vector<ops::PostOp>* post = nullptr;  // after the bias, in order; may be null
};

// Whether strided_conv takes the case: stride 2 (the caller's to check) with the shapes above, C and
// M multiples of 16, pads of 0 or 1 whose output never reads past the input's right or bottom edge
// (OH = (H + pad_top - 3) / 2 + 1 with 2 OH + 1 - pad_top <= H, likewise across), the weights frozen,
// a CPU with AVX-512 and a build with the vector dispatch.
bool strided_conv_applies(const StridedConvArgs& a);

// Whether strided_conv takes the case at stride 1: pads of 1 and an output as large as the input,
// of rows of 2 to 7 pixels, otherwise as strided_conv_applies.
bool small_plane_conv_applies(const StridedConvArgs& a);

// Runs the conv at `stride` (2, or 1); sets the impl "<prefix>modescope:conv3x3s2" or
// "<prefix>modescope:conv3x3". The caller checked strided_conv_applies or small_plane_conv_applies.
Status strided_conv(runtime::KernelContext& ctx, const StridedConvArgs& a, const char* impl_prefix, int stride = 2);

// The FusedConv kernel's call: our conv for a 3x3 one at stride 2, or at stride 1 on rows of 7 or
// fewer, of at least 128 input channels whose activations the layout pass keeps in 16-channel blocks
// (its input, output and residual), where strided_conv_applies (small_plane_conv_applies); nullopt
// otherwise (oneDNN's conv, or our Winograd, runs).
std::optional<Status> direct_conv3x3(runtime::KernelContext& ctx, const ConvArgs& a);

}  // namespace ms::cpu::nn
