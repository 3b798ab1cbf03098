// The C library's float functions declared as having SIMD variants (glibc's libmvec: _ZGVbN4v_expf,
// _ZGVdN8v_expf, _ZGVeN16v_expf, ...), so loops marked `omp simd` that call them vectorize: on
// x86-64 the elementwise loops of the op table (ops/elementwise_math.h) call expf, log1pf, tanhf,
// erff... once per element, and the scalar calls left those loops ~10x slower than vectorized ones
// (tanhf over 1M floats: 13.7 ms scalar, 0.8 ms through the AVX-512 variant, on one core). glibc
// declares these itself only under -ffast-math (bits/math-vector.h); the variants are within 4 ulp
// of the scalar functions (elementwise_table_test holds eager and fused loops to that), and libm.so
// pulls libmvec in as needed. GCC on x86-64 with glibc 2.35 or later (2.22 has only exp, log, sin,
// cos, pow); off under the sanitizers, like the SIMD clones.
//
// Include this only in the elementwise kernels' files, before any loop that should use it: other
// kernels keep the scalar functions' exact results.
#pragma once

#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define MS_SIMD_MATH 1
extern "C" {
#define MS_SIMD_MATH_DECL(f) __attribute__((simd("notinbranch"))) float f(float) noexcept;
MS_SIMD_MATH_DECL(expf)
MS_SIMD_MATH_DECL(logf)
MS_SIMD_MATH_DECL(expm1f)
MS_SIMD_MATH_DECL(log1pf)
MS_SIMD_MATH_DECL(tanhf)
MS_SIMD_MATH_DECL(erff)
MS_SIMD_MATH_DECL(erfcf)
MS_SIMD_MATH_DECL(sinf)
MS_SIMD_MATH_DECL(cosf)
MS_SIMD_MATH_DECL(tanf)
MS_SIMD_MATH_DECL(asinf)
MS_SIMD_MATH_DECL(acosf)
MS_SIMD_MATH_DECL(atanf)
MS_SIMD_MATH_DECL(sinhf)
MS_SIMD_MATH_DECL(coshf)
MS_SIMD_MATH_DECL(asinhf)
MS_SIMD_MATH_DECL(acoshf)
MS_SIMD_MATH_DECL(atanhf)
#undef MS_SIMD_MATH_DECL
}
#else
#define MS_SIMD_MATH 0
#endif
