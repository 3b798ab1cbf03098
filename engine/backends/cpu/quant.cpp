// CPU kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (here); QLinearConv,
// QLinearMatMul, MatMulInteger, ConvInteger (quant_int.cpp). Q/DQ follow
// onnx/reference/ops/op_quantize_linear.py and op_dequantize_linear.py: the division x / scale is
// rounded to the type numpy computes it in (x's and the scale's common type, or `precision`),
// integer outputs round half to even then add the zero point and clip; float8 outputs saturate
// (attribute `saturate`), float4 outputs add the zero point and always saturate.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/narrow_io.h"
#include "engine/backends/cpu/quant_internal.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/core/narrow.h"

namespace ms::cpu {
namespace quant {

std::vector<double> load_reals(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t b = 0; b < t.numel(); b += narrow_io::kBlock)
    narrow_io::load_real(t.dtype(), t.raw(), b, std::min(narrow_io::kBlock, t.numel() - b), out.data() + b);
  return out;
}

std::vector<int32_t> load_ints(const Tensor& t) {
  const std::vector<double> r = load_reals(t);
  return std::vector<int32_t>(r.begin(), r.end());
}

int32_t rint_to_i32(double v) {
  const double r = std::nearbyint(v);
  if (!(r > -2147483649.0 && r < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(r);
}

namespace {

using narrow_io::kBlock;
using std::to_string;

// x seen as [outer, len, inner] around the quantization axis. Element (o, a, i) uses parameter
// o * so + (a / block) * sa + i * si (all strides 0 for a per-tensor scale).
struct Layout {
  int64_t outer = 1, len = 1, inner = 1, block = 1;
  int64_t so = 0, sa = 0, si = 0;
};

Status check_blocked_shape(runtime::KernelContext& ctx, const Shape& xs, const Shape& ps, size_t axis, int64_t block,
                           const char* name) {
  bool ok = ps.size() == xs.size();
  for (size_t d = 0; ok && d < xs.size(); ++d) ok = ps[d] == (d == axis ? (xs[d] + block - 1) / block : xs[d]);
  if (!ok)
    return ctx.fail(std::string(name) + " " + shape_to_string(ps) + " does not match x " + shape_to_string(xs) +
                    " blocked by " + to_string(block) + " along axis " + to_string(axis));
  return Status::ok();
}

Expected<Layout> make_layout(runtime::KernelContext& ctx, const Shape& xs, const Tensor& param, const char* name) {
  Layout l;
  if (param.numel() == 1) {
    l.len = numel(xs);
    return l;
  }
  const auto rank = static_cast<int64_t>(xs.size());
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < -rank || axis >= rank)
    return ctx.fail("attribute 'axis' = " + to_string(axis) + " is out of range for x of rank " + to_string(rank));
  if (axis < 0) axis += rank;
  const auto ax = static_cast<size_t>(axis);
  for (size_t d = 0; d < ax; ++d) l.outer *= xs[d];
  l.len = xs[ax];
  for (size_t d = ax + 1; d < xs.size(); ++d) l.inner *= xs[d];
  const int64_t block = ctx.node().attr_int("block_size", 0);
  if (block < 0) return ctx.fail("attribute 'block_size' = " + to_string(block) + " must be >= 0");
  if (block == 0) {
    if (param.shape().size() != 1 || param.numel() != l.len)
      return ctx.fail(std::string(name) + " " + shape_to_string(param.shape()) +
                      " must be a scalar or hold one value per x" + shape_to_string(xs) + " element along axis " +
                      to_string(axis));
    l.sa = 1;
    return l;
  }
  MS_RETURN_IF_ERROR(check_blocked_shape(ctx, xs, param.shape(), ax, block, name));
  l.block = block;
  l.si = 1;
  l.sa = l.inner;
  l.so = param.shape()[ax] * l.inner;
  return l;
}

// Scale (input 1) layout; the zero point (input 2), when given, must have the scale's shape.
Expected<Layout> param_layout(runtime::KernelContext& ctx, const char* scale_name, const char* zp_name) {
  const Tensor& scale = ctx.input(1);
  MS_ASSIGN_OR_RETURN(Layout l, make_layout(ctx, ctx.input(0).shape(), scale, scale_name));
  if (ctx.has_input(2)) {
    const Tensor& zp = ctx.input(2);
    if (zp.shape() != scale.shape() && !(zp.numel() == 1 && scale.numel() == 1))
      return ctx.fail(std::string(zp_name) + " " + shape_to_string(zp.shape()) + " must have the shape of " +
                      scale_name + " " + shape_to_string(scale.shape()));
  }
  return l;
}

// Calls f(row_begin, row_end) over the outer * len rows, in parallel for large tensors.
template <class F> void for_rows(const Layout& l, F&& f) {
  const int64_t rows = l.outer * l.len;
  if (rows * l.inner < (int64_t{1} << 15) || rows < 2) {
    f(int64_t{0}, rows);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) f(r, r + 1);
}

// Calls f(element, count, first_param) for each block of up to kBlock elements of rows [r0, r1);
// element e = first + k uses parameter first_param + k * l.si.
template <class F> void for_row_blocks(const Layout& l, int64_t r0, int64_t r1, F&& f) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t o = r / l.len, a = r % l.len;
    const int64_t pb = o * l.so + (a / l.block) * l.sa;
    for (int64_t s = 0; s < l.inner; s += kBlock) f(r * l.inner + s, std::min(kBlock, l.inner - s), pb + s * l.si);
  }
}

// ---- QuantizeLinear ----

struct QuantizeJob {
  const Tensor* x = nullptr;
  void* y = nullptr;
  DType out = DType::U8;
  Layout l;
  std::vector<double> scale;  // already rounded to the compute type
  std::vector<int32_t> zp_int;
  std::vector<double> zp_real;
  bool saturate = true;
  int32_t lo = 0, hi = 255;
};

// Value rounded to the compute type CT (float, f16, bf16 or double), as numpy's arithmetic in CT does.
template <class CT> double round_to(double v) {
  if constexpr (std::is_same_v<CT, double>)
    return v;
  else
    return static_cast<double>(static_cast<float>(static_cast<CT>(static_cast<float>(v))));
}

template <class T> void store_ints(const QuantizeJob& j, int64_t e, int64_t n, const double* q, int64_t p) {
  auto* y = static_cast<T*>(j.y) + e;
  for (int64_t k = 0; k < n; ++k) {
    const int32_t zp = j.zp_int.empty() ? 0 : j.zp_int[static_cast<size_t>(p + k * j.l.si)];
    const auto sum = static_cast<int32_t>(static_cast<uint32_t>(rint_to_i32(q[k])) + static_cast<uint32_t>(zp));
    const int32_t v = std::clamp(sum, j.lo, j.hi);
    if constexpr (std::is_same_v<T, uint8_t>)
      y[k] = is_narrow(j.out) ? narrow::from_int(j.out, v) : static_cast<uint8_t>(v);
    else
      y[k] = static_cast<T>(v);
  }
}

void store_quantized(const QuantizeJob& j, int64_t e, int64_t n, const double* q, int64_t p) {
  switch (j.out) {
    case DType::I8: return store_ints<int8_t>(j, e, n, q, p);
    case DType::I16: return store_ints<int16_t>(j, e, n, q, p);
    case DType::U16: return store_ints<uint16_t>(j, e, n, q, p);
    case DType::U8:
    case DType::I4:
    case DType::U4:
    case DType::I2:
    case DType::U2: return store_ints<uint8_t>(j, e, n, q, p);
    default: break;
  }
  auto* y = static_cast<uint8_t*>(j.y) + e;
  if (j.out == DType::F4E2M1) {
    for (int64_t k = 0; k < n; ++k) {
      const double zp = j.zp_real.empty() ? 0.0 : j.zp_real[static_cast<size_t>(p + k * j.l.si)];
      y[k] = narrow::from_float(j.out, static_cast<float>(q[k]) + static_cast<float>(zp), true);
    }
    return;
  }
  for (int64_t k = 0; k < n; ++k) y[k] = narrow::from_float(j.out, static_cast<float>(q[k]), j.saturate);
}

template <class CT> void quantize_rows(const QuantizeJob& j, int64_t r0, int64_t r1) {
  for_row_blocks(j.l, r0, r1, [&](int64_t e, int64_t n, int64_t p) {
    double q[kBlock];
    narrow_io::load_real(j.x->dtype(), j.x->raw(), e, n, q);
    for (int64_t k = 0; k < n; ++k)
      q[k] = round_to<CT>(round_to<CT>(q[k]) / j.scale[static_cast<size_t>(p + k * j.l.si)]);
    store_quantized(j, e, n, q, p);
  });
}

Expected<DType> quantize_out_type(runtime::KernelContext& ctx) {
  if (ctx.has_input(2)) return ctx.input(2).dtype();
  const int64_t od = ctx.node().attr_int("output_dtype", 0);
  if (od == 0) return DType::U8;
  const std::optional<DType> t = dtype_from_onnx(static_cast<int>(od));
  if (!t) return ctx.fail("attribute 'output_dtype' = " + to_string(od) + " is not a known element type");
  return *t;
}

// The type numpy divides x by the scale in: `precision` when set, else x's and the scale's common type.
DType quantize_compute_type(const runtime::KernelContext& ctx, DType x, DType s) {
  const int64_t p = ctx.node().attr_int("precision", 0);
  if (p != 0) {
    const std::optional<DType> t = dtype_from_onnx(static_cast<int>(p));
    if (t && is_float(*t)) return *t;
  }
  if (x == DType::I32 || s == DType::I32 || x == DType::F64 || s == DType::F64) return DType::F64;
  return x == s ? x : DType::F32;
}

Status fill_quantize_params(runtime::KernelContext& ctx, QuantizeJob& j) {
  if (ctx.has_input(2)) {
    const Tensor& zp = ctx.input(2);
    if (narrow::is_narrow_float(j.out) && j.out != DType::F4E2M1) {
      for (double v : load_reals(zp))
        if (v != 0) return ctx.fail("y_zero_point must be 0 for float8 outputs");
    } else if (j.out == DType::F4E2M1) {
      j.zp_real = load_reals(zp);
    } else {
      j.zp_int = load_ints(zp);
    }
  }
  if (is_narrow(j.out) && narrow::is_narrow_int(j.out)) {
    j.lo = narrow::int_min(j.out);
    j.hi = narrow::int_max(j.out);
  } else if (j.out == DType::I8 || j.out == DType::I16) {
    j.lo = j.out == DType::I8 ? -128 : -32768;
    j.hi = j.out == DType::I8 ? 127 : 32767;
  } else {
    j.lo = 0;
    j.hi = j.out == DType::U16 ? 65535 : 255;
  }
  return Status::ok();
}

Status quantize_linear(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(const bool fast, quantize_linear_fast(ctx));
  if (fast) return Status::ok();
  const Tensor& x = ctx.input(0);
  QuantizeJob j;
  j.x = &x;
  MS_ASSIGN_OR_RETURN(j.out, quantize_out_type(ctx));
  MS_ASSIGN_OR_RETURN(j.l, param_layout(ctx, "y_scale", "y_zero_point"));
  j.saturate = ctx.node().attr_int("saturate", 1) != 0;
  MS_RETURN_IF_ERROR(fill_quantize_params(ctx, j));
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, j.out, x.shape()));
  j.y = y->raw();
  const DType ct = quantize_compute_type(ctx, x.dtype(), ctx.input(1).dtype());
  j.scale = load_reals(ctx.input(1));
  auto run = [&](auto tag) {
    using CT = typename decltype(tag)::type;
    for (double& s : j.scale) s = round_to<CT>(s);
    for_rows(j.l, [&](int64_t r0, int64_t r1) { quantize_rows<CT>(j, r0, r1); });
  };
  switch (ct) {
    case DType::F16: run(TypeTag<f16>{}); break;
    case DType::BF16: run(TypeTag<bf16>{}); break;
    case DType::F64: run(TypeTag<double>{}); break;
    default: run(TypeTag<float>{}); break;
  }
  ctx.set_impl("loop");
  return Status::ok();
}

