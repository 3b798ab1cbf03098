// Our f32 3x3 stride-2 convolutions over the nChw16c activations the layout pass keeps between
// convs, on AVX-512 (ResNet's downsampling 3x3 convs, where oneDNN 2.6 runs its direct jit conv):
// the weights packed once per weights buffer into panels of output channels ([M / P16][C / 16][3][3]
// [16][P16]), the products of up to 14 output pixels of a row against a panel of 32 output channels
// (7 pixels against 64 on rows of 7 or fewer) in 28 accumulators over all input channels and taps,
// each pixel's input broadcast from its channel block; the bias, the residual's Add and Relu or Clip
// in the accumulators before the one store, other post-ops over the stored tile. The panels are
// prefetched as they stream (ResNet-50's layer-4 weights come from memory).
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

// Runs the conv; sets the impl "<prefix>modescope:conv3x3s2". The caller checked strided_conv_applies.
Status strided_conv(runtime::KernelContext& ctx, const StridedConvArgs& a, const char* impl_prefix);

}  // namespace ms::cpu::nn
