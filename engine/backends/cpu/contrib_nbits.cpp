// MatMulNBits (com.microsoft; schema in ops/contrib.cpp), the 4- and 8-bit block-quantized linear
// layer of LLM exports. A few rows of A (token generation) read the 4-bit bytes directly: four W
// rows at a time in AVX-512, or with accuracy_level 4 ONNX Runtime's int8 compute (A quantized per
// block, vpdpbusd on AVX-512 VNNI, plain C++ elsewhere). More rows (a prompt) dequantize panels of
// W's rows into f32 in each thread's scratch, each multiplied while in cache by our AVX-512 tiles
// (oneDNN's sgemm below AVX-512): the f32 matrix never exists whole.
#include <dnnl.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "engine/backends/cpu/contrib_internal.h"
#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/fma_tiles.h"
#include "engine/backends/cpu/simd_clones.h"

// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which its
// uninitialized-use analysis reports once inlined; the values are never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace ms::cpu::contrib {
namespace {

using std::to_string;

// --- MatMulNBits ------------------------------------------------------------------------------------

// n 8-bit weights, q x scale + bias: built per instruction set (the build's baseline is SSE).
MS_SIMD_CLONES void dequantize_bytes(const uint8_t* src, int64_t n, float scale, float bias, float* dst) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<float>(src[j]) * scale + bias;
}

// One row of W: `blocks` blocks of `block` values (the last cut at k), (q - zero) x scale.
void dequantize_row(const uint8_t* q, const float* scales, const uint8_t* zp, int64_t k, int64_t blocks, int64_t block,
                    int bits, float* out) {
  const int64_t blob = block * bits / 8;
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const float scale = scales[kb];
    int zero = 1 << (bits - 1);
    if (zp) zero = bits == 4 ? (zp[kb / 2] >> ((kb % 2) * 4)) & 15 : zp[kb];
    const float bias = -static_cast<float>(zero) * scale;
    const uint8_t* src = q + kb * blob;
    float* dst = out + kb * block;
    const int64_t n = std::min(block, k - kb * block);
    if (bits == 8) {
      dequantize_bytes(src, n, scale, bias, dst);
    } else if (bits == 4 && n == block) {
      for (int64_t j = 0; j < blob; ++j) {  // low nibble first
        dst[2 * j] = static_cast<float>(src[j] & 15) * scale + bias;
        dst[2 * j + 1] = static_cast<float>(src[j] >> 4) * scale + bias;
      }
    } else {
      for (int64_t j = 0; j < n; ++j) {
        const int64_t bit = j * bits;
        dst[j] = static_cast<float>((src[bit / 8] >> (bit % 8)) & ((1 << bits) - 1)) * scale + bias;
      }
    }
  }
}

typedef uint8_t q4_u8x16 __attribute__((vector_size(16)));
typedef int32_t q4_i32x16 __attribute__((vector_size(64)));
typedef float q4_f32x16 __attribute__((vector_size(64)));

// One output of a 4-bit row: Σ over blocks of scale x (Σ q·a - zero x Σ a), a split into the values
// the low and the high nibbles meet. Blocks of a multiple of 32 values run 16 bytes a step in
// vectors, each block's sum scaled into one accumulator (one horizontal sum a row).
MS_SIMD_CLONES float q4_row_dot(const uint8_t* q, const float* lo, const float* hi, const float* sums,
                                const float* scales, const uint8_t* zp, int64_t blocks, int64_t half) {
  float corr = 0, tail = 0;
  q4_f32x16 acc = {};
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const uint8_t* qb = q + kb * half;
    const float *l = lo + kb * half, *h = hi + kb * half;
    const float scale = scales[kb];
    const int zero = zp ? (zp[kb / 2] >> ((kb % 2) * 4)) & 15 : 8;
    corr += scale * static_cast<float>(zero) * sums[kb];
    if (half % 16 == 0) {
      q4_f32x16 blk = {};
      for (int64_t c = 0; c < half; c += 16) {
        q4_u8x16 b;
        q4_f32x16 lv, hv;
        std::memcpy(&b, qb + c, sizeof b);
        std::memcpy(&lv, l + c, sizeof lv);
        std::memcpy(&hv, h + c, sizeof hv);
        const q4_i32x16 bi = __builtin_convertvector(b, q4_i32x16);
        blk += __builtin_convertvector(bi & 15, q4_f32x16) * lv + __builtin_convertvector(bi >> 4, q4_f32x16) * hv;
      }
      acc += scale * blk;
    } else {
      float d = 0;
      for (int64_t j = 0; j < half; ++j)
        d += static_cast<float>(qb[j] & 15) * l[j] + static_cast<float>(qb[j] >> 4) * h[j];
      tail += scale * d;
    }
  }
  float sum = tail;
  for (int i = 0; i < 16; ++i) sum += acc[i];
  return sum - corr;
}

