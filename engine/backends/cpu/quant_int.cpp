// Integer matmul/conv kernels: MatMulInteger and ConvInteger (int32 results), QLinearMatMul and
// QLinearConv (int32 accumulation, then requantized as onnx/reference/ops/op_qlinear_*.py: the
// multiplier a_scale * b_scale / y_scale is computed in the scale type, applied in float64, plus the
// output zero point, rounded half to even and clipped).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "engine/backends/cpu/byte_transpose.h"
#include "engine/backends/cpu/nn_kernels.h"
#include "engine/backends/cpu/qconv_onednn.h"
#include "engine/backends/cpu/qmatmul_onednn.h"
#include "engine/backends/cpu/quant_internal.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/ops/fused.h"

namespace ms::cpu::quant {
namespace {

using std::to_string;

// Element i of an int8/uint8 tensor as int32.
inline int32_t int8_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::I8 ? static_cast<int32_t>(t.data<int8_t>()[i])
                                : static_cast<int32_t>(t.data<uint8_t>()[i]);
}

// A zero point (or scale) with one value, or `count` values (per row / column / channel), expanded
// to `count` entries; an absent input gives zeros.
Expected<std::vector<int32_t>> expand_zero_point(runtime::KernelContext& ctx, size_t i, int64_t count, const char* name,
                                                 const char* per) {
  std::vector<int32_t> out(static_cast<size_t>(count), 0);
  if (!ctx.has_input(i)) return out;
  const std::vector<int32_t> v = load_ints(ctx.input(i));
  if (v.size() == 1) {
    std::fill(out.begin(), out.end(), v[0]);
    return out;
  }
  if (static_cast<int64_t>(v.size()) != count)
    return ctx.fail(std::string(name) + " has " + to_string(v.size()) + " values, expected 1 or " + to_string(count) +
                    " (one per " + per + ")");
  return v;
}

Expected<std::vector<double>> expand_scale(runtime::KernelContext& ctx, size_t i, int64_t count, const char* name,
                                           const char* per) {
  const std::vector<double> v = load_reals(ctx.input(i));
  if (v.size() == 1) return std::vector<double>(static_cast<size_t>(count), v[0]);
  if (static_cast<int64_t>(v.size()) != count)
    return ctx.fail(std::string(name) + " has " + to_string(v.size()) + " values, expected 1 or " + to_string(count) +
                    " (one per " + per + ")");
  return v;
}

// From here to requantize_row_u8, no FMA contraction: the clones below (AVX2, AVX-512) would
// otherwise fuse acc * multiplier + zp and round differently from the reference loops.
#if defined(__GNUC__) && !defined(__clang__)  // clang builds have no clones (simd_clones.h)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

// Requantizes one int32 accumulator: rint(acc * multiplier + zp) clipped to the output type.
// Clamped first (NaN to the low end: past either end the result saturates the same), then rounded
// half to even by adding and subtracting 1.5 * 2^52: below SSE4.1 nearbyint is a library call per
// element, and this vectorizes.
inline int32_t requantize(int32_t acc, double multiplier, int32_t zp, int32_t lo, int32_t hi) {
  constexpr double kMagic = 6755399441055744.0;  // the build has no -ffast-math: not folded away
  double v = static_cast<double>(acc) * multiplier + static_cast<double>(zp);
  v = v >= lo - 1.0 ? v : lo - 1.0;
  v = v <= hi + 1.0 ? v : hi + 1.0;
  const auto r = static_cast<int32_t>((v + kMagic) - kMagic);
  return r < lo ? lo : r > hi ? hi : r;
}

// ---- batched matmul (numpy broadcasting) ----

struct MatmulPlan {
  int64_t m = 1, k = 1, n = 1;
  Shape out;
  std::vector<int64_t> a_off, b_off;  // per output batch: element offset of its A and B matrices
};

Expected<MatmulPlan> plan_matmul(runtime::KernelContext& ctx, const Shape& as, const Shape& bs) {
  if (as.empty() || bs.empty()) return ctx.fail("A and B must have rank >= 1");
  Shape a = as, b = bs;
  if (as.size() == 1) a.insert(a.begin(), 1);
  if (bs.size() == 1) b.push_back(1);
  MatmulPlan p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  if (b[b.size() - 2] != p.k)
    return ctx.fail("inner dims differ: A " + shape_to_string(as) + ", B " + shape_to_string(bs));
  const size_t batch = std::max(a.size(), b.size()) - 2;
  a.insert(a.begin(), batch + 2 - a.size(), 1);
  b.insert(b.begin(), batch + 2 - b.size(), 1);
  Shape bshape(batch);
  for (size_t i = 0; i < batch; ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      return ctx.fail("batch dims of A " + shape_to_string(as) + " and B " + shape_to_string(bs) + " do not broadcast");
    bshape[i] = a[i] == 1 ? b[i] : a[i];
  }
  const int64_t nb = numel(bshape);
  p.a_off.assign(static_cast<size_t>(nb), 0);
  p.b_off.assign(static_cast<size_t>(nb), 0);
  for (int64_t idx = 0; idx < nb; ++idx) {
    int64_t rest = idx, sa = p.m * p.k, sb = p.k * p.n;
    for (size_t d = batch; d-- > 0;) {
      const int64_t c = rest % bshape[d];
      rest /= bshape[d];
      p.a_off[static_cast<size_t>(idx)] += (a[d] == 1 ? 0 : c) * sa;
      p.b_off[static_cast<size_t>(idx)] += (b[d] == 1 ? 0 : c) * sb;
      sa *= a[d];
      sb *= b[d];
    }
  }
  p.out = bshape;
  if (as.size() > 1) p.out.push_back(p.m);
  if (bs.size() > 1) p.out.push_back(p.n);
  return p;
}

// acc[batch][M][N] = (A - za[row]) x (B - zb[col]) in int32.
void matmul_int32(const Tensor& a, const Tensor& b, const MatmulPlan& p, const std::vector<int32_t>& za,
                  const std::vector<int32_t>& zb, int32_t* acc) {
  const auto batches = static_cast<int64_t>(p.a_off.size());
  std::vector<int32_t> bm(static_cast<size_t>(p.k * p.n));
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t ao = p.a_off[static_cast<size_t>(bi)], bo = p.b_off[static_cast<size_t>(bi)];
    for (int64_t kk = 0; kk < p.k; ++kk)
      for (int64_t j = 0; j < p.n; ++j)
        bm[static_cast<size_t>(kk * p.n + j)] = int8_at(b, bo + kk * p.n + j) - zb[static_cast<size_t>(j)];
    int32_t* c = acc + bi * p.m * p.n;
#pragma omp parallel for schedule(static) if (p.m * p.n * p.k > (1 << 16))
    for (int64_t i = 0; i < p.m; ++i) {
      int32_t* row = c + i * p.n;
      std::fill(row, row + p.n, 0);
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const int32_t av = int8_at(a, ao + i * p.k + kk) - za[static_cast<size_t>(i)];
        const int32_t* brow = bm.data() + kk * p.n;
        for (int64_t j = 0; j < p.n; ++j) row[j] += av * brow[j];
      }
    }
  }
}

