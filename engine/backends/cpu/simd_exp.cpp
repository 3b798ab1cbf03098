#include "engine/backends/cpu/simd_exp.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

#include "engine/backends/cpu/simd_clones.h"

#if MS_SIMD_DISPATCH
#include <immintrin.h>
#endif

// The vector helpers below are always inlined into the functions of each instruction set: no call
// passes a vector, whatever GCC says of the ABI of a vector return outside those.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ms::cpu {
namespace {

typedef int32_t ivec16 __attribute__((vector_size(64)));
typedef int32_t ivec8 __attribute__((vector_size(32)));
typedef int32_t ivec4 __attribute__((vector_size(16)));
template <class V> struct IntVec;
template <> struct IntVec<vec16> { using type = ivec16; };
template <> struct IntVec<vec8> { using type = ivec8; };
template <> struct IntVec<vec4> { using type = ivec4; };

// e^t for t <= 0 (or NaN). Below -104 e^t rounds to 0 in f32, and it does here: the argument is
// clamped there, and 2^n (n down to -150) is applied as two normal factors, so a subnormal result
// is rounded once. t = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, Cody and Waite), e^r by the
// Cephes expf polynomial.
template <class V> [[gnu::always_inline]] inline V exp_nonpositive(V t) {
  using VI = typename IntVec<V>::type;
  const V zero{};
  t = t < -104.f ? zero - 104.f : t;
  const V shifter = zero + 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
  V n = (t * 1.44269504088896341f + shifter) - shifter;
  n = n != n ? zero : n;  // NaN: any exponent (the polynomial is NaN), but a defined conversion
  V r = t - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V p = zero + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.f;
  const VI ni = __builtin_convertvector(n, VI);  // in [-150, 0]
  const VI half = ni >> 1;
  const V s1 = std::bit_cast<V>((half + 127) << 23);
  const V s2 = std::bit_cast<V>((ni - half + 127) << 23);
  return p * s1 * s2;
}

// sigmoid(a) in the stable form e / (1 + e) or 1 / (1 + e), e = e^-|a|.
template <class V> [[gnu::always_inline]] inline V sigmoid_v(V a) {
  using VI = typename IntVec<V>::type;
  const VI sign = VI{} + static_cast<int32_t>(0x80000000u);
  const V e = exp_nonpositive(std::bit_cast<V>(std::bit_cast<VI>(a) | sign));  // -|a|
  const V one = V{} + 1.f;
  return (a >= 0.f ? one : e) / (one + e);
}

// y[i] = f(x[i]) a vector at a time; the tail through one whole vector too, so a value's result does
// not depend on its place.
template <class V, class F> [[gnu::always_inline]] inline void map_vectors(const float* x, float* y, int64_t n, F f) {
  constexpr int L = kLanes<V>;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V v;
    std::memcpy(&v, x + i, sizeof(V));
    v = f(v);
    std::memcpy(y + i, &v, sizeof(V));
  }
  if (i == n) return;
  float buf[L] = {};
  std::copy(x + i, x + n, buf);
  V v;
  std::memcpy(&v, buf, sizeof(V));
  v = f(v);
  std::memcpy(buf, &v, sizeof(V));
  std::copy(buf, buf + (n - i), y + i);
}

template <class V, bool kSwish>
[[gnu::always_inline]] inline void sigmoid_loop(const float* x, float* y, int64_t n, float alpha) {
  map_vectors<V>(
      x, y,
      n, [alpha](V v) __attribute__((always_inline)) { return kSwish ? v * sigmoid_v(v * alpha) : sigmoid_v(v); });
}