#if MS_SIMD_DISPATCH
// The 4-bit row kernels read W four rows at a time, one 4 KiB page a group where K is 2048 (a page of
// scales every four groups): the hardware prefetchers stop at each page's end, so each kernel
// prefetches the group two groups on as it goes. A chain of sixteen 2048 x 5632 layers (118 MiB of
// weights) with int8 compute went from 3.8-5.2 to 2.8-3.6 ms (ORT 3.8-4.3 in the same runs), with
// f32 compute from 6.6-10.3 to 5.8-6.0 ms (ORT 11.2-12.1); one int8 layer in cache from 0.20-0.21 to
// 0.17 ms (ORT 0.17).
constexpr int64_t kRowGroupsAhead = 2;

// Σ over blocks of scale x zero x sums[kb] for one 4-bit row (the zero points' share of its output):
// 16 blocks a step, their zero points taken from 8 bytes of packed nibbles (the midpoint 8 without).
MS_TARGET_AVX512 float q4_zero_correction_avx512(const float* scales, const uint8_t* zp, const float* sums,
                                                 int64_t blocks) {
  __m512 acc = _mm512_setzero_ps();
  int64_t kb = 0;
  const __m512i pairs = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  const __m512i shifts = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
  for (; kb + 16 <= blocks; kb += 16) {
    __m512 zero = _mm512_set1_ps(8.f);
    if (zp) {
      const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(zp + kb / 2)));
      const __m512i z =
          _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(pairs, bytes), shifts), _mm512_set1_epi32(15));
      zero = _mm512_cvtepi32_ps(z);
    }
    acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_loadu_ps(scales + kb), zero), _mm512_loadu_ps(sums + kb), acc);
  }
  float corr = _mm512_reduce_add_ps(acc);
  for (; kb < blocks; ++kb) {
    const int zero = zp ? (zp[kb / 2] >> ((kb % 2) * 4)) & 15 : 8;
    corr += scales[kb] * static_cast<float>(zero) * sums[kb];
  }
  return corr;
}

// Four outputs of 4-bit rows at once (W rows r0..r0+3, `stride` bytes apart), blocks of a multiple
// of 32 values, in AVX-512: each 16-byte step widens the row's bytes to 16 ints once
// (vpmovzxbd), splits the nibbles and meets A's values, loaded once for the four rows; each block's
// products are scaled into the row's accumulator, four chains side by side. Writes Σ over blocks of
// scale x (Σ q·a - zero x Σ a).
MS_TARGET_AVX512 void q4_rows4_avx512(const uint8_t* q, int64_t stride, const float* lo, const float* hi,
                                      const float* sums, const float* scales, const uint8_t* zp, int64_t zp_row,
                                      int64_t blocks, int64_t half, float* out) {
  const __m512i low = _mm512_set1_epi32(15);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const float *l = lo + kb * half, *h = hi + kb * half;
    const uint8_t* qb = q + kb * half;
    // The group of rows two groups on: 4 half bytes of it a block (all of it over the group's
    // blocks), and its scales.
    for (int64_t off = 0; off < 4 * half; off += 64)
      _mm_prefetch(reinterpret_cast<const char*>(q + kRowGroupsAhead * 4 * stride + kb * 4 * half + off), _MM_HINT_T0);
    if (kb % 4 == 0)
      _mm_prefetch(reinterpret_cast<const char*>(scales + kRowGroupsAhead * 4 * blocks + kb * 4), _MM_HINT_T0);
    __m512 b0 = _mm512_setzero_ps(), b1 = b0, b2 = b0, b3 = b0;
    for (int64_t c = 0; c < half; c += 16) {
      const __m512 lv = _mm512_loadu_ps(l + c), hv = _mm512_loadu_ps(h + c);
      // (A lambda would not take the function's target; a macro does.)
#define MS_Q4_STEP(acc, src)                                                                               \
  do {                                                                                                     \
    const __m512i bi = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>((src) + c))); \
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(bi, low)), lv, acc);                         \
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(bi, 4)), hv, acc);                          \
  } while (0)
      MS_Q4_STEP(b0, qb);
      MS_Q4_STEP(b1, qb + stride);
      MS_Q4_STEP(b2, qb + 2 * stride);
      MS_Q4_STEP(b3, qb + 3 * stride);
#undef MS_Q4_STEP
    }
    acc0 = _mm512_fmadd_ps(_mm512_set1_ps(scales[kb]), b0, acc0);
    acc1 = _mm512_fmadd_ps(_mm512_set1_ps(scales[blocks + kb]), b1, acc1);
    acc2 = _mm512_fmadd_ps(_mm512_set1_ps(scales[2 * blocks + kb]), b2, acc2);
    acc3 = _mm512_fmadd_ps(_mm512_set1_ps(scales[3 * blocks + kb]), b3, acc3);
  }
  float corr[4];
  for (int r = 0; r < 4; ++r)
    corr[r] = q4_zero_correction_avx512(scales + r * blocks, zp ? zp + r * zp_row : nullptr, sums, blocks);
  out[0] = _mm512_reduce_add_ps(acc0) - corr[0];
  out[1] = _mm512_reduce_add_ps(acc1) - corr[1];
  out[2] = _mm512_reduce_add_ps(acc2) - corr[2];
  out[3] = _mm512_reduce_add_ps(acc3) - corr[3];
}

