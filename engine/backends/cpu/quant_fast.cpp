// The QDQ models' common case of QuantizeLinear and DequantizeLinear: f32 <-> uint8/int8 with one
// scale and zero point for the whole tensor, as straight loops the compiler vectorizes, across the
// OpenMP team for large tensors. Same results as the general loops in quant.cpp: the quotient x / s
// in float, rounded half to even, plus the zero point, saturated; (x - zp) * s in float.
#include <cmath>
#include <vector>

#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/quant_internal.h"
#include "engine/backends/cpu/simd_clones.h"

namespace ms::cpu::quant {
namespace {

// Round half to even of |v| < 2^22 without a rounding instruction (plain SSE2 vectorizes it): adding
// and subtracting 1.5 * 2^23 leaves the nearest integer under the default rounding mode.
inline float rne(float v) {
  constexpr float kMagic = 12582912.f;  // the build has no -ffast-math, so this is not folded away
  return (v + kMagic) - kMagic;
}

// The loops over [b, e), inlined into a clone per instruction set (MS_SIMD_CLONES): the baseline
// x86-64 build vectorized them 4 lanes wide, and the QDQ transformer encoder's 743 per-tensor
// Quantize/DequantizeLinear nodes took a quarter of its run.
// One quotient x / s to Q: clamped to [lo_v, hi_v] (beyond them it saturates the same; NaN to the
// low end), rounded half to even, plus the zero point, saturated. ew::quantize_dequantize (a fused
// chain's QuantizeDequantize link) computes the same steps in float; written through it, with float
// clamps, this loop ran 22% slower (50 against 62 us for 393 K values at two threads).
template <class Q> [[gnu::always_inline]] inline Q quantize_one(float v, float lo_v, float hi_v, int32_t z) {
  constexpr int32_t lo = std::is_same_v<Q, uint8_t> ? 0 : -128, hi = std::is_same_v<Q, uint8_t> ? 255 : 127;
  v = v >= lo_v ? v : lo_v;
  v = v <= hi_v ? v : hi_v;
  int32_t q = static_cast<int32_t>(rne(v)) + z;
  q = q < lo ? lo : q;
  q = q > hi ? hi : q;
  return static_cast<Q>(q);
}

template <class Q>
[[gnu::always_inline]] inline void quantize_range(const float* __restrict x, Q* __restrict y, int64_t b, int64_t e,
                                                  float s, float lo_v, float hi_v, int32_t z) {
#pragma omp simd  // GCC's -O2 cost model leaves a loop with a remainder scalar
  for (int64_t i = b; i < e; ++i) y[i] = quantize_one<Q>(x[i] / s, lo_v, hi_v, z);
}
MS_SIMD_CLONES void quantize_range_u8(const float* x, uint8_t* y, int64_t b, int64_t e, float s, float lo, float hi,
                                      int32_t z) {
  quantize_range(x, y, b, e, s, lo, hi, z);
}
MS_SIMD_CLONES void quantize_range_s8(const float* x, int8_t* y, int64_t b, int64_t e, float s, float lo, float hi,
                                      int32_t z) {
  quantize_range(x, y, b, e, s, lo, hi, z);
}

template <class Q>
[[gnu::always_inline]] inline void dequantize_range(const Q* __restrict x, float* __restrict y, int64_t b, int64_t e,
                                                    float s, float fzp) {
#pragma omp simd
  for (int64_t i = b; i < e; ++i) y[i] = (static_cast<float>(x[i]) - fzp) * s;
}
MS_SIMD_CLONES void dequantize_range_u8(const uint8_t* x, float* y, int64_t b, int64_t e, float s, float fzp) {
  dequantize_range(x, y, b, e, s, fzp);
}
MS_SIMD_CLONES void dequantize_range_s8(const int8_t* x, float* y, int64_t b, int64_t e, float s, float fzp) {
  dequantize_range(x, y, b, e, s, fzp);
}

// A row whose every element has its own scale and zero point (per-channel weights quantized along
// their last axis): y[j] = (x[j] - zp[j]) * s[j].
template <class Q>
[[gnu::always_inline]] inline void dequantize_cols(const Q* __restrict x, float* __restrict y, int64_t n,
                                                   const float* __restrict s, const float* __restrict fzp) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) y[j] = (static_cast<float>(x[j]) - fzp[j]) * s[j];
}
MS_SIMD_CLONES void dequantize_cols_u8(const uint8_t* x, float* y, int64_t n, const float* s, const float* fzp) {
  dequantize_cols(x, y, n, s, fzp);
}
MS_SIMD_CLONES void dequantize_cols_s8(const int8_t* x, float* y, int64_t n, const float* s, const float* fzp) {
  dequantize_cols(x, y, n, s, fzp);
}