// Gelu's erf form, 0.5 x erfc(z) with z = -x / sqrt 2 (no cancellation in the negative tail), with
// erfc(|z|) = e^-z^2 g(|z|): z^2 split exactly into hi + lo (Dekker), e^-hi by exp_nonpositive and
// e^-lo as 1 - lo; g(a) = erfc(a) e^(a^2) as t Q(t), t = 1 / (1 + a / 2) and Q of degree 10 fitted to
// relative error 2e-8 over a in [0, 10.5] (erfc is 0 in f32 past it). For z < 0, erfc(z) = 2 - erfc(-z).
// The library's vector erfcf (gathers from tables) took ~4.6 ns a value in a matmul's tail on AVX2.
template <class V> [[gnu::always_inline]] inline V gelu_erf_v(V x) {
  using VI = typename IntVec<V>::type;
  const V zero{};
  const V z = x * -0.70710678118654752440f;
  V a = z < 0.f ? -z : z;
  a = a < 10.5f ? a : zero + 10.5f;  // NaN: 10.5 here, and NaN again below through x
  const V hi = a * a;
  const V ah = std::bit_cast<V>(std::bit_cast<VI>(a) & static_cast<int32_t>(0xFFFFF000u));  // 12 bits
  const V al = a - ah;
  const V lo = ((ah * ah - hi) + 2.f * ah * al) + al * al;  // a^2 = hi + lo exactly
  V e = exp_nonpositive(zero - hi);
  e = e - e * lo;
  const V t = 1.f / (1.f + 0.5f * a);
  V q = zero + 3.671161458e-02f;
  q = q * t - 1.966009289e-01f;
  q = q * t + 3.957851529e-01f;
  q = q * t - 3.109056354e-01f;
  q = q * t - 1.876539551e-03f;
  q = q * t + 2.288176306e-02f;
  q = q * t + 6.009743363e-02f;
  q = q * t + 1.841634661e-01f;
  q = q * t + 2.454257756e-01f;
  q = q * t + 2.822283506e-01f;
  q = q * t + 2.820895314e-01f;
  e = e * (t * q);
  const V c = z > 0.f ? e : 2.f - e;
  const V xm = x < -30.f ? zero - 30.f : x;  // -inf: -30 * 0 = -0, not NaN
  return 0.5f * xm * c;
}

template <class V> [[gnu::always_inline]] inline void gelu_erf_loop(const float* x, float* y, int64_t n) {
  map_vectors<V>(
      x, y, n, [](V v) __attribute__((always_inline)) { return gelu_erf_v(v); });
}

#if MS_SIMD_DISPATCH
MS_TARGET_AVX512 void gelu_erf_avx512(const float* x, float* y, int64_t n) { gelu_erf_loop<vec16>(x, y, n); }
MS_TARGET_AVX2 void gelu_erf_avx2(const float* x, float* y, int64_t n) { gelu_erf_loop<vec8>(x, y, n); }
#endif

#if MS_SIMD_DISPATCH
// The same in AVX-512 intrinsics: the vector extensions' form of it compiled to ~0.5 ns a value,
// this to ~0.3 (vscalefps puts in 2^n with one rounding, subnormal results included).
[[gnu::always_inline]] MS_TARGET_AVX512 inline __m512 exp_nonpositive_avx512(__m512 t) {
  t = _mm512_maskz_max_ps(0xFFFF, _mm512_set1_ps(-104.f), t);  // NaN: the second operand, so NaN stays
  const __m512 n = _mm512_maskz_roundscale_ps(0xFFFF, _mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return _mm512_maskz_scalef_ps(0xFFFF, p, n);
}

template <bool kSwish> [[gnu::always_inline]] MS_TARGET_AVX512 inline __m512 sigmoid_avx512_v(__m512 v, __m512 alpha) {
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 a = kSwish ? _mm512_mul_ps(v, alpha) : v;
  const __m512 e = exp_nonpositive_avx512(_mm512_or_ps(a, _mm512_set1_ps(-0.f)));  // e^-|a|
  const __mmask16 pos = _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_GE_OQ);
  const __m512 s = _mm512_div_ps(_mm512_mask_blend_ps(pos, e, one), _mm512_add_ps(one, e));
  return kSwish ? _mm512_mul_ps(v, s) : s;
}

template <bool kSwish> MS_TARGET_AVX512 void sigmoid_loop_avx512(const float* x, float* y, int64_t n, float alpha) {
  const __m512 al = _mm512_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, sigmoid_avx512_v<kSwish>(_mm512_loadu_ps(x + i), al));
  if (i == n) return;
  const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
  _mm512_mask_storeu_ps(y + i, m, sigmoid_avx512_v<kSwish>(_mm512_maskz_loadu_ps(m, x + i), al));
}

MS_TARGET_AVX512 float exp_sum_avx512(float* x, int64_t n, float shift) {
  const __m512 sh = _mm512_set1_ps(shift);
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp_nonpositive_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + i), sh));
    _mm512_storeu_ps(x + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 e = exp_nonpositive_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), sh));
    _mm512_mask_storeu_ps(x + i, m, e);
    acc = _mm512_mask_add_ps(acc, m, acc, e);
  }
  alignas(64) float lanes[16];  // (_mm512_reduce_add_ps: GCC 12 warns of its undefined halves)
  _mm512_store_ps(lanes, acc);
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

