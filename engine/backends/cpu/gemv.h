// f32 matrix products with a few rows (batch-1 inference of Dense layers, Gemm and MatMul alike): the
// product streams the weights once, and oneDNN 2.6's matmul streams them at about 40 GB/s on 2
// cores where these loops reach the cache's rate: each thread sums its own block of output columns.
// Weights in their stored layout ([N, K] or [K, N]) serve eager calls (~110 GB/s); a compiled graph
// packs constant weights once as [N/16, K, 16] (the dense-layout pass), one sequential stream of
// 16 output columns per block that the loops read at ~145 GB/s.
#pragma once

#include <cstdint>

namespace ms::cpu::nn {

constexpr int64_t kGemvMaxRows = 4;     // up to this many rows of A (ops::kPackedGemvMaxRows)
constexpr int64_t kGemvPackWidth = 16;  // output columns per packed block (ops::kPackedGemvWidth)

// y[r, j] = (accumulate ? y[r, j] : 0) + alpha * sum_k A[r, k] * W[k, j] for r < m (m <= kGemvMaxRows),
// A[r, k] = a[r * a_rs + k * a_cs], W stored [N, K] (w_nk) or [K, N], y [m, n] contiguous.
void gemv_f32(const float* a, int64_t a_rs, int64_t a_cs, const float* w, bool w_nk, int64_t m, int64_t n,
              int64_t k, float alpha, bool accumulate, float* y);

// y[r, j] = alpha * sum_k A[r, k] * W[k, j] with W packed as [ceil(N / 16), K, 16] (ops::pack_gemv_weights);
// A as in gemv_f32.
void gemv_packed_f32(const float* a, int64_t a_rs, int64_t a_cs, const float* packed, int64_t m, int64_t n,
                     int64_t k, float alpha, float* y);

}  // namespace ms::cpu::nn
