// Private to the CPU quantization kernels (backends/cpu/quant*.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/ops/nn_geometry.h"
#include "engine/runtime/kernel.h"

namespace ms::cpu::quant {

// quant_fast.cpp: QuantizeLinear / DequantizeLinear of f32 <-> u8/i8 with one scale and zero point
// for the whole tensor (a QDQ model's every activation), vectorized. False: not that case, run the
// general loops.
Expected<bool> quantize_linear_fast(runtime::KernelContext& ctx);
Expected<bool> dequantize_linear_fast(runtime::KernelContext& ctx);
// The fused QDQ Add (ops/quant_int.cpp's FusedQLinearAdd): 8-bit in, 8-bit out, float32 steps.
Status fused_qlinear_add(runtime::KernelContext& ctx);

// quant.cpp: DynamicQuantizeLinear's arithmetic (float32, as the reference): y = saturate(rint(x /
// scale) + zero_point) with scale = (max(x, 0) - min(x, 0)) / 255.
struct DynamicQuant {
  float scale;
  uint8_t zero_point;
};
DynamicQuant dynamic_quantize_u8(const float* x, int64_t n, uint8_t* y);

// quant_int.cpp: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv, and the fused
// FusedQLinearMatMul and FusedDynamicQuantMatMul.
void register_quant_int_kernels(runtime::KernelRegistry& r);

// Values of a small parameter tensor (scale or zero point) as double / int32.
std::vector<double> load_reals(const Tensor& t);
std::vector<int32_t> load_ints(const Tensor& t);

// Round half to even, then numpy's astype(int32) (NaN and out-of-range give INT32_MIN).
int32_t rint_to_i32(double v);

// An integer convolution's shapes: x [N, C, in...], w [M, C/group, k...], y [N, M, out...].
struct IntConvPlan {
  int64_t batch = 1, c = 1, m = 1, group = 1, in_sp = 1, out_sp = 1, taps = 1;
  Shape out;
  ops::WindowGeometry g;
};

// quant_onednn.cpp: int32 accumulators of conv(x - zx, w) through oneDNN's int8 convolution, laid
// out channels last ([N, out..., M]). Needs x int8/uint8 and w int8 without a zero point; Unsupported
// where oneDNN has no fast (non-reference) implementation, so callers fall back to their loops.
Status conv_acc_onednn(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const IntConvPlan& p, int32_t zx,
                       int32_t* acc);

// Without VNNI, oneDNN's int8 convs add each pair of u8 x s8 products in a saturating int16
// (vpmaddubsw): 255 * (|w1| + |w2|) can pass 32767 and the sums are no longer exact. True when the
// CPU has no VNNI and some weight is past 64 in magnitude. conv_acc_onednn then runs, exactly: one
// pass over min(x, 127) plus a sparse correction where few activations pass 127; an f32 conv where
// a sum has at most 514 terms; else the weights in two halves. The fused requantizing conv
// (qconv_onednn) leaves the case to it.
bool int8_pairs_may_saturate(const Tensor& w);

// qmatmul_onednn.cpp: a stamp of 8-bit weights' contents for caches of what is derived from them:
// 0 for a frozen buffer (never changes), else a hash of a sample of its bytes.
uint64_t int8_weights_stamp(const Tensor& w);

}  // namespace ms::cpu::quant

namespace ms::cpu::quant {

// v rounded to the float type t (f32, f16, bf16; f64 unchanged), as numpy's arithmetic in t does.
inline double round_to_dtype(DType t, double v) {
  switch (t) {
    case DType::F32: return static_cast<double>(static_cast<float>(v));
    case DType::F16: return static_cast<double>(static_cast<float>(static_cast<f16>(static_cast<float>(v))));
    case DType::BF16: return static_cast<double>(static_cast<float>(static_cast<bf16>(static_cast<float>(v))));
    default: return v;
  }
}

}  // namespace ms::cpu::quant