// acc = (A - za) x (B - zb): oneDNN's int8 matmul where B is a 2-D matrix (weights), else the loops.
Status matmul_accumulate(runtime::KernelContext& ctx, const Tensor& a, const Tensor& b, const MatmulPlan& p,
                         const std::vector<int32_t>& za, const std::vector<int32_t>& zb, int32_t* acc) {
  if (b.rank() == 2 && p.k > 0) {
    const Status s = int8_matmul_acc(ctx, a, a.numel() / p.k, b, za, zb, acc);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  matmul_int32(a, b, p, za, zb, acc);
  ctx.set_impl("loop");
  return Status::ok();
}

Status matmul_integer(runtime::KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  MS_ASSIGN_OR_RETURN(const MatmulPlan p, plan_matmul(ctx, a.shape(), b.shape()));
  MS_ASSIGN_OR_RETURN(const auto za, expand_zero_point(ctx, 2, p.m, "a_zero_point", "row of A"));
  MS_ASSIGN_OR_RETURN(const auto zb, expand_zero_point(ctx, 3, p.n, "b_zero_point", "column of B"));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::I32, p.out));
  return matmul_accumulate(ctx, a, b, p, za, zb, y->data<int32_t>());
}

// One row: y[j] = requantize(acc[j] + bias[j]) with multiplier m[j]. Cloned per instruction set
// (the baseline build ran the double arithmetic 2 lanes wide); every clone rounds as the
// reference loops do (no contraction, above).
template <class T>
[[gnu::always_inline]] inline void requantize_row(const int32_t* __restrict acc, const double* __restrict m,
                                                  const int32_t* __restrict bias, int64_t n, int32_t zy,
                                                  T* __restrict y) {
  constexpr int32_t lo = std::is_same_v<T, int8_t> ? -128 : 0, hi = std::is_same_v<T, int8_t> ? 127 : 255;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const auto sum = static_cast<uint32_t>(acc[j]) + static_cast<uint32_t>(bias[j]);  // wraps
    y[j] = static_cast<T>(requantize(static_cast<int32_t>(sum), m[j], zy, lo, hi));
  }
}
MS_SIMD_CLONES void requantize_row_clone_s8(const int32_t* acc, const double* m, const int32_t* bias, int64_t n,
                                            int32_t zy, int8_t* y) {
  requantize_row(acc, m, bias, n, zy, y);
}
MS_SIMD_CLONES void requantize_row_clone_u8(const int32_t* acc, const double* m, const int32_t* bias, int64_t n,
                                            int32_t zy, uint8_t* y) {
  requantize_row(acc, m, bias, n, zy, y);
}