// One 4-bit row of W in f32 with each 32-value chunk's values split: the 16 low nibbles' values,
// then the 16 high ones' (the order `split_column` gives A), so each chunk is one vector of each:
// (q - zero) x scale, two conversions and two multiply-adds a chunk.
MS_TARGET_AVX512 void dequantize_q4_split_avx512(const uint8_t* q, const float* scales, const uint8_t* zp,
                                                 int64_t blocks, int64_t half, float* out) {
  const __m512i low = _mm512_set1_epi32(15);
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const float scale = scales[kb];
    const int zero = zp ? (zp[kb / 2] >> ((kb % 2) * 4)) & 15 : 8;
    const __m512 sv = _mm512_set1_ps(scale), bv = _mm512_set1_ps(-static_cast<float>(zero) * scale);
    for (int64_t c = 0; c < half; c += 16) {
      const __m512i bi = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + kb * half + c)));
      float* dst = out + kb * 2 * half + 2 * c;
      _mm512_storeu_ps(dst, _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(bi, low)), sv, bv));
      _mm512_storeu_ps(dst + 16, _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(bi, 4)), sv, bv));
    }
  }
}
#endif

#if MS_SIMD_DISPATCH
// Our product of a panel of dequantized W rows with A (AVX-512), for more rows of A than the 4-bit
// row kernels take (a prompt): yᵀ [rows, mp] = W_panel [rows, k] x Aᵀ, Aᵀ packed once as [k, mp]
// (mp: m rounded up to 16, zeros past m). A register tile is R (at most 14) W rows against 32 (or
// 16) rows of A in 2R accumulators, over K in blocks of kNbitsKc; each step one or two vectors of Aᵀ
// and R broadcasts of W. oneDNN's sgemm, packing A and the panel again at every call, took 1.4x as
// long on LLM prompt shapes (64 x 2048 x 256 at one thread: 97-115 against 131-160 GFLOP/s).
constexpr int64_t kNbitsKc = 512;

template <int R, int P>
MS_TARGET_AVX512 void nbits_tile(const float* w, int64_t ldw, const float* at, int64_t lda, int64_t kc, float* yt,
                                 int64_t ldy, bool first) {
  broadcast_fma_tile<R, P, false>(at, lda, w, ldw, kc, yt, ldy, !first);
}

using NbitsTileFn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t, bool);
template <int P, int... R>
constexpr std::array<NbitsTileFn, sizeof...(R) + 1> nbits_tiles(std::integer_sequence<int, R...>) {
  return {nullptr, &nbits_tile<R + 1, P>...};
}
// nbits_tile<R, P> by R, 1 to 14.
template <int P> constexpr auto kNbitsTiles = nbits_tiles<P>(std::make_integer_sequence<int, 14>{});

// yt [rows, mp] = W [rows, k] (leading dimension ldw) x at [k, mp].
MS_TARGET_AVX512 void nbits_panel_products(const float* w, int64_t rows, int64_t ldw, const float* at, int64_t mp,
                                           int64_t k, float* yt) {
  const int64_t groups = (rows + 13) / 14;
  for (int64_t k0 = 0; k0 < k; k0 += kNbitsKc) {
    const int64_t kc = std::min(kNbitsKc, k - k0);
    for (int64_t mb = 0; mb < mp; mb += 32) {
      const bool two = mb + 32 <= mp;
      for (int64_t g = 0, r0 = 0; g < groups; ++g) {
        const int64_t r = (rows - r0) / (groups - g);
        const auto fn = two ? kNbitsTiles<2>[static_cast<size_t>(r)] : kNbitsTiles<1>[static_cast<size_t>(r)];
        fn(w + r0 * ldw + k0, ldw, at + k0 * mp + mb, mp, kc, yt + r0 * mp + mb, mp, k0 == 0);
        r0 += r;
      }
    }
  }
}
#endif

#if MS_SIMD_DISPATCH
#define MS_TARGET_VNNI __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma")))

// accuracy_level 4 (ONNX Runtime's int8 compute), blocks of 32: A's rows quantized block by block
// to int8, scale = max |a| / 127 and a_q = nearbyint(a · 127 / max |a|). Each pair of blocks is
// stored as 64 bytes in the order the weights' nibbles come out of 32 bytes of W: the even values
// of block kb, then of kb + 1, then the odd values of kb, then of kb + 1; with its scales spread the
// same way over 16 lanes ([kb x4, kb+1 x4, kb x4, kb+1 x4]).
struct Q8Rows {
  std::vector<int8_t> q;      // [m, k]
  std::vector<float> lanes;   // [m, blocks / 2, 16]: each pair's scales, lane by lane
  std::vector<float> weight;  // [m, blocks]: scale x Σ a_q, for the zero points
};

