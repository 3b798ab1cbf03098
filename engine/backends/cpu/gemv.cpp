#include "engine/backends/cpu/gemv.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "engine/backends/cpu/bf16_convert.h"
#include "engine/backends/cpu/simd_clones.h"

// The vector helpers below are always inlined into the functions of each instruction set: no call
// passes a vector, whatever GCC says of the ABI of a vector return outside those.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ms::cpu::nn {
namespace {

#define LOADV(p) MS_LOADV(V, p)

// Independent partial sums per row of A, so the adds of one row do not wait on each other.
template <int M> constexpr int kPartials = M == 1 ? 4 : (M == 2 ? 2 : 1);

// bf16 lanes widened to f32: the bf16 bits are an f32's high half.
template <class V> struct Bf16Lanes;
template <> struct Bf16Lanes<vec16> {
  typedef uint16_t half __attribute__((vector_size(32)));
  typedef uint32_t word __attribute__((vector_size(64)));
};
template <> struct Bf16Lanes<vec8> {
  typedef uint16_t half __attribute__((vector_size(16)));
  typedef uint32_t word __attribute__((vector_size(32)));
};
template <> struct Bf16Lanes<vec4> {
  typedef uint16_t half __attribute__((vector_size(8)));
  typedef uint32_t word __attribute__((vector_size(16)));
};
template <class V> [[gnu::always_inline]] inline V widen(const uint16_t* p) {
  using L = Bf16Lanes<V>;
  typename L::half h;
  __builtin_memcpy(&h, p, sizeof h);
  const typename L::word wd = __builtin_convertvector(h, typename L::word) << 16;
  V v;
  __builtin_memcpy(&v, &wd, sizeof v);
  return v;
}

inline float widen1(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

// A weight vector and a weight as f32: f32 read as it is, bf16 widened.
template <class V> [[gnu::always_inline]] inline V weights(const float* p) { return LOADV(p); }
template <class V> [[gnu::always_inline]] inline V weights(const uint16_t* p) { return widen<V>(p); }
inline float weight(float w) { return w; }
inline float weight(uint16_t w) { return widen1(w); }

// Columns [j0, j1) of W stored [N, K] (f32, or bf16 widened as read): one row of W (one output
// column) at a time, its K weights one sequential stream dotted with each row of A (rows contiguous).
// V: the CPU's vector (simd_width()).
template <class V, int M, class W>
[[gnu::always_inline]] inline void nk_columns(const float* __restrict a, const W* __restrict w, int64_t k, int64_t j0,
                                              int64_t j1, float* __restrict out) {
  constexpr int P = kPartials<M>, L = kLanes<V>;
  const int64_t len = j1 - j0;
  for (int64_t j = j0; j < j1; ++j) {
    const W* wj = w + j * k;
    V acc[P * M];
    for (int q = 0; q < P * M; ++q) acc[q] = V{};
    int64_t i = 0;
    for (; i + L * P <= k; i += L * P) {
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        const V wv = weights<V>(wj + i + L * p);
#pragma GCC unroll 4
        for (int r = 0; r < M; ++r) acc[p * M + r] += LOADV(a + r * k + i + L * p) * wv;
      }
    }
    for (; i + L <= k; i += L) {
      const V wv = weights<V>(wj + i);
#pragma GCC unroll 4
      for (int r = 0; r < M; ++r) acc[r] += LOADV(a + r * k + i) * wv;
    }
#pragma GCC unroll 4
    for (int r = 0; r < M; ++r) {
      V s = acc[r];
#pragma GCC unroll 4
      for (int p = 1; p < P; ++p) s += acc[p * M + r];
      float t = 0;
      for (int l = 0; l < L; ++l) t += s[l];
      for (int64_t ii = i; ii < k; ++ii) t += weight(wj[ii]) * a[r * k + ii];
      out[r * len + (j - j0)] = t;
    }
  }
}

// Rows [i0, i1) and columns [j0, j1) of W stored [K, N]: out [m, j1 - j0] = sum over those rows of
// A[r, i] W[i, j0:j1], four rows of W per pass over the output (which stays in L1).
template <class V>
[[gnu::always_inline]] inline void kn_block(const float* __restrict a, const float* __restrict w, int64_t m, int64_t n,
                                            int64_t k, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                                            float* __restrict out) {
  constexpr int L = kLanes<V>;
  const int64_t len = j1 - j0;
  std::fill(out, out + m * len, 0.f);
  int64_t i = i0;
  for (; i + 4 <= i1; i += 4) {
    const float* w0 = w + i * n + j0;
    const float* w1 = w0 + n;
    const float* w2 = w1 + n;
    const float* w3 = w2 + n;
    for (int64_t r = 0; r < m; ++r) {
      const float* ar = a + r * k + i;
      const float a0 = ar[0], a1 = ar[1], a2 = ar[2], a3 = ar[3];
      float* o = out + r * len;
      int64_t j = 0;
      for (; j + L <= len; j += L) {
        MS_STOREV(o + j, LOADV(o + j) +
                             ((a0 * LOADV(w0 + j) + a1 * LOADV(w1 + j)) + (a2 * LOADV(w2 + j) + a3 * LOADV(w3 + j))));
      }
      for (; j < len; ++j) o[j] += (a0 * w0[j] + a1 * w1[j]) + (a2 * w2[j] + a3 * w3[j]);
    }
  }
  for (; i < i1; ++i)
    for (int64_t r = 0; r < m; ++r) {
      const float av = a[r * k + i];
      const float* wi = w + i * n + j0;
      float* o = out + r * len;
      for (int64_t j = 0; j < len; ++j) o[j] += av * wi[j];
    }
}

template <class V>
[[gnu::always_inline]] inline void run_bf16(const float* a, const uint16_t* w, int64_t m, int64_t k, int64_t j0,
                                            int64_t j1, float* out) {
  switch (m) {
    case 1: return nk_columns<V, 1>(a, w, k, j0, j1, out);
    case 2: return nk_columns<V, 2>(a, w, k, j0, j1, out);
    case 3: return nk_columns<V, 3>(a, w, k, j0, j1, out);
    default: return nk_columns<V, 4>(a, w, k, j0, j1, out);
  }
}
MS_TARGET_AVX512 void run_bf16_avx512(const float* a, const uint16_t* w, int64_t m, int64_t k, int64_t j0, int64_t j1,
                                      float* out) {
  run_bf16<vec16>(a, w, m, k, j0, j1, out);
}
MS_TARGET_AVX2 void run_bf16_avx2(const float* a, const uint16_t* w, int64_t m, int64_t k, int64_t j0, int64_t j1,
                                  float* out) {
  run_bf16<vec8>(a, w, m, k, j0, j1, out);
}

// One block of the product: columns [j0, j1) (W stored [N, K] or [K, N]) over rows [i0, i1) of W
// stored [K, N] (all of K when stored [N, K]), into out [m, j1 - j0].
struct GemvBlock {
  const float* a;
  const float* w;
  bool w_nk;
  int64_t m, n, k, i0, i1, j0, j1;
  float* out;
};

template <class V> [[gnu::always_inline]] inline void run_block(const GemvBlock& b) {
  if (!b.w_nk) return kn_block<V>(b.a, b.w, b.m, b.n, b.k, b.i0, b.i1, b.j0, b.j1, b.out);
  switch (b.m) {
    case 1: return nk_columns<V, 1>(b.a, b.w, b.k, b.j0, b.j1, b.out);
    case 2: return nk_columns<V, 2>(b.a, b.w, b.k, b.j0, b.j1, b.out);
    case 3: return nk_columns<V, 3>(b.a, b.w, b.k, b.j0, b.j1, b.out);
    default: return nk_columns<V, 4>(b.a, b.w, b.k, b.j0, b.j1, b.out);
  }
}

MS_TARGET_AVX512 void run_block_avx512(const GemvBlock& b) { run_block<vec16>(b); }
MS_TARGET_AVX2 void run_block_avx2(const GemvBlock& b) { run_block<vec8>(b); }

void gemv_block(const GemvBlock& b) {
  switch (simd_width()) {
    case 16: return run_block_avx512(b);
    case 8: return run_block_avx2(b);
    default: return run_block<vec4>(b);
  }
}

#undef LOADV

// A's rows contiguous: a transposed (or strided) A is gathered, a few rows of K values.
const float* contiguous_rows(const float* a, int64_t a_rs, int64_t a_cs, int64_t m, int64_t k,
                             std::vector<float>& packed) {
  if (a_cs == 1 && a_rs == k) return a;
  packed.resize(static_cast<size_t>(m * k));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t i = 0; i < k; ++i) packed[static_cast<size_t>(r * k + i)] = a[r * a_rs + i * a_cs];
  return packed.data();
}