// ---- DequantizeLinear ----

struct DequantizeJob {
  const Tensor* x = nullptr;
  void* y = nullptr;
  Layout l;
  std::vector<double> scale, zp;
};

// y = (x - zp) * scale in numpy's float32 arithmetic (float64 for int32 x), then cast to Out.
template <class Out> void dequantize_rows(const DequantizeJob& j, int64_t r0, int64_t r1) {
  const DType xt = j.x->dtype();
  const bool wide = xt == DType::I32;
  for_row_blocks(j.l, r0, r1, [&](int64_t e, int64_t n, int64_t p) {
    double v[kBlock];
    narrow_io::load_real(xt, j.x->raw(), e, n, v);
    Out* y = static_cast<Out*>(j.y) + e;
    for (int64_t k = 0; k < n; ++k) {
      const auto pi = static_cast<size_t>(p + k * j.l.si);
      const double zp = j.zp.empty() ? 0.0 : j.zp[pi];
      if (wide) {
        const double r = (static_cast<double>(static_cast<float>(v[k])) - zp) * j.scale[pi];
        y[k] = static_cast<Out>(static_cast<float>(r));
      } else {
        const float dx = static_cast<float>(v[k]) - static_cast<float>(zp);
        y[k] = static_cast<Out>(static_cast<float>(static_cast<double>(dx) * j.scale[pi]));
      }
    }
  });
}