Q8Rows quantize_rows_q8(const float* a, int64_t m, int64_t k) {
  const int64_t blocks = k / 32;
  Q8Rows r;
  r.q.resize(static_cast<size_t>(m * k));
  r.lanes.resize(static_cast<size_t>(m * blocks * 8));
  r.weight.resize(static_cast<size_t>(m * blocks));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kb = 0; kb < blocks; ++kb) {
      const float* x = a + i * k + kb * 32;
      float top = 0;
      for (int64_t j = 0; j < 32; ++j) top = std::max(top, std::fabs(x[j]));
      const float inv = top != 0 ? 127.f / top : 0.f, scale = top / 127.f;
      int8_t* pair = r.q.data() + i * k + (kb / 2) * 64;
      const int64_t off = (kb % 2) * 16;
      int32_t sum = 0;
      for (int64_t j = 0; j < 16; ++j) {
        const auto e = static_cast<int8_t>(std::clamp(std::nearbyint(x[2 * j] * inv), -128.f, 127.f));
        const auto o = static_cast<int8_t>(std::clamp(std::nearbyint(x[2 * j + 1] * inv), -128.f, 127.f));
        pair[off + j] = e;
        pair[32 + off + j] = o;
        sum += e + o;
      }
      float* lanes = r.lanes.data() + (i * blocks + kb / 2 * 2) * 8;
      for (int64_t l = 0; l < 4; ++l) lanes[off / 4 + l] = lanes[8 + off / 4 + l] = scale;
      r.weight[static_cast<size_t>(i * blocks + kb)] = scale * static_cast<float>(sum);
    }
  return r;
}

// Four int8-compute outputs of 4-bit rows with blocks of 32 (an even count): per pair of blocks, the
// 32 weight bytes of a row split into low and high nibbles make one 64-byte vector that vpdpbusd
// multiplies with A's pair, the 16 int sums scaled lane by lane (w scale x a scale) into the row's
// float accumulator. The zero points' share, Σ w scale x zero x a scale x Σ a_q, is one vector pass
// over the blocks.
MS_TARGET_VNNI void q4_rows4_vnni(const uint8_t* q, int64_t stride, const int8_t* aq, const float* a_lanes,
                                  const float* a_weight, const float* scales, const uint8_t* zp, int64_t zp_row,
                                  int64_t blocks, float* out) {
  const __m512i low = _mm512_set1_epi8(15);
  // The 32 bytes of a pair in both halves of a vector, shifted by 0 in the low half and 4 in the
  // high one: the low nibbles, then the high ones, in one shift and one mask.
  const __m512i nibble_shift = _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0);
  const __m512i pair_lanes = _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0);
  // Four rows' accumulators and scales of the current 16 blocks, in registers (not arrays, which GCC
  // kept on the stack).
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  __m512 sv0 = acc0, sv1 = acc0, sv2 = acc0, sv3 = acc0;
  for (int64_t kb = 0; kb < blocks; kb += 2) {
    const int64_t in16 = kb % 16;
    if (in16 == 0) {
      const auto m = static_cast<__mmask16>((1u << std::min<int64_t>(16, blocks - kb)) - 1u);
      sv0 = _mm512_maskz_loadu_ps(m, scales + kb), sv1 = _mm512_maskz_loadu_ps(m, scales + blocks + kb);
      sv2 = _mm512_maskz_loadu_ps(m, scales + 2 * blocks + kb),
      sv3 = _mm512_maskz_loadu_ps(m, scales + 3 * blocks + kb);
    }
    // The pair's scales spread over the lanes vpdpbusd fills: [kb x4, kb+1 x4, kb x4, kb+1 x4].
    const __m512i spread = _mm512_add_epi32(pair_lanes, _mm512_set1_epi32(static_cast<int>(in16)));
    const __m512i av = _mm512_loadu_si512(aq + kb * 32);
    const __m512 sa = _mm512_loadu_ps(a_lanes + kb * 8);
    // The group of rows two groups on, 64 bytes of it a block (all of it over the group's blocks), and
    // its scales.
    const char* ahead = reinterpret_cast<const char*>(q + kRowGroupsAhead * 4 * stride + kb * 64);
    _mm_prefetch(ahead, _MM_HINT_T0);
    _mm_prefetch(ahead + 64, _MM_HINT_T0);
    if (kb % 4 == 0)
      _mm_prefetch(reinterpret_cast<const char*>(scales + kRowGroupsAhead * 4 * blocks + kb * 4), _MM_HINT_T0);
      // (A lambda would not take the function's target; a macro does.)
#define MS_VNNI_ROW(r, acc, sv)                                                                                     \
  do {                                                                                                              \
    const __m512i b =                                                                                               \
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (r)*stride + kb * 16)));     \
    const __m512i dot =                                                                                             \
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(_mm512_srlv_epi64(b, nibble_shift), low), av); \
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(_mm512_permutexvar_ps(spread, sv), sa), acc);      \
  } while (0)
    MS_VNNI_ROW(0, acc0, sv0);
    MS_VNNI_ROW(1, acc1, sv1);
    MS_VNNI_ROW(2, acc2, sv2);
    MS_VNNI_ROW(3, acc3, sv3);
