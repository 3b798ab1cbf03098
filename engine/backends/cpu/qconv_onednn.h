// QLinearConv through oneDNN's int8 convolution (VNNI where the CPU has it): u8 or s8 activations,
// s8 weights quantized per tensor or per output channel with zero points of 0, an s32 bias. The
// requantization (sx * sw[m] / sy, rounded to nearest even, then + zy and saturated) is the
// primitive's output scales and destination zero point; the input zero point its source zero point.
#pragma once

#include "engine/runtime/kernel.h"

namespace ms::cpu {

// Runs QLinearConv (inputs x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point[, B]) into its preallocated output. Unsupported where the case is outside what the
// int8 primitive takes (other spatial ranks, weights zero points that are not 0, non-scalar
// activation scales, no implementation on this CPU): the caller runs its reference loops then.
Status qlinear_conv_onednn(runtime::KernelContext& ctx);

}  // namespace ms::cpu