#if MS_SIMD_DISPATCH
// The same in explicit AVX2 vectors, 8 accumulators a step: GCC 12 left requantize_row scalar, with
// a branch per clamp, even in the AVX2 clone (a third of resnet18_qdq's time at one thread). Same
// arithmetic: int32 sum (wrapping), double product, + zp, clamped (NaN to the low end: maxpd returns
// its second operand), rounded half to even, saturated to T.
template <class T>
MS_TARGET_AVX2 void requantize_row_avx2(const int32_t* acc, const double* m, const int32_t* bias, int64_t n, int32_t zy,
                                        T* y) {
  constexpr int32_t lo = std::is_same_v<T, int8_t> ? -128 : 0, hi = std::is_same_v<T, int8_t> ? 127 : 255;
  const __m256d vlo = _mm256_set1_pd(lo), vhi = _mm256_set1_pd(hi), vz = _mm256_set1_pd(zy);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i s = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j)),
                                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + j)));
    __m256d a0 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(s));
    __m256d a1 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(s, 1));
    a0 = _mm256_add_pd(_mm256_mul_pd(a0, _mm256_loadu_pd(m + j)), vz);
    a1 = _mm256_add_pd(_mm256_mul_pd(a1, _mm256_loadu_pd(m + j + 4)), vz);
    a0 = _mm256_round_pd(_mm256_max_pd(a0, vlo), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    a1 = _mm256_round_pd(_mm256_max_pd(a1, vlo), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m128i i0 = _mm256_cvtpd_epi32(_mm256_min_pd(a0, vhi)), i1 = _mm256_cvtpd_epi32(_mm256_min_pd(a1, vhi));
    const __m128i w = _mm_packs_epi32(i0, i1);  // within [lo, hi]: no saturation left
    const __m128i b = std::is_same_v<T, int8_t> ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + j), b);
  }
  requantize_row(acc + j, m + j, bias + j, n - j, zy, y + j);
}
#endif

