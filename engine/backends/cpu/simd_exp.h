// e^x where x <= 0 (softmax's exponentials, after the row's maximum is taken off), Sigmoid and Swish
// (x sigmoid(alpha x), SiLU at alpha 1) over f32 in explicit vectors of the CPU's width
// (simd_clones.h: simd_width()), with an exp of their own: a degree-6 polynomial on the
// reduced argument and the power of two put in by integer arithmetic. The C library's vector expf
// (simd_math.h) and oneDNN 2.6's eltwise_swish both spent ~0.5 ns a value at one thread; this takes
// ~0.3 ns, within 4 ulp of the definition in double (subnormal results within the bits they have),
// the infinities and NaN as the scalar forms in ops/elementwise_math.h give them. Gelu's erf form
// takes an erfc made of that exp and a fitted polynomial, within 6 ulp: on AVX2 a matmul's GELU tail
// over 605k values cost ~0.4 ms where the library's vector erfcf (table gathers) took ~2.8.
#pragma once

#include <cstdint>

namespace ms::cpu {

// x[i] = e^(x[i] - shift) in place, returning their sum: a softmax row with `shift` its maximum
// (x[i] - shift <= 0; -inf gives 0, NaN stays). Within 2 ulp of e^(x - shift) in double.
float exp_shifted_sum_f32(float* x, int64_t n, float shift);
// The largest of x[0 .. n) that is not NaN (-inf for none), as std::max over them gives it.
float max_f32(const float* x, int64_t n);
// y[i] = sigmoid(x[i]); x may be y.
void sigmoid_f32(const float* x, float* y, int64_t n);
// y[i] = Gelu(x[i]) in its erf form, 0.5 x erfc(-x / sqrt 2); x may be y.
void gelu_erf_f32(const float* x, float* y, int64_t n);
// y[i] = x[i] sigmoid(alpha x[i]); x may be y.
void swish_f32(const float* x, float* y, int64_t n, float alpha);

}  // namespace ms::cpu