// y = QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)), every step in float32 as the three
// ops compute it (the same roundings, so the same bytes): no FMA contraction of the products and
// their sum in the AVX2 and AVX-512 clones.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
template <class Q>
[[gnu::always_inline]] inline void qadd_range(const Q* __restrict a, const Q* __restrict b, Q* __restrict y, int64_t n,
                                              const float* p, int32_t zy) {
  const float sa = p[0], za = p[1], sb = p[2], zb = p[3], sy = p[4], lo_v = p[5], hi_v = p[6];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float s = (static_cast<float>(a[i]) - za) * sa + (static_cast<float>(b[i]) - zb) * sb;
    y[i] = quantize_one<Q>(s / sy, lo_v, hi_v, zy);
  }
}
MS_SIMD_CLONES void qadd_range_u8(const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n, const float* p,
                                  int32_t zy) {
  qadd_range(a, b, y, n, p, zy);
}
MS_SIMD_CLONES void qadd_range_s8(const int8_t* a, const int8_t* b, int8_t* y, int64_t n, const float* p, int32_t zy) {
  qadd_range(a, b, y, n, p, zy);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

template <class Q> void quantize(const float* x, Q* y, int64_t n, float s, int32_t zp) {
  constexpr int32_t lo = std::is_same_v<Q, uint8_t> ? 0 : -128, hi = std::is_same_v<Q, uint8_t> ? 255 : 127;
  // Anything beyond these saturates the same; NaN goes to the low end.
  const float flo = static_cast<float>(lo - zp - 1), fhi = static_cast<float>(hi - zp + 1);
  elementwise::parallel_chunks(n, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<Q, uint8_t>)
      quantize_range_u8(x, y, b, e, s, flo, fhi, zp);
    else
      quantize_range_s8(x, y, b, e, s, flo, fhi, zp);
  });
}

template <class Q> void dequantize(const Q* x, float* y, int64_t n, float s, int32_t zp) {
  const float fzp = static_cast<float>(zp);
  elementwise::parallel_chunks(n, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<Q, uint8_t>)
      dequantize_range_u8(x, y, b, e, s, fzp);
    else
      dequantize_range_s8(x, y, b, e, s, fzp);
  });
}

// x [outer, dim, inner] with one scale and zero point per index of dim.
template <class Q>
void dequantize_axis(const Q* x, float* y, int64_t outer, int64_t dim, int64_t inner, const float* s,
                     const std::vector<float>& fzp) {
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (outer * dim > (1 << 16))
    for (int64_t r = 0; r < outer; ++r) {
      if constexpr (std::is_same_v<Q, uint8_t>)
        dequantize_cols_u8(x + r * dim, y + r * dim, dim, s, fzp.data());
      else
        dequantize_cols_s8(x + r * dim, y + r * dim, dim, s, fzp.data());
    }
    return;
  }
#pragma omp parallel for schedule(static) if (outer * dim * inner > (1 << 16))
  for (int64_t ra = 0; ra < outer * dim; ++ra) {
    const auto a = static_cast<size_t>(ra % dim);
    if constexpr (std::is_same_v<Q, uint8_t>)
      dequantize_range_u8(x + ra * inner, y + ra * inner, 0, inner, s[a], fzp[a]);
    else
      dequantize_range_s8(x + ra * inner, y + ra * inner, 0, inner, s[a], fzp[a]);
  }
}

bool eight_bit(DType t) { return t == DType::U8 || t == DType::I8; }

// One f32 scale and (when given) one 8-bit zero point: the per-tensor case.
bool per_tensor(const runtime::KernelContext& ctx, DType zp_default) {
  if (ctx.node().attr_int("block_size", 0) != 0 || ctx.node().attr_int("precision", 0) != 0) return false;
  const Tensor& s = ctx.input(1);
  if (s.dtype() != DType::F32 || s.numel() != 1) return false;
  if (!ctx.has_input(2)) return zp_default == DType::U8;
  return ctx.input(2).numel() == 1 && eight_bit(ctx.input(2).dtype());
}

// One f32 scale and (when given) one zero point of x's type per index of `axis`: per-channel
// weights. The axis, normalized, or -1 when that is not the case.
int64_t per_axis(const runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (ctx.node().attr_int("block_size", 0) != 0 || x.rank() == 0) return -1;
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis >= x.rank()) return -1;
  const Tensor& s = ctx.input(1);
  if (s.dtype() != DType::F32 || s.rank() != 1 || s.numel() != x.dim(axis)) return -1;
  if (ctx.has_input(2) && (ctx.input(2).dtype() != x.dtype() || ctx.input(2).shape() != s.shape())) return -1;
  return axis;
}

}  // namespace