void requantize_row_s8(const int32_t* acc, const double* m, const int32_t* bias, int64_t n, int32_t zy, int8_t* y) {
#if MS_SIMD_DISPATCH
  if (simd_width() >= 8) return requantize_row_avx2(acc, m, bias, n, zy, y);
#endif
  requantize_row_clone_s8(acc, m, bias, n, zy, y);
}
void requantize_row_u8(const int32_t* acc, const double* m, const int32_t* bias, int64_t n, int32_t zy, uint8_t* y) {
#if MS_SIMD_DISPATCH
  if (simd_width() >= 8) return requantize_row_avx2(acc, m, bias, n, zy, y);
#endif
  requantize_row_clone_u8(acc, m, bias, n, zy, y);
}
// One row of a dynamic-quant matmul: y[j] = float(acc[j]) * scale[j] (+ bias), the Cast, Mul and Add
// it replaces, each rounded in float32 (no contraction here either), in place (y over acc).
MS_SIMD_CLONES void scale_row(const int32_t* acc, const float* scale, const float* bias, bool bias_per_col, int64_t n,
                              float* y) {
  if (!bias) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(acc[j]) * scale[j];
  } else if (bias_per_col) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(acc[j]) * scale[j] + bias[j];
  } else {
    const float b = bias[0];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(acc[j]) * scale[j] + b;
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

// y[r, j] = requantize(acc[r, j] + bias[j]) with multiplier mult[j] (per-tensor a_scale) or
// mult[r % m][j].
template <class T>
void requantize_rows(const int32_t* acc, int64_t count, const MatmulPlan& p, const std::vector<double>& mult,
                     const int32_t* bias, int32_t zy, T* y) {
  const int64_t n = p.n, rows = n > 0 ? count / n : 0;
  const bool per_row = static_cast<int64_t>(mult.size()) != n;
#pragma omp parallel for schedule(static) if (rows * n > (1 << 16))
  for (int64_t r = 0; r < rows; ++r) {
    const double* mr = mult.data() + (per_row ? (r % p.m) * n : 0);
    if constexpr (std::is_same_v<T, int8_t>)
      requantize_row_s8(acc + r * n, mr, bias, n, zy, y + r * n);
    else
      requantize_row_u8(acc + r * n, mr, bias, n, zy, y + r * n);
  }
}

// QLinearMatMul, and FusedQLinearMatMul: the same with an int32 bias (input 8) over the columns.
Status qlinear_matmul(runtime::KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  MS_ASSIGN_OR_RETURN(const MatmulPlan p, plan_matmul(ctx, a.shape(), b.shape()));
  MS_ASSIGN_OR_RETURN(const auto za, expand_zero_point(ctx, 2, p.m, "a_zero_point", "row of a"));
  MS_ASSIGN_OR_RETURN(const auto zb, expand_zero_point(ctx, 5, p.n, "b_zero_point", "column of b"));
  MS_ASSIGN_OR_RETURN(const auto sa, expand_scale(ctx, 1, p.m, "a_scale", "row of a"));
  MS_ASSIGN_OR_RETURN(const auto sb, expand_scale(ctx, 4, p.n, "b_scale", "column of b"));
  if (ctx.input(6).numel() != 1 || ctx.input(7).numel() != 1)
    return ctx.unsupported_case("y_scale and y_zero_point must hold one value (per-tensor output quantization)");
  const double ys = load_reals(ctx.input(6))[0];
  const int32_t yz = load_ints(ctx.input(7))[0];
  const DType st = ctx.input(1).dtype();
  const int64_t mult_rows = ctx.input(1).numel() == 1 ? 1 : p.m;  // per-tensor a_scale: one row serves all
  std::vector<double> mult(static_cast<size_t>(mult_rows * p.n));
  for (int64_t i = 0; i < mult_rows; ++i)
    for (int64_t j = 0; j < p.n; ++j)
      mult[static_cast<size_t>(i * p.n + j)] =
          round_to_dtype(st, round_to_dtype(st, sa[static_cast<size_t>(i)] * sb[static_cast<size_t>(j)]) / ys);
  std::vector<int32_t> no_bias;
  const int32_t* bias = nullptr;
  if (!ctx.has_input(8)) {
    no_bias.assign(static_cast<size_t>(p.n), 0);
    bias = no_bias.data();
  } else {
    if (ctx.input(8).dtype() != DType::I32 || ctx.input(8).numel() != p.n)
      return ctx.fail("bias must be int32 with one value per column of b (" + to_string(p.n) + ")");
    bias = ctx.input(8).data<int32_t>();
  }
  // The int32 sums in the step's scratch: every one is written (a zero-filled vector of them, 1.5 MB
  // for the QDQ encoder's widest matmul, cost a memset and fresh pages on every call).
  MS_ASSIGN_OR_RETURN(Tensor acc, ctx.scratch(DType::I32, p.out));
  MS_RETURN_IF_ERROR(matmul_accumulate(ctx, a, b, p, za, zb, acc.data<int32_t>()));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, ctx.input(7).dtype(), p.out));
  if (y->dtype() == DType::I8)
    requantize_rows(acc.data<int32_t>(), acc.numel(), p, mult, bias, yz, y->data<int8_t>());
  else
    requantize_rows(acc.data<int32_t>(), acc.numel(), p, mult, bias, yz, y->data<uint8_t>());
  return Status::ok();
}