#undef MS_VNNI_ROW
  }
  const __m512 acc[4] = {acc0, acc1, acc2, acc3};
  for (int r = 0; r < 4; ++r) {
    const float* ws = scales + r * blocks;
    __m512 corr = _mm512_setzero_ps();
    int64_t kb = 0;
    for (; kb + 16 <= blocks; kb += 16) {
      __m512 zero = _mm512_set1_ps(8.f);
      if (zp) {
        const __m128i zb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(zp + r * zp_row + kb / 2));
        const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(zb, _mm_set1_epi8(15)),
                                              _mm_and_si128(_mm_srli_epi16(zb, 4), _mm_set1_epi8(15)));
        zero = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(nib));
      }
      corr = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_loadu_ps(ws + kb), zero), _mm512_loadu_ps(a_weight + kb), corr);
    }
    float c = _mm512_reduce_add_ps(corr);
    for (; kb < blocks; ++kb) {
      const int zero = zp ? (zp[r * zp_row + kb / 2] >> ((kb % 2) * 4)) & 15 : 8;
      c += ws[kb] * static_cast<float>(zero) * a_weight[kb];
    }
    out[r] = _mm512_reduce_add_ps(acc[r]) - c;
  }
}

bool cpu_has_vnni() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return cpu_simd_width() >= 16 && __builtin_cpu_supports("avx512vnni");
  }();
  return yes;
}

// The int8-compute row path: every group of four W rows through q4_rows4_vnni; false (nothing done)
// where the CPU lacks AVX-512 VNNI or the shapes do not fit (then the f32 row path runs).
bool matmul_q4_rows_vnni(const float* a, int64_t m, int64_t k, int64_t n, int64_t block, const uint8_t* q,
                         const float* scales, const uint8_t* zp, int64_t zp_row, float* y) {
  const int64_t blocks = k / 32;
  if (!cpu_has_vnni() || block != 32 || k % 64 != 0 || n % 4 != 0 || simd_width() < 16) return false;
  const Q8Rows aq = quantize_rows_q8(a, m, k);
#pragma omp parallel for schedule(static) if (n * k > (1 << 16))
  for (int64_t g = 0; g < n / 4; ++g)
    for (int64_t i = 0; i < m; ++i) {
      float out[4];
      q4_rows4_vnni(q + 4 * g * blocks * 16, blocks * 16, aq.q.data() + i * k, aq.lanes.data() + i * blocks * 8,
                    aq.weight.data() + i * blocks, scales + 4 * g * blocks, zp ? zp + 4 * g * zp_row : nullptr, zp_row,
                    blocks, out);
      for (int r = 0; r < 4; ++r) y[i * n + 4 * g + r] = out[r];
    }
  return true;
}
#endif

// The same int8 compute in plain C++ (any block of a multiple of 2, any CPU): A quantized block by
// block as above, each block's integer dot product exact, then scaled.
void matmul_q4_rows_int8(const float* a, int64_t m, int64_t k, int64_t n, int64_t block, const uint8_t* q,
                         const float* scales, const uint8_t* zp, int64_t zp_row, float* y) {
#if MS_SIMD_DISPATCH
  if (matmul_q4_rows_vnni(a, m, k, n, block, q, scales, zp, zp_row, y)) return;
#endif
  const int64_t blocks = k / block, half = block / 2;
  std::vector<int8_t> aq(static_cast<size_t>(m * k));
  std::vector<float> as(static_cast<size_t>(m * blocks));
  for (int64_t i = 0; i < m * blocks; ++i) {
    const float* x = a + i * block;
    float top = 0;
    for (int64_t j = 0; j < block; ++j) top = std::max(top, std::fabs(x[j]));
    const float inv = top != 0 ? 127.f / top : 0.f;
    for (int64_t j = 0; j < block; ++j)
      aq[static_cast<size_t>(i * block + j)] =
          static_cast<int8_t>(std::clamp(std::nearbyint(x[j] * inv), -128.f, 127.f));
    as[static_cast<size_t>(i)] = top / 127.f;
  }
#pragma omp parallel for schedule(static) if (n * k > (1 << 16))
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < m; ++i) {
      float acc = 0;
      for (int64_t kb = 0; kb < blocks; ++kb) {
        const uint8_t* qb = q + (r * blocks + kb) * half;
        const int8_t* x = aq.data() + i * k + kb * block;
        const int zero = zp ? (zp[r * zp_row + kb / 2] >> ((kb % 2) * 4)) & 15 : 8;
        int32_t dot = 0;
        for (int64_t j = 0; j < half; ++j)
          dot += ((qb[j] & 15) - zero) * x[2 * j] + ((qb[j] >> 4) - zero) * x[2 * j + 1];
        acc += scales[r * blocks + kb] * as[static_cast<size_t>(i * blocks + kb)] * static_cast<float>(dot);
      }
      y[i * n + r] = acc;
    }
}

