// f32 products whose weights are a compiled graph's constant, through oneDNN's packed sgemm: the
// weights are packed once (per buffer and product shape) into the sgemm kernel's own panels and
// every later run computes from them, where the matmul primitive packs them again on each call.
// ViT-B/16's MLP product (197x768 by 768x3072) on a 2-core AVX2 CPU (Zen 3): 17-20 ms
// a call unpacked against 13.8-14.6 ms packed on one thread, 8.6-9.4 against 7.4-8.1 ms on two.
// Available where the build links oneDNN's sgemm_pack (MODESCOPE_HAVE_SGEMM_PACK); elsewhere, and
// for weights that may change (not frozen), the callers keep the matmul primitive.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace ms::runtime {
class KernelContext;
}

namespace ms::cpu::nn {

// The fewest rows packed_sgemm takes. oneDNN 2.6.3's AVX-512 packed sgemm reads outside its
// buffers for 2..15 rows with stored-transposed weights (the [out, in] of Gemm transB=1, Dense):
// measured over m = 1..70 on an AVX-512 CPU, every such product faulted and none other did; AVX2's
// kernel has no such case. Fewer rows go to the matrix-vector loops or the matmul primitive.
inline constexpr int64_t kPackedSgemmMinRows = 16;

// y [m, n] = (accumulate ? y : 0) + op(A) op(W): A [m, k] rows contiguous (or stored [k, m] when
// ta), W [k, n] (or stored [n, k] when tw), f32, W's buffer frozen. Unsupported when the packed
// sgemm is not built in, W is not a frozen f32 matrix or m < kPackedSgemmMinRows.
Status packed_sgemm(runtime::KernelContext& ctx, const float* a, bool ta, const Tensor& w, bool tw, int64_t m,
                    int64_t n, int64_t k, bool accumulate, float* y);

// Whether packed_sgemm takes these weights: built in, preferred on this CPU, f32, 2-D, frozen.
bool packed_sgemm_applies(const Tensor& w);

// Whether the packed sgemm is the better kernel for constant f32 weights on this CPU: below
// AVX-512, where oneDNN 2.6's f32 matmul is its gemm:jit, which packs the weights again on every
// call. From AVX-512 on the matmul primitive is brgemm, which takes weights reordered once into its
// own layout and runs bias, post-ops and residual inside the product instead of a second pass over
// the output: on a 2-core Zen 4 (Graph O2, 2 threads, interleaved runs) the primitive took 0.92x
// the packed sgemm's time on ConvNeXt-T and ViT-B/16 and 0.98x on Swin-T. The callers then send
// those weights to the prepacked matmul primitive (fused::prepacked_product).
bool packed_sgemm_preferred();
// Tests: force the preference (true or false), or give it back to the CPU (nullopt).
void set_packed_sgemm_preferred(std::optional<bool> preferred);

}  // namespace ms::cpu::nn