// FusedDynamicQuantMatMul(x, b, b_scale, b_zero_point[, bias]): x quantized as DynamicQuantizeLinear
// does, the integer matmul, then float32(acc) * float32(x_scale * b_scale[j]) (+ bias[j]): each step in
// float32 as the Cast, Mul and Add it replaces, so the result is theirs bit for bit.
Status dynamic_quant_matmul(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& b = ctx.input(1);
  MS_ASSIGN_OR_RETURN(const MatmulPlan p, plan_matmul(ctx, x.shape(), b.shape()));
  MS_ASSIGN_OR_RETURN(const auto zb, expand_zero_point(ctx, 3, p.n, "b_zero_point", "column of b"));
  MS_ASSIGN_OR_RETURN(const auto sb, expand_scale(ctx, 2, p.n, "b_scale", "column of b"));
  const bool has_bias = ctx.has_input(4);
  if (has_bias && ctx.input(4).numel() != 1 && ctx.input(4).numel() != p.n)
    return ctx.fail("bias must hold 1 or " + to_string(p.n) + " values (one per column of b)");
  auto xq = ctx.scratch(DType::U8, x.shape());
  if (!xq) return xq.status();
  const DynamicQuant dq = dynamic_quantize_u8(x.data<float>(), x.numel(), xq->data<uint8_t>());
  std::vector<float> scale(static_cast<size_t>(p.n));
  for (size_t j = 0; j < scale.size(); ++j) scale[j] = dq.scale * static_cast<float>(sb[j]);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::F32, p.out));
  auto* acc = reinterpret_cast<int32_t*>(y->data<float>());  // the int32 sums, then floats in place
  const std::vector<int32_t> zx(static_cast<size_t>(p.m), dq.zero_point);
  MS_RETURN_IF_ERROR(matmul_accumulate(ctx, *xq, b, p, zx, zb, acc));
  const float* bias = has_bias ? ctx.input(4).data<float>() : nullptr;
  const bool bias_per_col = has_bias && ctx.input(4).numel() == p.n;
  float* yp = y->data<float>();
  const int64_t n = p.n, rows = n > 0 ? y->numel() / n : 0;
#pragma omp parallel for schedule(static) if (rows * n > (1 << 16))
  for (int64_t r = 0; r < rows; ++r) scale_row(acc + r * n, scale.data(), bias, bias_per_col, n, yp + r * n);
  return Status::ok();
}

// ---- convolution (any spatial rank, groups, int32 accumulation) ----

Expected<IntConvPlan> plan_conv(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w) {
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  if (xs.size() < 3 || ws.size() != xs.size())
    return ctx.fail("x " + shape_to_string(xs) + " and w " + shape_to_string(ws) + " must have the same rank >= 3");
  IntConvPlan p;
  p.group = ctx.node().attr_int("group", 1);
  p.batch = xs[0];
  p.c = xs[1];
  p.m = ws[0];
  if (p.group < 1 || p.c % p.group != 0 || p.m % p.group != 0 || ws[1] * p.group != p.c)
    return ctx.fail("w " + shape_to_string(ws) + " does not match the channels of x " + shape_to_string(xs) +
                    " with group " + to_string(p.group));
  MS_ASSIGN_OR_RETURN(p.g, nn::geometry(ctx, ops::WindowKind::Conv, xs, Shape(ws.begin() + 2, ws.end())));
  p.in_sp = numel(Shape(xs.begin() + 2, xs.end()));
  p.out_sp = numel(p.g.out);
  p.taps = numel(p.g.kernel);
  p.out = {p.batch, p.m};
  p.out.insert(p.out.end(), p.g.out.begin(), p.g.out.end());
  return p;
}

// acc[N][M][P] = conv(x - zx, w - zw[m]) (the reference loops: im2col, then a row-times-column sum).
void conv_int32_loops(const Tensor& x, const Tensor& w, const IntConvPlan& p, int32_t zx,
                      const std::vector<int32_t>& zw, int32_t* acc) {
  const std::vector<int64_t> table = nn::window_table(Shape(x.shape().begin() + 2, x.shape().end()), p.g);
  const int64_t cg = p.c / p.group, mg = p.m / p.group, rows = cg * p.taps, P = p.out_sp;
  std::vector<int32_t> col(static_cast<size_t>(rows * P));
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t g = 0; g < p.group; ++g) {
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t xbase = (n * p.c + g * cg + c) * p.in_sp;
        for (int64_t kk = 0; kk < p.taps; ++kk) {
          int32_t* dst = col.data() + (c * p.taps + kk) * P;
          for (int64_t q = 0; q < P; ++q) {
            const int64_t off = table[static_cast<size_t>(q * p.taps + kk)];
            dst[q] = off >= 0 ? int8_at(x, xbase + off) - zx : 0;
          }
        }
      }