// A few rows of A (token generation): each output is Σ over blocks of scale x (Σ q·a - zero x Σ a),
// read straight from the 4-bit bytes, four W rows at a time where the blocks allow.
void matmul_q4_rows(const float* a, int64_t m, int64_t k, int64_t n, int64_t block, const uint8_t* q,
                    const float* scales, const uint8_t* zp, int64_t zp_row, float* y) {
  const int64_t blocks = k / block, half = block / 2;
  std::vector<float> lo(static_cast<size_t>(m * k / 2)), hi(lo.size()), sums(static_cast<size_t>(m * blocks));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kb = 0; kb < blocks; ++kb) {
      float t = 0;
      for (int64_t j = 0; j < half; ++j) {
        const float x0 = a[i * k + kb * block + 2 * j], x1 = a[i * k + kb * block + 2 * j + 1];
        lo[static_cast<size_t>(i * k / 2 + kb * half + j)] = x0;
        hi[static_cast<size_t>(i * k / 2 + kb * half + j)] = x1;
        t += x0 + x1;
      }
      sums[static_cast<size_t>(i * blocks + kb)] = t;
    }
  const int64_t row_bytes = blocks * half;
#if MS_SIMD_DISPATCH
  const int64_t quads = half % 16 == 0 && simd_width() >= 16 ? n / 4 : 0;
#else
  const int64_t quads = 0;
#endif
#pragma omp parallel for schedule(static) if (n * k > (1 << 16))
  for (int64_t g = 0; g < quads; ++g)
    for (int64_t i = 0; i < m; ++i) {
      float out[4];
      q4_rows4_avx512(q + 4 * g * row_bytes, row_bytes, lo.data() + i * k / 2, hi.data() + i * k / 2,
                      sums.data() + i * blocks, scales + 4 * g * blocks, zp ? zp + 4 * g * zp_row : nullptr, zp_row,
                      blocks, half, out);
      for (int r = 0; r < 4; ++r) y[i * n + 4 * g + r] = out[r];
    }
  for (int64_t r = 4 * quads; r < n; ++r)
    for (int64_t i = 0; i < m; ++i)
      y[i * n + r] =
          q4_row_dot(q + r * row_bytes, lo.data() + i * k / 2, hi.data() + i * k / 2, sums.data() + i * blocks,
                     scales + r * blocks, zp ? zp + r * zp_row : nullptr, blocks, half);
}

// W's quantized rows as MatMulNBits holds them.
struct NbitsWeights {
  const uint8_t* q;
  const float* scales;
  const uint8_t* zp;  // null: the midpoint
  int64_t k, n, bits, block, zp_row;
};

// Column i of A in the order dequantize_q4_split_avx512 gives W's values: within each 32-value chunk
// the even columns (met by the low nibbles), then the odd ones.
inline int64_t split_column(int64_t i) {
  const int64_t j = i % 32;
  return i - j + (j < 16 ? 2 * j : 2 * (j - 16) + 1);
}