Expected<bool> quantize_linear_fast(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t od = ctx.node().attr_int("output_dtype", 0);
  if (x.dtype() != DType::F32 || od != 0 || !per_tensor(ctx, DType::U8)) return false;
  const DType out = ctx.has_input(2) ? ctx.input(2).dtype() : DType::U8;
  const int32_t zp = ctx.has_input(2) ? static_cast<int32_t>(ctx.input(2).at_int(0)) : 0;
  const float s = ctx.input(1).data<float>()[0];
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, out, x.shape()));
  if (out == DType::U8)
    quantize(x.data<float>(), y->data<uint8_t>(), x.numel(), s, zp);
  else
    quantize(x.data<float>(), y->data<int8_t>(), x.numel(), s, zp);
  ctx.set_impl("loop:per-tensor");
  return true;
}

Expected<bool> dequantize_linear_fast(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t od = ctx.node().attr_int("output_dtype", 0);
  if (!eight_bit(x.dtype()) || (od != 0 && od != 1)) return false;
  if (ctx.has_input(2) && ctx.input(2).dtype() != x.dtype()) return false;
  if (per_tensor(ctx, x.dtype())) {
    const int32_t zp = ctx.has_input(2) ? static_cast<int32_t>(ctx.input(2).at_int(0)) : 0;
    const float s = ctx.input(1).data<float>()[0];
    MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, x.shape()));
    if (x.dtype() == DType::U8)
      dequantize(x.data<uint8_t>(), y->data<float>(), x.numel(), s, zp);
    else
      dequantize(x.data<int8_t>(), y->data<float>(), x.numel(), s, zp);
    ctx.set_impl("loop:per-tensor");
    return true;
  }
  const int64_t axis = per_axis(ctx);
  if (axis < 0) return false;
  const int64_t dim = x.dim(axis), inner = numel(Shape(x.shape().begin() + axis + 1, x.shape().end()));
  const int64_t outer = dim * inner > 0 ? x.numel() / (dim * inner) : 0;
  std::vector<float> fzp(static_cast<size_t>(dim), 0.f);
  if (ctx.has_input(2))
    for (int64_t a = 0; a < dim; ++a) fzp[static_cast<size_t>(a)] = static_cast<float>(ctx.input(2).at_int(a));
  const float* s = ctx.input(1).data<float>();
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, x.shape()));
  if (x.dtype() == DType::U8)
    dequantize_axis(x.data<uint8_t>(), y->data<float>(), outer, dim, inner, s, fzp);
  else
    dequantize_axis(x.data<int8_t>(), y->data<float>(), outer, dim, inner, s, fzp);
  ctx.set_impl("loop:per-axis");
  return true;
}

Status fused_qlinear_add(runtime::KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const DType t = ctx.input(7).dtype();
  if (a.dtype() != t || b.dtype() != t || a.shape() != b.shape())
    return ctx.fail("a, b and y_zero_point must be one 8-bit type and a and b one shape");
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}})
    if (ctx.input(i).dtype() != DType::F32 || ctx.input(i).numel() != 1)
      return ctx.fail("input " + std::to_string(i) + " must be one float32 scale");
  for (size_t i : {size_t{2}, size_t{5}, size_t{7}})
    if (ctx.input(i).numel() != 1) return ctx.fail("input " + std::to_string(i) + " must be one zero point");
  constexpr int32_t kLo[2] = {0, -128}, kHi[2] = {255, 127};
  const int s8 = t == DType::I8 ? 1 : 0;
  const auto zy = static_cast<int32_t>(ctx.input(7).at_int(0));
  // The QuantizeLinear's clamp bounds: anything beyond saturates the same; NaN goes to the low end.
  const float p[7] = {ctx.input(1).data<float>()[0],       static_cast<float>(ctx.input(2).at_int(0)),
                      ctx.input(4).data<float>()[0],       static_cast<float>(ctx.input(5).at_int(0)),
                      ctx.input(6).data<float>()[0],       static_cast<float>(kLo[s8] - zy - 1),
                      static_cast<float>(kHi[s8] - zy + 1)};
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, t, a.shape()));
  elementwise::parallel_chunks(a.numel(), [&](int64_t lo, int64_t hi) {
    if (s8)
      qadd_range_s8(a.data<int8_t>() + lo, b.data<int8_t>() + lo, y->data<int8_t>() + lo, hi - lo, p, zy);
    else
      qadd_range_u8(a.data<uint8_t>() + lo, b.data<uint8_t>() + lo, y->data<uint8_t>() + lo, hi - lo, p, zy);
  });
  ctx.set_impl("loop");
  return Status::ok();
}

}  // namespace ms::cpu::quant