// Products too small to share run on one thread.
int64_t threads_for(int64_t n, int64_t k) { return n * k >= (1 << 15) ? std::max(1, omp_get_max_threads()) : 1; }

#undef LOAD16

}  // namespace

void gemv_f32(const float* a, int64_t a_rs, int64_t a_cs, const float* w, bool w_nk, int64_t m, int64_t n, int64_t k,
              float alpha, bool accumulate, float* y) {
  std::vector<float> gathered;
  a = contiguous_rows(a, a_rs, a_cs, m, k, gathered);
  const int64_t threads = threads_for(n, k);
  // Weights stored [K, N] with a short output: each thread reads its own rows of W (one sequential
  // stream) into partial sums of every output, added at the end (a column block of each row would
  // be a short piece of a row per thread).
  if (!w_nk && threads > 1 && m * n <= 8192 && k >= 16 * threads) {
    const int64_t per = (k + threads - 1) / threads;
    std::vector<float> partial(static_cast<size_t>(threads * m * n));
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < threads; ++t)
      gemv_block(
          {a, w, false, m, n, k, std::min(k, t * per), std::min(k, (t + 1) * per), 0, n, partial.data() + t * m * n});
    for (int64_t e = 0; e < m * n; ++e) {
      float v = 0;
      for (int64_t t = 0; t < threads; ++t) v += partial[static_cast<size_t>(t * m * n + e)];
      y[e] = accumulate ? y[e] + alpha * v : alpha * v;
    }
    return;
  }
  // Threads take blocks of 16 columns.
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
    gemv_block({a, w, w_nk, m, n, k, 0, k, j0, j1, out});
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