// y [m, n] = A [m, k] x Wᵀ through f32 panels of W: each thread dequantizes panels of W's rows into
// its scratch and multiplies each while it is in cache, by our tiles on AVX-512
// (nbits_panel_products: panels of about 1 MiB, beside Aᵀ's block and the panel's yᵀ in L2) or by
// oneDNN's sgemm (one thread inside the parallel region; panels of about 2 MiB).
Status matmul_nbits_panels(runtime::KernelContext& ctx, const float* av, int64_t m, const NbitsWeights& wt, float* y) {
  const uint8_t* q = wt.q;
  const float* scales = wt.scales;
  const uint8_t* zp = wt.zp;
  const int64_t k = wt.k, n = wt.n, bits = wt.bits, block = wt.block, zp_row = wt.zp_row;
  const int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
#if MS_SIMD_DISPATCH
  // A few rows (8-bit weights, or blocks the 4-bit row kernels do not take) go to the sgemm, whose
  // tiles would be mostly padding.
  const bool own = simd_width() >= 16 && m > 4;
  const bool split = own && bits == 4 && block % 32 == 0 && k % block == 0;
#else
  const bool own = false, split = false;
#endif
  const int64_t panel = std::clamp<int64_t>(((int64_t{1} << (own ? 18 : 19)) / k) / 16 * 16, 16, 256);
  const int64_t ldw = own ? k + 16 : k;  // own: rows 64 bytes off a multiple of 4 KiB (no L1 set conflicts)
  const int64_t mp = (m + 15) / 16 * 16;
  const int panels = static_cast<int>((n + panel - 1) / panel);
  const bool parallel = panels > 1 && m * n * k > (1 << 20);
  const int64_t threads = parallel ? omp_get_max_threads() : 1;
  const int64_t per_thread = panel * ldw + (own ? panel * mp : 0);
  MS_ASSIGN_OR_RETURN(Tensor room, ctx.scratch(DType::F32, {threads * per_thread + (own ? k * mp : 0)}));
  float* at = room.data<float>() + threads * per_thread;  // own: Aᵀ [k, mp]
  bool failed = false;
#pragma omp parallel if (parallel) num_threads(static_cast <int>(threads))
  {
    float* w = room.data<float>() + omp_get_thread_num() * per_thread;
    float* yt = w + panel * ldw;
    if (own) {
#pragma omp for schedule(static)
      for (int64_t i = 0; i < k; ++i) {
        const int64_t c = split ? split_column(i) : i;
        for (int64_t r = 0; r < mp; ++r) at[i * mp + r] = r < m ? av[r * k + c] : 0.f;
      }
    }
#pragma omp for schedule(static)
    for (int p = 0; p < panels; ++p) {
      const int64_t r0 = p * panel, rows = std::min(panel, n - r0);
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* qr = q + (r0 + r) * blocks * blob;
        const uint8_t* zr = zp ? zp + (r0 + r) * zp_row : nullptr;
#if MS_SIMD_DISPATCH
        if (split) {
          dequantize_q4_split_avx512(qr, scales + (r0 + r) * blocks, zr, blocks, blob, w + r * ldw);
          continue;
        }
#endif
        dequantize_row(qr, scales + (r0 + r) * blocks, zr, k, blocks, block, static_cast<int>(bits), w + r * ldw);
      }
#if MS_SIMD_DISPATCH
      if (own) {
        nbits_panel_products(w, rows, ldw, at, mp, k, yt);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < rows; ++j) y[i * n + r0 + j] = yt[j * mp + i];
        continue;
      }
#endif
      // y[m, rows] (leading dim n) = A [m, k] x W_panel^T (W_panel [rows, k]).
      if (dnnl_sgemm('N', 'T', m, rows, k, 1.f, av, k, w, k, 0.f, y + r0, n) != dnnl_success) {
#pragma omp atomic write
        failed = true;
      }
    }
  }
  if (failed) return ctx.fail("oneDNN's sgemm failed on a " + to_string(m) + " x " + to_string(k) + " product");
  return Status::ok();
}

}  // namespace

