#include "engine/backends/cpu/gemv.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu::nn {
namespace {

// Columns [j0, j1) of W stored [N, K]: four rows of W (four outputs) per pass over each row of A.
MS_SIMD_CLONES void gemv_nk(const float* __restrict a, const float* __restrict w, int64_t m, int64_t k, int64_t j0,
                            int64_t j1, float* __restrict out) {
  int64_t j = j0;
  for (; j + 4 <= j1; j += 4) {
    const float* w0 = w + j * k;
    const float* w1 = w0 + k;
    const float* w2 = w1 + k;
    const float* w3 = w2 + k;
    for (int64_t r = 0; r < m; ++r) {
      const float* ar = a + r * k;
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
      for (int64_t i = 0; i < k; ++i) {
        s0 += w0[i] * ar[i];
        s1 += w1[i] * ar[i];
        s2 += w2[i] * ar[i];
        s3 += w3[i] * ar[i];
      }
      float* o = out + r * (j1 - j0) + (j - j0);
      o[0] = s0;
      o[1] = s1;
      o[2] = s2;
      o[3] = s3;
    }
  }
  for (; j < j1; ++j)
    for (int64_t r = 0; r < m; ++r) {
      const float* wj = w + j * k;
      const float* ar = a + r * k;
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < k; ++i) s += wj[i] * ar[i];
      out[r * (j1 - j0) + (j - j0)] = s;
    }
}

// Columns [j0, j1) of W stored [K, N]: each row's slice scaled by A[r, k] and summed.
MS_SIMD_CLONES void gemv_kn(const float* __restrict a, const float* __restrict w, int64_t m, int64_t n, int64_t k,
                            int64_t j0, int64_t j1, float* __restrict out) {
  const int64_t len = j1 - j0;
  std::fill(out, out + m * len, 0.f);
  for (int64_t i = 0; i < k; ++i) {
    const float* wi = w + i * n + j0;
    for (int64_t r = 0; r < m; ++r) {
      const float av = a[r * k + i];
      float* o = out + r * len;
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) o[j] += av * wi[j];
    }
  }
}

}  // namespace

void gemv_f32(const float* a, int64_t a_rs, int64_t a_cs, const float* w, bool w_nk, int64_t m, int64_t n,
              int64_t k, float alpha, bool accumulate, float* y) {
  // A's rows contiguous (a transposed A is gathered: a few rows of K values).
  std::vector<float> packed;
  if (a_cs != 1 || a_rs != k) {
    packed.resize(static_cast<size_t>(m * k));
    for (int64_t r = 0; r < m; ++r)
      for (int64_t i = 0; i < k; ++i) packed[static_cast<size_t>(r * k + i)] = a[r * a_rs + i * a_cs];
    a = packed.data();
  }
  // Threads take blocks of 16 columns; a product too small to share runs on one thread.
  const int64_t threads = n * k >= (1 << 15) ? std::max(1, omp_get_max_threads()) : 1;
  const int64_t block = std::max<int64_t>(16, (n + threads - 1) / threads + 15) / 16 * 16;
  const int64_t tasks = (n + block - 1) / block;
  auto run = [&](int64_t t) {
    const int64_t j0 = t * block, j1 = std::min(n, j0 + block), len = j1 - j0;
    float part[kGemvMaxRows * 512];
    std::vector<float> big;
    float* out = part;
    if (m * len > static_cast<int64_t>(sizeof(part) / sizeof(float))) {
      big.resize(static_cast<size_t>(m * len));
      out = big.data();
    }
    if (w_nk) gemv_nk(a, w, m, k, j0, j1, out);
    else gemv_kn(a, w, m, n, k, j0, j1, out);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < len; ++j) {
        float& dst = y[r * n + j0 + j];
        const float v = alpha * out[r * len + j];
        dst = accumulate ? dst + v : v;
      }
  };
  if (tasks > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) run(t);
  } else {
    run(0);
  }
}

}  // namespace ms::cpu::nn