// Four accumulators (vmaxps' latency); max(x, acc) keeps acc where x is NaN.
MS_TARGET_AVX512 float max_avx512(const float* x, int64_t n) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 a0 = ninf, a1 = ninf, a2 = ninf, a3 = ninf;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_maskz_max_ps(0xFFFF, _mm512_loadu_ps(x + i), a0);
    a1 = _mm512_maskz_max_ps(0xFFFF, _mm512_loadu_ps(x + i + 16), a1);
    a2 = _mm512_maskz_max_ps(0xFFFF, _mm512_loadu_ps(x + i + 32), a2);
    a3 = _mm512_maskz_max_ps(0xFFFF, _mm512_loadu_ps(x + i + 48), a3);
  }
  for (; i + 16 <= n; i += 16) a0 = _mm512_maskz_max_ps(0xFFFF, _mm512_loadu_ps(x + i), a0);
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    a1 = _mm512_maskz_max_ps(0xFFFF, _mm512_mask_loadu_ps(ninf, m, x + i), a1);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(
      lanes, _mm512_maskz_max_ps(0xFFFF, _mm512_maskz_max_ps(0xFFFF, a0, a1), _mm512_maskz_max_ps(0xFFFF, a2, a3)));
  float mx = lanes[0];
  for (float v : lanes) mx = std::max(mx, v);
  return mx;
}

MS_TARGET_AVX512 void sigmoid_avx512(const float* x, float* y, int64_t n, float alpha, bool swish) {
  swish ? sigmoid_loop_avx512<true>(x, y, n, alpha) : sigmoid_loop_avx512<false>(x, y, n, alpha);
}
#endif
template <class V> [[gnu::always_inline]] inline float exp_sum_loop(float* x, int64_t n, float shift) {
  constexpr int L = kLanes<V>;
  V acc{};
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V v;
    std::memcpy(&v, x + i, sizeof(V));
    v = exp_nonpositive(v - shift);
    std::memcpy(x + i, &v, sizeof(V));
    acc += v;
  }
  float sum = 0;
  for (int l = 0; l < L; ++l) sum += acc[l];
  if (i == n) return sum;
  float buf[L];
  std::fill(buf, buf + L, -std::numeric_limits<float>::infinity());  // e^-inf = 0: adds nothing
  std::copy(x + i, x + n, buf);
  V v;
  std::memcpy(&v, buf, sizeof(V));
  v = exp_nonpositive(v - shift);
  std::memcpy(buf, &v, sizeof(V));
  std::copy(buf, buf + (n - i), x + i);
  for (int l = 0; l < L; ++l) sum += buf[l];
  return sum;
}

MS_TARGET_AVX2 float exp_sum_avx2(float* x, int64_t n, float shift) { return exp_sum_loop<vec8>(x, n, shift); }
MS_TARGET_AVX2 void sigmoid_avx2(const float* x, float* y, int64_t n, float alpha, bool swish) {
  swish ? sigmoid_loop<vec8, true>(x, y, n, alpha) : sigmoid_loop<vec8, false>(x, y, n, alpha);
}

void run(const float* x, float* y, int64_t n, float alpha, bool swish) {
  const int width = simd_width();
#if MS_SIMD_DISPATCH
  if (width == 16) return sigmoid_avx512(x, y, n, alpha, swish);
  if (width == 8) return sigmoid_avx2(x, y, n, alpha, swish);
#endif
  swish ? sigmoid_loop<vec4, true>(x, y, n, alpha) : sigmoid_loop<vec4, false>(x, y, n, alpha);
}

}  // namespace

float exp_shifted_sum_f32(float* x, int64_t n, float shift) {
#if MS_SIMD_DISPATCH
  const int width = simd_width();
  if (width == 16) return exp_sum_avx512(x, n, shift);
  if (width == 8) return exp_sum_avx2(x, n, shift);
#endif
  return exp_sum_loop<vec4>(x, n, shift);
}

float max_f32(const float* x, int64_t n) {
#if MS_SIMD_DISPATCH
  if (simd_width() == 16) return max_avx512(x, n);
#endif
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  return mx;
}

void sigmoid_f32(const float* x, float* y, int64_t n) { run(x, y, n, 1.f, false); }
void swish_f32(const float* x, float* y, int64_t n, float alpha) { run(x, y, n, alpha, true); }

void gelu_erf_f32(const float* x, float* y, int64_t n) {
#if MS_SIMD_DISPATCH
  const int width = simd_width();
  if (width == 16) return gelu_erf_avx512(x, y, n);
  if (width == 8) return gelu_erf_avx2(x, y, n);
#endif
  gelu_erf_loop<vec4>(x, y, n);
}

}  // namespace ms::cpu