Expected<DType> dequantize_out_type(runtime::KernelContext& ctx) {
  const int64_t od = ctx.node().attr_int("output_dtype", 0);
  const DType t = od == 0 ? ctx.input(1).dtype() : dtype_from_onnx(static_cast<int>(od)).value_or(DType::Undefined);
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16)
    return ctx.fail("output type " + std::string(dtype_name(t)) + " must be float, float16 or bfloat16");
  return t;
}

Status dequantize_linear(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(const bool fast, dequantize_linear_fast(ctx));
  if (fast) return Status::ok();
  const Tensor& x = ctx.input(0);
  DequantizeJob j;
  j.x = &x;
  MS_ASSIGN_OR_RETURN(const DType out, dequantize_out_type(ctx));
  MS_ASSIGN_OR_RETURN(j.l, param_layout(ctx, "x_scale", "x_zero_point"));
  j.scale = load_reals(ctx.input(1));
  if (ctx.has_input(2)) {
    j.zp = load_reals(ctx.input(2));
    const bool float8 = narrow::is_narrow_float(x.dtype()) && x.dtype() != DType::F4E2M1;
    if (float8 && std::any_of(j.zp.begin(), j.zp.end(), [](double v) { return v != 0; }))
      return ctx.fail("x_zero_point must be 0 for float8 inputs");
  }
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, out, x.shape()));
  j.y = y->raw();
  auto run = [&](auto tag) {
    using Out = typename decltype(tag)::type;
    for_rows(j.l, [&](int64_t r0, int64_t r1) { dequantize_rows<Out>(j, r0, r1); });
  };
  if (out == DType::F16)
    run(TypeTag<f16>{});
  else if (out == DType::BF16)
    run(TypeTag<bf16>{});
  else
    run(TypeTag<float>{});
  ctx.set_impl("loop");
  return Status::ok();
}