#pragma omp parallel for schedule(static) if (mg * rows * P > (1 << 16))
      for (int64_t mm = 0; mm < mg; ++mm) {
        const int64_t oc = g * mg + mm;
        int32_t* out = acc + (n * p.m + oc) * P;
        std::fill(out, out + P, 0);
        for (int64_t r = 0; r < rows; ++r) {
          const int32_t wv = int8_at(w, oc * rows + r) - zw[static_cast<size_t>(oc)];
          if (wv == 0) continue;
          const int32_t* src = col.data() + r * P;
          for (int64_t q = 0; q < P; ++q) out[q] += wv * src[q];
        }
      }
    }
  }
}

// Accumulators of the conv, from oneDNN (channels last) where it has a fast int8 implementation
// (w int8 without zero points), else from the loops (channels first). Kernel scratch: a Graph-mode
// step's room in the arena, not a fresh allocation (with its page faults) on every run.
struct ConvAcc {
  Tensor holder;
  int32_t* acc = nullptr;
  bool channels_last = false;
};

Expected<ConvAcc> conv_accumulate(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const IntConvPlan& p,
                                  int32_t zx, const std::vector<int32_t>& zw) {
  ConvAcc r;
  MS_ASSIGN_OR_RETURN(r.holder, ctx.scratch(DType::I32, {numel(p.out)}));
  r.acc = r.holder.data<int32_t>();
  const bool zero_w = std::all_of(zw.begin(), zw.end(), [](int32_t v) { return v == 0; });
  if (w.dtype() == DType::I8 && zero_w && p.c > 0 && p.m > 0 && numel(p.out) > 0) {
    const Status s = conv_acc_onednn(ctx, x, w, p, zx, r.acc);
    if (s.is_ok()) {
      r.channels_last = true;
      return r;
    }
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  conv_int32_loops(x, w, p, zx, zw, r.acc);
  ctx.set_impl("loop");
  return r;
}

// Index of accumulator (n, oc, q) in either layout.
inline size_t acc_index(const ConvAcc& a, const IntConvPlan& p, int64_t n, int64_t oc, int64_t q) {
  return static_cast<size_t>(a.channels_last ? (n * p.out_sp + q) * p.m + oc : (n * p.m + oc) * p.out_sp + q);
}

Expected<int32_t> scalar_zero_point(runtime::KernelContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i)) return 0;
  if (ctx.input(i).numel() != 1) return ctx.fail(std::string(name) + " must hold one value (per-tensor)");
  return load_ints(ctx.input(i))[0];
}

Status conv_integer(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  MS_ASSIGN_OR_RETURN(const IntConvPlan p, plan_conv(ctx, x, w));
  MS_ASSIGN_OR_RETURN(const int32_t zx, scalar_zero_point(ctx, 2, "x_zero_point"));
  MS_ASSIGN_OR_RETURN(const auto zw, expand_zero_point(ctx, 3, p.m, "w_zero_point", "output channel"));
  MS_ASSIGN_OR_RETURN(const ConvAcc a, conv_accumulate(ctx, x, w, p, zx, zw));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::I32, p.out));
  int32_t* yp = y->data<int32_t>();
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oc = 0; oc < p.m; ++oc)
      for (int64_t q = 0; q < p.out_sp; ++q) *yp++ = a.acc[acc_index(a, p, n, oc, q)];
  return Status::ok();
}

// Requantizes acc + bias[oc] with the per-channel multiplier into y [N, M, P].
struct Requant {
  const std::vector<int32_t>& bias;
  const std::vector<double>& mult;
  int32_t zy, lo, hi;
  int32_t operator()(int32_t acc, size_t oc) const {
    const auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(bias[oc]));
    return requantize(sum, mult[oc], zy, lo, hi);
  }
};