Status matmul_nbits_kernel(runtime::KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  const int64_t k = ctx.node().attr_int("K", 0), n = ctx.node().attr_int("N", 0);
  const int64_t bits = ctx.node().attr_int("bits", 4), block = ctx.node().attr_int("block_size", 0);
  if (k <= 0 || n <= 0 || (bits != 4 && bits != 8) || block < 16)
    return ctx.fail("attributes K = " + to_string(k) + ", N = " + to_string(n) + ", bits = " + to_string(bits) +
                    ", block_size = " + to_string(block) + " do not describe a quantized matrix");
  const int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
  if (b.dtype() != DType::U8 || b.numel() != n * blocks * blob)
    return ctx.fail("B " + shape_to_string(b.shape()) + " must hold N x blocks x blob = " + to_string(n) + " x " +
                    to_string(blocks) + " x " + to_string(blob) + " bytes");
  if (a.rank() < 1 || a.dim(a.rank() - 1) != k)
    return ctx.fail("A " + shape_to_string(a.shape()) + " must end in K = " + to_string(k));
  if (ctx.input(2).numel() != n * blocks)
    return ctx.fail("scales has " + to_string(ctx.input(2).numel()) + " values, N x blocks is " +
                    to_string(n * blocks));
  // f32 scales and A are read in place; other float types through an f32 copy.
  std::vector<float> scales_copy, a_copy;
  if (ctx.input(2).dtype() != DType::F32) scales_copy = floats_of(ctx, 2);
  if (a.dtype() != DType::F32) a_copy = floats_of(ctx, 0);
  const float* scales = scales_copy.empty() ? ctx.input(2).data<float>() : scales_copy.data();
  const float* av = a_copy.empty() ? a.data<float>() : a_copy.data();
  const int64_t zp_row = (blocks * bits + 7) / 8;  // packed zero-point bytes per row
  const uint8_t* zp = nullptr;
  if (ctx.has_input(3)) {
    if (ctx.input(3).dtype() != DType::U8 || ctx.input(3).numel() != n * zp_row)
      return ctx.fail("zero_points must be " + to_string(n * zp_row) + " uint8 values (N x ceil(blocks x bits / 8))");
    zp = ctx.input(3).data<uint8_t>();
  }
  if (ctx.has_input(4)) return ctx.unsupported_case("input 4 (g_idx, act-order) is not supported");
  MS_RETURN_IF_ERROR(check_vector(ctx, 5, "bias", n));
  // Panels of W's rows [rows, K] in f32, (q - zero point) x scale block by block, each multiplied
  // at once while it is in cache: the whole f32 matrix (8x the 4-bit one) never exists.
  const uint8_t* q = b.data<uint8_t>();
  const std::vector<float> bias = floats_of(ctx, 5);
  const int64_t m = a.numel() / k;
  Shape ys = a.shape();
  ys.back() = n;
  // The result straight into an f32 output; through a copy into another type.
  std::vector<float> y_copy;
  float* y = nullptr;
  if (a.dtype() == DType::F32) {
    MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::F32, ys));
    y = out->data<float>();
  } else {
    y_copy.resize(static_cast<size_t>(m * n));
    y = y_copy.data();
  }
  const bool rows_path = bits == 4 && k % block == 0 && m <= 4;
  // accuracy_level 4 asks for ONNX Runtime's int8 compute (A quantized per block); elsewhere f32.
  const bool int8_rows = rows_path && ctx.node().attr_int("accuracy_level", 0) == 4;
  if (int8_rows)
    matmul_q4_rows_int8(av, m, k, n, block, q, scales, zp, zp_row, y);
  else if (rows_path)
    matmul_q4_rows(av, m, k, n, block, q, scales, zp, zp_row, y);
  else
    MS_RETURN_IF_ERROR(matmul_nbits_panels(ctx, av, m, {q, scales, zp, k, n, bits, block, zp_row}, y));
  if (!bias.empty())
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) y[i * n + j] += bias[static_cast<size_t>(j)];
  if (!y_copy.empty()) MS_RETURN_IF_ERROR(write_output(ctx, 0, a.dtype(), ys, y_copy));
  ctx.set_impl(int8_rows ? "q4_rows_int8" : rows_path ? "q4_rows" : "dequantize+sgemm");
  return Status::ok();
}

Status gather_block_quantized_kernel(runtime::KernelContext& ctx) {
  const Tensor &data = ctx.input(0), &idx = ctx.input(1), &sc = ctx.input(2);
  const bool packed = data.dtype() == DType::U8;
  const int64_t bits = ctx.node().attr_int("bits", 4), block = ctx.node().attr_int("block_size", 128);
  const int64_t rows = data.dim(0), per_byte = packed ? 8 / bits : 1, d = data.dim(1) * per_byte;
  const int64_t blocks = (d + block - 1) / block;
  if (sc.numel() != rows * blocks)
    return ctx.fail("scales has " + to_string(sc.numel()) + " values, rows x blocks is " + to_string(rows * blocks));
  const Tensor* zp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const int64_t zp_row = packed ? (blocks + per_byte - 1) / per_byte : blocks;
  if (zp && zp->numel() != rows * zp_row)
    return ctx.fail("zero_points has " + to_string(zp->numel()) + " values, expected " + to_string(rows * zp_row));
  const std::vector<float> scales = floats_of(ctx, 2);
  const int default_zero = packed ? 1 << (bits - 1) : 0;
  const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  std::vector<float> out(static_cast<size_t>(idx.numel() * d));
  for (int64_t i = 0; i < idx.numel(); ++i) {
    int64_t r = idx.at_int(i);
    if (r < 0) r += rows;
    if (r < 0 || r >= rows)
      return ctx.fail("index " + to_string(idx.at_int(i)) + " is out of range for " + to_string(rows) + " rows");
    float* o = out.data() + i * d;
    for (int64_t j = 0; j < d; ++j) {
      const int64_t kb = j / block;
      int64_t q, zero = default_zero;
      if (packed) {
        const uint8_t byte = data.data<uint8_t>()[r * data.dim(1) + j / per_byte];
        q = (byte >> ((j % per_byte) * bits)) & mask;
        if (zp) zero = (zp->data<uint8_t>()[r * zp_row + kb / per_byte] >> ((kb % per_byte) * bits)) & mask;
      } else {
        q = data.at_int(r * d + j);
        if (zp) zero = zp->at_int(r * blocks + kb);
      }
      o[j] = static_cast<float>(q - zero) * scales[static_cast<size_t>(r * blocks + kb)];
    }
  }
  Shape ys = idx.shape();
  ys.push_back(d);
  MS_RETURN_IF_ERROR(write_output(ctx, 0, sc.dtype(), ys, out));
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace ms::cpu::contrib

#pragma GCC diagnostic pop