// ---- DynamicQuantizeLinear (uint8, float32 arithmetic as the reference) ----

// min(0, x...) and max(0, x...) over [b, e), NaN left out as std::min/std::max leave it (a
// comparison with NaN is false), in per-lane partials so each clone vectorizes the scan.
[[gnu::always_inline]] inline void dq_range_of(const float* __restrict x, int64_t b, int64_t e, float& mn, float& mx) {
  constexpr int L = 16;
  float lo[L] = {}, hi[L] = {};
  int64_t i = b;
  for (; i + L <= e; i += L)
    for (int l = 0; l < L; ++l) {
      const float v = x[i + l];
      lo[l] = v < lo[l] ? v : lo[l];
      hi[l] = v > hi[l] ? v : hi[l];
    }
  for (; i < e; ++i) {
    lo[0] = x[i] < lo[0] ? x[i] : lo[0];
    hi[0] = x[i] > hi[0] ? x[i] : hi[0];
  }
  for (int l = 0; l < L; ++l) {
    mn = lo[l] < mn ? lo[l] : mn;
    mx = hi[l] > mx ? hi[l] : mx;
  }
}
MS_SIMD_CLONES void dq_range(const float* x, int64_t b, int64_t e, float* mn, float* mx) {
  dq_range_of(x, b, e, *mn, *mx);
}