template <class T>
Status requantize_conv(runtime::KernelContext& ctx, const ConvAcc& a, const IntConvPlan& p, const Requant& rq, T* y) {
  const int64_t P = p.out_sp, M = p.m;
  if (!a.channels_last) {
#pragma omp parallel for schedule(static) if (p.batch * M * P > (1 << 16))
    for (int64_t nm = 0; nm < p.batch * M; ++nm) {
      const auto oc = static_cast<size_t>(nm % M);
      const int32_t* src = a.acc + nm * P;
      for (int64_t q = 0; q < P; ++q) y[nm * P + q] = static_cast<T>(rq(src[q], oc));
    }
    return Status::ok();
  }
  // Each position's M accumulators requantized as one vectorized row (the matmuls'
  // requantize_row) into 8-bit channels-last values, then turned to channels first.
  constexpr DType kType = std::is_same_v<T, int8_t> ? DType::I8 : DType::U8;
  MS_ASSIGN_OR_RETURN(Tensor last, ctx.scratch(kType, {numel(p.out)}));
  T* q8 = last.data<T>();
  const int64_t rows = p.batch * P;
#pragma omp parallel for schedule(static) if (rows * M > (1 << 16))
  for (int64_t r = 0; r < rows; ++r) {
    if constexpr (std::is_same_v<T, int8_t>)
      requantize_row_s8(a.acc + r * M, rq.mult.data(), rq.bias.data(), M, rq.zy, q8 + r * M);
    else
      requantize_row_u8(a.acc + r * M, rq.mult.data(), rq.bias.data(), M, rq.zy, q8 + r * M);
  }
  transpose_bytes(reinterpret_cast<const uint8_t*>(q8), reinterpret_cast<uint8_t*>(y), p.batch, P, M);
  return Status::ok();
}

Status qlinear_conv(runtime::KernelContext& ctx) {
  // oneDNN's int8 convolution with the requantization inside it (output scales, destination zero
  // point): one pass over 8-bit activations instead of int32 sums and a second loop.
  if (Status fused = qlinear_conv_onednn(ctx); fused.code() != ErrorCode::Unsupported) return fused;
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  MS_ASSIGN_OR_RETURN(const IntConvPlan p, plan_conv(ctx, x, w));
  MS_ASSIGN_OR_RETURN(const int32_t zx, scalar_zero_point(ctx, 2, "x_zero_point"));
  MS_ASSIGN_OR_RETURN(const auto zw, expand_zero_point(ctx, 5, p.m, "w_zero_point", "output channel"));
  MS_ASSIGN_OR_RETURN(const int32_t zy, scalar_zero_point(ctx, 7, "y_zero_point"));
  MS_ASSIGN_OR_RETURN(const auto sw, expand_scale(ctx, 4, p.m, "w_scale", "output channel"));
  if (ctx.input(1).numel() != 1 || ctx.input(6).numel() != 1)
    return ctx.fail("x_scale and y_scale must hold one value (per-tensor)");
  const double sx = load_reals(ctx.input(1))[0], sy = load_reals(ctx.input(6))[0];
  std::vector<int32_t> bias(static_cast<size_t>(p.m), 0);
  if (ctx.has_input(8)) {
    if (ctx.input(8).numel() != p.m)
      return ctx.fail("B must hold one value per output channel (" + to_string(p.m) + ")");
    bias = load_ints(ctx.input(8));
  }
  std::vector<double> mult(static_cast<size_t>(p.m));
  for (size_t oc = 0; oc < mult.size(); ++oc)
    mult[oc] = round_to_dtype(DType::F32, round_to_dtype(DType::F32, sx * sw[oc]) / sy);
  MS_ASSIGN_OR_RETURN(const ConvAcc a, conv_accumulate(ctx, x, w, p, zx, zw));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, ctx.input(7).dtype(), p.out));
  if (y->dtype() == DType::I8) return requantize_conv(ctx, a, p, Requant{bias, mult, zy, -128, 127}, y->data<int8_t>());
  return requantize_conv(ctx, a, p, Requant{bias, mult, zy, 0, 255}, y->data<uint8_t>());
}

}  // namespace

void register_quant_int_kernels(runtime::KernelRegistry& r) {
  r.add("MatMulInteger", matmul_integer);
  r.add("QLinearMatMul", qlinear_matmul);
  r.add("FusedQLinearMatMul", qlinear_matmul, ops::kFusedDomain);
  r.add("FusedDynamicQuantMatMul", dynamic_quant_matmul, ops::kFusedDomain);
  r.add("FusedQLinearAdd", fused_qlinear_add, ops::kFusedDomain);
  r.add("ConvInteger", conv_integer);
  r.add("QLinearConv", qlinear_conv);
}

}  // namespace ms::cpu::quant
