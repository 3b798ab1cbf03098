// FusedElementwise: a chain of elementwise ops in one pass over the output. The output is seen as
// rows of contiguous elements (axes merged where every operand continues across them alike, so a
// per-channel operand over NCHW is one value per row of H*W); each row is processed in tiles, one
// op at a time over the tile, so every op's loop vectorizes and a broadcast operand costs nothing
// per element.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/elementwise_table_loop.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/ops/elementwise_math.h"

namespace ms::cpu::fused {
namespace {

using elementwise::bf16_to_f32;
using elementwise::f32_to_bf16;

// A link runs an op of the table (ops/elementwise_math.h), or one of the chain's own: Square (x * x)
// and RoundBf16 (a Cast to bf16: the value rounded to bf16 and back).
enum class Special : uint8_t { None, Square, RoundBf16 };

struct Link {
  ew::Op op = ew::Op::Relu;
  Special special = Special::None;
  int side = 0;  // binary: 0 chain value is the lhs
  float alpha = 0, beta = 0;
  int operand = -1;
};

// Element strides of `t` broadcast to `out` (right-aligned; 0 where broadcast).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  const size_t r = out.size();
  std::vector<int64_t> st(r, 0);
  int64_t s = 1;
  for (size_t k = in.size(); k-- > 0;) {
    const size_t a = r - in.size() + k;
    st[a] = in[k] == 1 ? 0 : s;
    s *= in[k];
  }
  return st;
}

// The output as rows of `inner` contiguous elements: adjacent axes merge where every operand
// continues across them alike (both broadcast, or contiguous), so a per-channel operand over NCHW
// becomes [N, C, H*W] with one value per row.
struct Layout {
  std::vector<int64_t> dims;                  // collapsed output dims (outer..., inner)
  std::vector<std::vector<int64_t>> strides;  // per operand, per collapsed dim
};

Layout collapse(const Shape& out, std::vector<std::vector<int64_t>> st) {
  Layout l;
  for (size_t a = 0; a < out.size(); ++a) {
    if (out[a] == 1) continue;  // size-1 axes carry nothing
    bool merge = !l.dims.empty();
    for (size_t o = 0; merge && o < st.size(); ++o) {
      const int64_t prev = l.strides[o].back(), cur = st[o][a];
      merge = (prev == 0 && cur == 0) || (cur != 0 && prev == cur * out[a]);
    }
    if (merge) {
      l.dims.back() *= out[a];
      for (size_t o = 0; o < st.size(); ++o) l.strides[o].back() = st[o][a];
    } else {
      l.dims.push_back(out[a]);
      if (l.strides.empty()) l.strides.resize(st.size());
      for (size_t o = 0; o < st.size(); ++o) l.strides[o].push_back(st[o][a]);
    }
  }
  if (l.dims.empty()) {  // a single element
    l.dims.push_back(1);
    l.strides.assign(st.size(), std::vector<int64_t>{0});
  }
  if (l.strides.size() != st.size()) l.strides.assign(st.size(), std::vector<int64_t>(l.dims.size(), 0));
  return l;
}

// The per-op loops are marked for SIMD: at -O2 GCC does not vectorize a loop that needs an alias
// check, and these run once per op per tile.
#define MS_SIMD_FOR _Pragma("omp simd") for
#define MS_SIMD_REDUCE_FOR _Pragma("omp simd reduction(+ : part)") for

// d[i] = s[i * st] widened to f32.
MS_SIMD_CLONES void widen_tile(const bf16* __restrict s, int64_t st, float* __restrict d, int64_t n) {
  if (st == 1)
    MS_SIMD_FOR(int64_t i = 0; i < n; ++i) d[i] = bf16_to_f32(s[i]);
  else
    for (int64_t i = 0; i < n; ++i) d[i] = bf16_to_f32(s[i * st]);
}

// Row q of `rows` rows of `inner` elements set to vals[q].
MS_SIMD_CLONES void fill_rows(float* __restrict d, const float* __restrict vals, int64_t rows, int64_t inner) {
  for (int64_t q = 0; q < rows; ++q) {
    const float c = vals[q];
    float* row = d + q * inner;
    MS_SIMD_FOR(int64_t i = 0; i < inner; ++i) row[i] = c;
  }
}

MS_SIMD_CLONES void narrow_tile(const float* __restrict s, bf16* __restrict d, int64_t n) {
  MS_SIMD_FOR(int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(s[i]);
}

MS_SIMD_CLONES void apply_unary(const Link& l, float* __restrict v, int64_t n) {
  if (l.special == Special::Square) {
    MS_SIMD_FOR(int64_t i = 0; i < n; ++i) v[i] = v[i] * v[i];
    return;
  }
  if (l.special == Special::RoundBf16) {
    MS_SIMD_FOR(int64_t i = 0; i < n; ++i) v[i] = bf16_to_f32(f32_to_bf16(v[i]));
    return;
  }
  switch (l.op) {
#define MS_UNARY_CASE(Name, ...) \
  case ew::Op::Name: return table_unary_f32<ew::Op::Name>(v, v, n, l.alpha, l.beta);
    MS_EW_UNARY_OPS(MS_UNARY_CASE)
#undef MS_UNARY_CASE
    default: return;
  }
}

// v[i] = v[i] op o[i * st] (side 0) or o[i * st] op v[i] (side 1); the switch sits outside the loop
// so each case vectorizes (st 0: one value for the whole run).
template <ew::Op kOp>
[[gnu::always_inline]] inline void apply_binary_as(float* __restrict v, const float* __restrict o, int64_t st, int side,
                                                   int64_t n) {
  auto f = [](float a, float b) { return ew::binary<kOp>(a, b); };
  if (st == 0) {
    const float c = o[0];
    if (side == 0)
      MS_SIMD_FOR(int64_t i = 0; i < n; ++i) v[i] = f(v[i], c);
    else
      MS_SIMD_FOR(int64_t i = 0; i < n; ++i) v[i] = f(c, v[i]);
  } else if (st == 1) {
    if (side == 0)
      MS_SIMD_FOR(int64_t i = 0; i < n; ++i) v[i] = f(v[i], o[i]);
    else
      MS_SIMD_FOR(int64_t i = 0; i < n; ++i) v[i] = f(o[i], v[i]);
  } else {
    MS_SIMD_FOR(int64_t i = 0; i < n; ++i) v[i] = side == 0 ? f(v[i], o[i * st]) : f(o[i * st], v[i]);
  }
}

MS_SIMD_CLONES void apply_binary(ew::Op op, float* v, const float* o, int64_t st, int side, int64_t n) {
  switch (op) {
#define MS_BINARY_CASE(Name, ...) \
  case ew::Op::Name: return apply_binary_as<ew::Op::Name>(v, o, st, side, n);
    MS_EW_BINARY_OPS(MS_BINARY_CASE)
#undef MS_BINARY_CASE
    default: return;
  }
}

Status fused_elementwise_kernel(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const auto* names = n.attrs.count("chain") ? n.attrs.at("chain").get_if<std::vector<std::string>>() : nullptr;
  if (!names) return ctx.fail("missing 'chain'");
  const auto arity = n.attr_ints("chain_arity"), side = n.attr_ints("chain_side");
  const auto alphas = n.attr_floats("chain_alphas"), betas = n.attr_floats("chain_betas");
  if (arity.size() != names->size() || side.size() != names->size()) return ctx.fail("chain attributes disagree");
  const Tensor& x = ctx.input(0);
  // With `reduce` and two outputs, output 0 is the chain's result and output 1 its reduction.
  const bool both = n.attrs.count("reduce") != 0 && ctx.num_outputs() == 2;
  Tensor* full = both ? &ctx.output(0) : nullptr;
  Tensor& y = ctx.output(both ? 1 : 0);
  // f32 or bf16 (mixed precision) tensors; the loop works in f32, widening each bf16 operand per tile
  // and rounding to bf16 where the chain has a Cast to bf16 and when a bf16 result is stored.
  auto f32_or_bf16 = [](DType d) { return d == DType::F32 || d == DType::BF16; };
  if (!f32_or_bf16(x.dtype())) return ctx.unsupported_case("fused elementwise needs f32 or bf16 tensors");
  if (full && full->shape() != x.shape())
    return ctx.fail("output 0 " + shape_to_string(full->shape()) + " is not the chain's shape " +
                    shape_to_string(x.shape()));
  // The loop runs over the chain's shape (input 0's); with `reduce` the results are summed into the
  // output instead of stored.
  const Shape& out = x.shape();
  const bool reduce = n.attrs.count("reduce") != 0;
  std::vector<int64_t> y_strides;  // reduce: where each element of the chain accumulates (0 on reduced axes)
  double scale = 1;
  if (reduce) {
    std::vector<char> reduced(out.size(), 0);
    for (int64_t a : n.attr_ints("reduce_axes")) {
      if (a < 0 || a >= static_cast<int64_t>(out.size())) return ctx.fail("reduce_axes do not fit the input");
      reduced[static_cast<size_t>(a)] = 1;
    }
    y_strides.assign(out.size(), 0);
    int64_t s = 1, count = 1;
    for (size_t a = out.size(); a-- > 0;) {
      if (reduced[a]) {
        count *= out[a];
        continue;
      }
      y_strides[a] = out[a] == 1 ? 0 : s;
      s *= out[a];
    }
    if (s != y.numel())
      return ctx.fail("the output " + shape_to_string(y.shape()) + " is not the reduction of " + shape_to_string(out));
    if (n.attr_string("reduce", "") == "ReduceMean") scale = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
    scale *= n.attr_float("reduce_scale", 1.f);  // -1: the reduction of the result's negation
  } else if (x.shape() != y.shape()) {
    return ctx.fail("the chain's input " + shape_to_string(x.shape()) + " is not the output's shape");
  }
  std::vector<Link> links;
  // Operand 0 is the chain's input (same shape as the output); then one per binary link. Each is
  // f32 (data) or bf16 (data16).
  const bool half = x.dtype() == DType::BF16;
  std::vector<const float*> data{half ? nullptr : x.data<float>()};
  std::vector<const bf16*> data16{half ? x.data<bf16>() : nullptr};
  std::vector<std::vector<int64_t>> strides{broadcast_strides(out, out)};
  DType dt = x.dtype();  // the chain value's dtype after each link; the outputs have the last
  int next = 1;
  for (size_t i = 0; i < names->size(); ++i) {
    Link l;
    const std::string& name = (*names)[i];
    l.side = static_cast<int>(side[i]);
    l.alpha = i < alphas.size() ? alphas[i] : 0.f;
    l.beta = i < betas.size() ? betas[i] : 0.f;
    if (name == "Cast") {  // to f32: values stay as they are; to bf16: rounded
      const auto to = dtype_from_onnx(static_cast<int>(l.alpha));
      if (!to || !f32_or_bf16(*to)) return ctx.fail("a Cast link converts between f32 and bf16 only");
      dt = *to;
      if (dt == DType::F32) continue;
      l.special = Special::RoundBf16;
    } else if (name == "Square") {
      l.special = Special::Square;
    } else if (const ew::OpInfo* op = ew::find(name.c_str()); op && op->arity == arity[i]) {
      l.op = op->op;
    } else {
      return ctx.fail("unknown chain op '" + name + "' of arity " + std::to_string(arity[i]));
    }
    if (arity[i] == 2) {
      if (next >= static_cast<int>(ctx.num_inputs())) return ctx.fail("chain needs more operands");
      const Tensor& t = ctx.input(static_cast<size_t>(next));
      if (t.dtype() != dt && !(dt == DType::F32 && t.dtype() == DType::BF16))
        return ctx.unsupported_case("operand " + std::to_string(next) + " is " + std::string(dtype_name(t.dtype())) +
                                    " where the chain is " + std::string(dtype_name(dt)));
      if (t.shape().size() > out.size())
        return ctx.fail("operand " + std::to_string(next) + " has a higher rank than the output");
      const bool t16 = t.dtype() == DType::BF16;
      l.operand = static_cast<int>(data.size());
      data.push_back(t16 ? nullptr : t.data<float>());
      data16.push_back(t16 ? t.data<bf16>() : nullptr);
      strides.push_back(broadcast_strides(t.shape(), out));
      ++next;
    }
    links.push_back(l);
  }
  if (y.dtype() != dt || (full && full->dtype() != dt))
    return ctx.fail("the outputs are not the chain's " + std::string(dtype_name(dt)));
  const bool half_out = dt == DType::BF16;
  // The output's strides ride along as one more operand, so axes merge only where they are all
  // reduced or all kept.
  const size_t y_op = data.size();
  if (reduce) {
    data.push_back(nullptr);
    data16.push_back(nullptr);
    strides.push_back(y_strides);
  }
  const Layout lay = collapse(out, std::move(strides));
  const size_t r = lay.dims.size();
  const int64_t inner = lay.dims.back();
  int64_t rows = 1;
  for (size_t a = 0; a + 1 < r; ++a) rows *= lay.dims[a];
  float* yd = half_out ? nullptr : y.data<float>();
  float* fd = full && !half_out ? full->data<float>() : nullptr;
  bf16* yd16 = half_out ? y.data<bf16>() : nullptr;
  bf16* fd16 = full && half_out ? full->data<bf16>() : nullptr;
  constexpr int64_t kTile = 1024;
  // Reduce: each thread sums into its own accumulators (double), added up at the end.
  const int threads = std::max(1, omp_get_max_threads());
  std::vector<std::vector<double>> acc(reduce ? static_cast<size_t>(threads) : 0);
  // Short rows (a per-channel operand over a small feature map: 7x7 and smaller) go 16 or more to a
  // tile, so each link runs once per tile rather than once per row. That needs every operand to be
  // the output's size (its rows follow each other in memory, as the input's do) or one value per
  // row (spread over its rows in the tile); the results are stored contiguously anyway. Measured on
  // a 5-link chain over bf16 [8, 2048, 7, 7]: 0.85-0.94 -> 0.49-0.66 ms; over 14x14 rows, where
  // spreading the per-row values costs more than the calls it saves, 0.75 -> 0.96 ms.
  const size_t nops_all = data.size();
  bool groupable = inner * 16 <= kTile && lay.strides[0][r - 1] == 1;
  for (size_t o = 1; groupable && o < nops_all; ++o)
    if (!(reduce && o == y_op)) groupable = lay.strides[o] == lay.strides[0] || lay.strides[o][r - 1] == 0;
  const int64_t group = groupable ? kTile / inner : 1;
  // Rows [r0, r1): each operand's row start from the first row's multi-index, then carried from row
  // to row like an odometer (no division per row); each row in tiles, or a group of rows per tile.
  auto body = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    float widened[kTile];  // bf16: an operand's tile in f32
    std::vector<double>* sum = nullptr;
    if (reduce) {
      sum = &acc[static_cast<size_t>(std::min(omp_get_thread_num(), threads - 1))];
      if (sum->empty()) sum->assign(static_cast<size_t>(y.numel()), 0.0);
    }
    float v[kTile];
    const size_t nops = data.size();
    std::vector<int64_t> base(nops, 0), idx(r, 0);
    int64_t rem = r0;
    for (size_t a = r - 1; a-- > 0;) {
      idx[a] = rem % lay.dims[a];
      rem /= lay.dims[a];
      for (size_t o = 0; o < nops; ++o) base[o] += idx[a] * lay.strides[o][a];
    }
    auto next_row = [&] {  // bump the last outer axis, carry leftwards
      for (size_t a = r - 1; a-- > 0;) {
        for (size_t o = 0; o < nops; ++o) base[o] += lay.strides[o][a];
        if (++idx[a] < lay.dims[a]) break;
        for (size_t o = 0; o < nops; ++o) base[o] -= lay.strides[o][a] * lay.dims[a];
        idx[a] = 0;
      }
    };
    const bool whole_rows = c0 == 0 && c1 == inner;
    std::vector<int64_t> gbase(whole_rows && group > 1 ? static_cast<size_t>(group) * nops : 0);
    for (int64_t row = r0; row < r1;) {
      if (const int64_t g = whole_rows ? std::min(group, r1 - row) : 1; g > 1) {
        for (int64_t q = 0; q < g; ++q) {
          if (row + q > r0) next_row();
          std::copy(base.begin(), base.end(), gbase.begin() + q * static_cast<int64_t>(nops));
        }
        const int64_t len = g * inner;
        auto at = [&](int64_t q, size_t o) { return gbase[static_cast<size_t>(q) * nops + o]; };
        if (half)
          widen_tile(data16[0] + at(0, 0), 1, v, len);
        else
          std::copy(data[0] + at(0, 0), data[0] + at(0, 0) + len, v);
        for (const Link& l : links) {
          if (l.operand < 0) {
            apply_unary(l, v, len);
            continue;
          }
          const size_t o = static_cast<size_t>(l.operand);
          const float* src = nullptr;
          if (lay.strides[o] == lay.strides[0]) {  // as long as the output: rows in a row
            if (data16[o])
              widen_tile(data16[o] + at(0, o), 1, widened, len);
            else
              src = data[o] + at(0, o);
          } else {  // one value per row
            float vals[kTile];
            for (int64_t q = 0; q < g; ++q) vals[q] = data16[o] ? bf16_to_f32(data16[o][at(q, o)]) : data[o][at(q, o)];
            fill_rows(widened, vals, g, inner);
          }
          apply_binary(l.op, v, src ? src : widened, 1, l.side, len);
        }
        if (half_out) {
          if (fd16) narrow_tile(v, fd16 + row * inner, len);
          if (!sum) narrow_tile(v, yd16 + row * inner, len);
        } else {
          if (full) std::copy(v, v + len, fd + row * inner);
          if (!sum) std::copy(v, v + len, yd + row * inner);
        }
        if (sum) {
          const int64_t sy = lay.strides[y_op][r - 1];
          for (int64_t q = 0; q < g; ++q) {
            const float* vq = v + q * inner;
            if (sy == 0) {
              float part = 0;
              MS_SIMD_REDUCE_FOR(int64_t i = 0; i < inner; ++i) part += vq[i];
              (*sum)[static_cast<size_t>(at(q, y_op))] += part;
            } else {
              double* dst = sum->data() + at(q, y_op);
              for (int64_t i = 0; i < inner; ++i) dst[i * sy] += vq[i];
            }
          }
        }
        row += g;
        continue;
      }
      if (row > r0) next_row();
      for (int64_t t0 = c0; t0 < c1; t0 += kTile) {
        const int64_t len = std::min(kTile, c1 - t0);
        const int64_t st0 = lay.strides[0][r - 1];
        if (half) {
          const bf16* xs = data16[0] + base[0] + t0 * st0;
          widen_tile(xs, st0, v, len);
        } else {
          const float* xs = data[0] + base[0] + t0 * st0;
          if (st0 == 1)
            std::copy(xs, xs + len, v);
          else
            for (int64_t i = 0; i < len; ++i) v[i] = xs[i * st0];
        }
        for (const Link& l : links) {
          if (l.operand < 0) {
            apply_unary(l, v, len);
          } else {
            const size_t o = static_cast<size_t>(l.operand);
            const int64_t st = lay.strides[o][r - 1];
            if (data16[o]) {
              const bf16* src = data16[o] + base[o] + t0 * st;
              widen_tile(src, st, widened, st == 0 ? 1 : len);
              apply_binary(l.op, v, widened, st == 0 ? 0 : 1, l.side, len);
            } else {
              apply_binary(l.op, v, data[o] + base[o] + t0 * st, st, l.side, len);
            }
          }
        }
        if (half_out) {
          if (fd16) narrow_tile(v, fd16 + row * inner + t0, len);
          if (!sum) narrow_tile(v, yd16 + row * inner + t0, len);
        } else {
          if (full) std::copy(v, v + len, fd + row * inner + t0);
          if (!sum) std::copy(v, v + len, yd + row * inner + t0);
        }
        if (!sum) continue;
        if (const int64_t sy = lay.strides[y_op][r - 1]; sy == 0) {
          float part = 0;
          MS_SIMD_REDUCE_FOR(int64_t i = 0; i < len; ++i) part += v[i];
          (*sum)[static_cast<size_t>(base[y_op])] += part;
        } else {
          double* dst = sum->data() + base[y_op] + t0 * sy;
          for (int64_t i = 0; i < len; ++i) dst[i * sy] += v[i];
        }
      }
      ++row;
    }
  };
  const int64_t total = x.numel();
  constexpr int64_t kGrain = 1 << 14;
  const int64_t nthreads = omp_get_max_threads();
  if (total < 2 * kGrain || nthreads < 2) {
    body(0, rows, 0, inner);
    ctx.set_impl("fused:rows");
  } else if (rows >= 4 * nthreads) {
    // Whole rows per task, about kGrain elements each.
    const int64_t per = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner));
    const int64_t tasks = (rows + per - 1) / per;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) body(t * per, std::min(rows, (t + 1) * per), 0, inner);
    ctx.set_impl("fused:rows:omp");
  } else {
    // Few long rows (operands alike over the whole tensor collapse into one row): each row split
    // into runs of whole tiles, about kGrain elements per task.
    const int64_t chunk = std::max<int64_t>(kTile, kGrain / kTile * kTile);
    const int64_t per_row = (inner + chunk - 1) / chunk;
    const int64_t tasks = rows * per_row;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t row = t / per_row, c0 = (t % per_row) * chunk;
      body(row, row + 1, c0, std::min(inner, c0 + chunk));
    }
    ctx.set_impl("fused:chunks:omp");
  }
  if (reduce) {
    for (int64_t i = 0; i < y.numel(); ++i) {
      double t = 0;
      for (const auto& a : acc)
        if (!a.empty()) t += a[static_cast<size_t>(i)];
      if (half_out)
        yd16[i] = f32_to_bf16(static_cast<float>(t * scale));
      else
        yd[i] = static_cast<float>(t * scale);
    }
    ctx.set_impl(ctx.impl() + "+reduce");
  }
  return Status::ok();
}

}  // namespace

void register_fused_elementwise_kernels(runtime::KernelRegistry& r) {
  r.add("FusedElementwise", fused_elementwise_kernel, ops::kFusedDomain);
}

}  // namespace ms::cpu::fused
