// f32 matrix products with a few rows (batch-1 inference of Dense layers, Gemm and MatMul alike): the
// product streams the weights once, and oneDNN 2.6's matmul streams them at about 40 GB/s on 2
// cores where these loops reach ~140 GB/s. Weights stored [N, K]: each thread takes a block of
// output columns and reads their rows of W one at a time, one sequential stream. Weights stored
// [K, N] with few columns: each thread reads its own rows of W, one sequential stream, into
// partial sums of every output, added at the end.
#pragma once

#include <cstdint>

#include "engine/core/dtype.h"

namespace ms::cpu::nn {

constexpr int64_t kGemvMaxRows = 4;  // up to this many rows of A

// y[r, j] = (accumulate ? y[r, j] : 0) + alpha * sum_k A[r, k] * W[k, j] for r < m (m <= kGemvMaxRows),
// A[r, k] = a[r * a_rs + k * a_cs], W stored [N, K] (w_nk) or [K, N], y [m, n] contiguous.
void gemv_f32(const float* a, int64_t a_rs, int64_t a_cs, const float* w, bool w_nk, int64_t m, int64_t n, int64_t k,
              float alpha, bool accumulate, float* y);

// out[r, j] = sum_k A[r, k] * W[j, k] for r < m (m <= kGemvMaxRows): bf16 A [m, K] and W [N, K]
// (contiguous), f32 sums. Widening a bf16 is a shift, so the loop streams W's 2-byte weights at the
// f32 loop's rate: half the bytes of an f32 product (a bf16 Graph's batch-1 classifier heads).
void gemv_bf16_nk(const bf16* a, const bf16* w, int64_t m, int64_t n, int64_t k, float* out);

}  // namespace ms::cpu::nn