// rint(x / scale) + zp saturated, NaN to 0: clamped before rounding (past either end the result
// saturates the same), rounded half to even by adding and subtracting 1.5 * 2^23 (nearbyint is a
// library call per element below SSE4.1; this vectorizes).
MS_SIMD_CLONES void dq_quantize(const float* __restrict x, uint8_t* __restrict y, int64_t b, int64_t e, float scale,
                                float zp) {
  constexpr float kMagic = 12582912.f;
  const float lo = -1.f - zp, hi = 256.f - zp;
#pragma omp simd
  for (int64_t i = b; i < e; ++i) {
    float v = x[i] / scale;
    v = v >= lo ? v : lo;
    v = v <= hi ? v : hi;
    const float q = ((v + kMagic) - kMagic) + zp;
    y[i] = static_cast<uint8_t>(q < 0.f ? 0.f : q > 255.f ? 255.f : q);
  }
}

}  // namespace

// Both passes across the team for large tensors (a transformer's [128, 3072] activations), each block
// of the range scan reduced after (min and max are exact in any order).
DynamicQuant dynamic_quantize_u8(const float* xp, int64_t n, uint8_t* yp) {
  constexpr int64_t kBlock = int64_t{1} << 14;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<float> lo(static_cast<size_t>(std::max<int64_t>(blocks, 1)), 0.f), hi(lo.size(), 0.f);
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t k = 0; k < blocks; ++k)
    dq_range(xp, k * kBlock, std::min(n, (k + 1) * kBlock), &lo[static_cast<size_t>(k)], &hi[static_cast<size_t>(k)]);
  float maxx = 0.f, minx = 0.f;
  for (size_t k = 0; k < lo.size(); ++k) {
    minx = lo[k] < minx ? lo[k] : minx;
    maxx = hi[k] > maxx ? hi[k] : maxx;
  }
  const float scale = (maxx == minx ? 1.0f : maxx - minx) / 255.0f;
  const float initial_zp = 0.0f - minx / scale;
  const float zp = std::nearbyint(std::clamp(initial_zp, 0.0f, 255.0f));
  elementwise::parallel_chunks(n, [&](int64_t b, int64_t e) { dq_quantize(xp, yp, b, e, scale, zp); });
  return {scale, static_cast<uint8_t>(zp)};
}

namespace {

Status dynamic_quantize_linear(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::U8, x.shape()));
  MS_ASSIGN_OR_RETURN(Tensor * ys, ctx.allocate_output(1, DType::F32, {}));
  MS_ASSIGN_OR_RETURN(Tensor * yz, ctx.allocate_output(2, DType::U8, {}));
  const DynamicQuant q = dynamic_quantize_u8(x.data<float>(), x.numel(), y->data<uint8_t>());
  *ys->data<float>() = q.scale;
  *yz->data<uint8_t>() = q.zero_point;
  ctx.set_impl("loop");
  return Status::ok();
}

}  // namespace
}  // namespace quant

void register_quant_kernels(runtime::KernelRegistry& r) {
  r.add("QuantizeLinear", quant::quantize_linear);
  r.add("DequantizeLinear", quant::dequantize_linear);
  r.add("DynamicQuantizeLinear", quant::dynamic_quantize_linear);
  quant::register_quant_int_kernels(r);
}

}  // namespace ms::cpu