void gemv_bf16_nk(const bf16* a, const bf16* w, int64_t m, int64_t n, int64_t k, float* out) {
  std::vector<float> af(static_cast<size_t>(m * k));
  widen_bf16(a, af.data(), m * k);
  const auto* wb = reinterpret_cast<const uint16_t*>(w);
  const int64_t threads = threads_for(n, k);
  // Threads take blocks of 16 columns; each writes its columns of out through a local block.
  const int64_t block = std::max<int64_t>(16, (n + threads - 1) / threads + 15) / 16 * 16;
  const int64_t tasks = (n + block - 1) / block;
  auto run = [&](int64_t t) {
    const int64_t j0 = t * block, j1 = std::min(n, j0 + block), len = j1 - j0;
    std::vector<float> part(static_cast<size_t>(m * len));
    switch (simd_width()) {
      case 16: run_bf16_avx512(af.data(), wb, m, k, j0, j1, part.data()); break;
      case 8: run_bf16_avx2(af.data(), wb, m, k, j0, j1, part.data()); break;
      default: run_bf16<vec4>(af.data(), wb, m, k, j0, j1, part.data()); break;
    }
    for (int64_t r = 0; r < m; ++r) std::copy(part.begin() + r * len, part.begin() + (r + 1) * len, out + r * n + j0);
  };
  if (tasks == 1) {
    run(0);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(static_cast <int>(std::min(tasks, threads)))
  for (int64_t t = 0; t < tasks; ++t) run(t);
}

}  // namespace ms::cpu::nn
