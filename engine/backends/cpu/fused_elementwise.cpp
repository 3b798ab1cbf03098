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

// A link runs an op of the table (ops/elementwise_math.h), or one of the chain's own: Square (x * x),
// RoundBf16 (a Cast to bf16: the value rounded to bf16 and back) and QuantizeDequantize (a QDQ
// model's QuantizeLinear -> DequantizeLinear pair: scale alpha, zero point beta, grid [lo, hi]).
enum class Special : uint8_t { None, Square, RoundBf16, QuantizeDequantize };

struct Link {
  ew::Op op = ew::Op::Relu;
  Special special = Special::None;
  int side = 0;  // binary: 0 chain value is the lhs
  float alpha = 0, beta = 0;
  float lo = 0, hi = 0;  // QuantizeDequantize's 8-bit grid
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
  if (l.special == Special::QuantizeDequantize) {
    const float sc = l.alpha, z = l.beta, lo = l.lo, hi = l.hi;
    MS_SIMD_FOR(int64_t i = 0; i < n; ++i) v[i] = ew::quantize_dequantize(v[i], sc, z, lo, hi);
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

// f32 or bf16 (mixed precision) tensors; the loop works in f32, widening each bf16 operand per tile
// and rounding to bf16 where the chain has a Cast to bf16 and when a bf16 result is stored.
bool f32_or_bf16(DType d) { return d == DType::F32 || d == DType::BF16; }

// With `reduce` the chain's results are summed into the output instead of stored.
struct Reduction {
  bool on = false;
  std::vector<int64_t> y_strides;  // where each element of the chain accumulates (0 on reduced axes)
  double scale = 1;
};

// Reads `reduce`, `reduce_axes` and `reduce_scale`, checking that y is the chain's shape `out`
// reduced over those axes (or, without `reduce`, `out` itself).
Status read_reduction(const runtime::KernelContext& ctx, const Shape& out, const Tensor& y, Reduction& red) {
  const ir::Node& n = ctx.node();
  red.on = n.attrs.count("reduce") != 0;
  if (!red.on) {
    if (out != y.shape()) return ctx.fail("the chain's input " + shape_to_string(out) + " is not the output's shape");
    return Status::ok();
  }
  std::vector<char> reduced(out.size(), 0);
  for (int64_t a : n.attr_ints("reduce_axes")) {
    if (a < 0 || a >= static_cast<int64_t>(out.size())) return ctx.fail("reduce_axes do not fit the input");
    reduced[static_cast<size_t>(a)] = 1;
  }
  red.y_strides.assign(out.size(), 0);
  int64_t s = 1, count = 1;
  for (size_t a = out.size(); a-- > 0;) {
    if (reduced[a]) {
      count *= out[a];
      continue;
    }
    red.y_strides[a] = out[a] == 1 ? 0 : s;
    s *= out[a];
  }
  if (s != y.numel())
    return ctx.fail("the output " + shape_to_string(y.shape()) + " is not the reduction of " + shape_to_string(out));
  if (n.attr_string("reduce", "") == "ReduceMean") red.scale = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
  red.scale *= n.attr_float("reduce_scale", 1.f);  // -1: the reduction of the result's negation
  return Status::ok();
}

// The chain's links and operands. Operand 0 is the chain's input (same shape as the output); then
// one per binary link. Each is f32 (data) or bf16 (data16), with its strides broadcast to the output.
struct Chain {
  std::vector<Link> links;
  std::vector<const float*> data;
  std::vector<const bf16*> data16;
  std::vector<std::vector<int64_t>> strides;
  bool half = false;      // the chain's input is bf16
  DType dt = DType::F32;  // the chain value's dtype after each link; the outputs have the last
};

// Sets l's op from the link's name; a Cast changes dt, and `skip` is set for a Cast to f32 (values
// stay as they are, so it needs no link).
Status link_op(const runtime::KernelContext& ctx, const std::string& name, int64_t arity, Link& l, DType& dt,
               bool& skip) {
  if (name == "Cast") {  // to f32: values stay as they are; to bf16: rounded
    const auto to = dtype_from_onnx(static_cast<int>(l.alpha));
    if (!to || !f32_or_bf16(*to)) return ctx.fail("a Cast link converts between f32 and bf16 only");
    dt = *to;
    if (dt == DType::F32) {
      skip = true;
      return Status::ok();
    }
    l.special = Special::RoundBf16;
  } else if (name == "Square") {
    l.special = Special::Square;
  } else if (name == "QuantizeDequantizeU8" || name == "QuantizeDequantizeS8") {
    if (dt != DType::F32) return ctx.fail("a QuantizeDequantize link runs on f32 only");
    l.special = Special::QuantizeDequantize;
    const bool s8 = name == "QuantizeDequantizeS8";
    l.lo = s8 ? -128.f : 0.f;
    l.hi = s8 ? 127.f : 255.f;
  } else if (const ew::OpInfo* op = ew::find(name.c_str()); op && op->arity == arity) {
    l.op = op->op;
  } else {
    return ctx.fail("unknown chain op '" + name + "' of arity " + std::to_string(arity));
  }
  return Status::ok();
}

// Adds input `next` as the operand of the binary link l, checking its dtype against the chain's
// and its rank against the output's.
Status add_operand(const runtime::KernelContext& ctx, int next, const Shape& out, Chain& c, Link& l) {
  if (next >= static_cast<int>(ctx.num_inputs())) return ctx.fail("chain needs more operands");
  const Tensor& t = ctx.input(static_cast<size_t>(next));
  if (t.dtype() != c.dt && !(c.dt == DType::F32 && t.dtype() == DType::BF16))
    return ctx.unsupported_case("operand " + std::to_string(next) + " is " + std::string(dtype_name(t.dtype())) +
                                " where the chain is " + std::string(dtype_name(c.dt)));
  if (t.shape().size() > out.size())
    return ctx.fail("operand " + std::to_string(next) + " has a higher rank than the output");
  const bool t16 = t.dtype() == DType::BF16;
  l.operand = static_cast<int>(c.data.size());
  c.data.push_back(t16 ? nullptr : t.data<float>());
  c.data16.push_back(t16 ? t.data<bf16>() : nullptr);
  c.strides.push_back(broadcast_strides(t.shape(), out));
  return Status::ok();
}

// The links from the `chain` attributes, with the chain's input x and one operand per binary link.
Status build_chain(const runtime::KernelContext& ctx, const std::vector<std::string>& names,
                   const std::vector<int64_t>& arity, const std::vector<int64_t>& side, const Tensor& x, Chain& c) {
  const ir::Node& n = ctx.node();
  const auto alphas = n.attr_floats("chain_alphas"), betas = n.attr_floats("chain_betas");
  const Shape& out = x.shape();
  c.half = x.dtype() == DType::BF16;
  c.data = {c.half ? nullptr : x.data<float>()};
  c.data16 = {c.half ? x.data<bf16>() : nullptr};
  c.strides = {broadcast_strides(out, out)};
  c.dt = x.dtype();
  int next = 1;
  for (size_t i = 0; i < names.size(); ++i) {
    Link l;
    l.side = static_cast<int>(side[i]);
    l.alpha = i < alphas.size() ? alphas[i] : 0.f;
    l.beta = i < betas.size() ? betas[i] : 0.f;
    bool skip = false;
    MS_RETURN_IF_ERROR(link_op(ctx, names[i], arity[i], l, c.dt, skip));
    if (skip) continue;
    if (arity[i] == 2) {
      MS_RETURN_IF_ERROR(add_operand(ctx, next, out, c, l));
      ++next;
    }
    c.links.push_back(l);
  }
  return Status::ok();
}

constexpr int64_t kTile = 1024;

// Short rows (a per-channel operand over a small feature map: 7x7 and smaller) go 16 or more to a
// tile, so each link runs once per tile rather than once per row. That needs every operand to be
// the output's size (its rows follow each other in memory, as the input's do) or one value per
// row (spread over its rows in the tile); the results are stored contiguously anyway. Measured on
// a 5-link chain over bf16 [8, 2048, 7, 7]: 0.85-0.94 -> 0.49-0.66 ms; over 14x14 rows, where
// spreading the per-row values costs more than the calls it saves, 0.75 -> 0.96 ms.
// Returns the rows per tile (1: rows one at a time); y_op is the reduction's operand, if any.
int64_t rows_per_tile(const Layout& lay, bool reduce, size_t y_op) {
  const size_t r = lay.dims.size();
  const int64_t inner = lay.dims.back();
  const size_t nops_all = lay.strides.size();
  bool groupable = inner * 16 <= kTile && lay.strides[0][r - 1] == 1;
  for (size_t o = 1; groupable && o < nops_all; ++o)
    if (!(reduce && o == y_op)) groupable = lay.strides[o] == lay.strides[0] || lay.strides[o][r - 1] == 0;
  return groupable ? kTile / inner : 1;
}

// Each operand's offset at the start of a row (base) and the row's index over the outer axes (idx).
struct RowCursor {
  std::vector<int64_t> base, idx;
};

// sum[i * sy] += v[i] for i < n, or with sy 0 the whole tile added to sum[0].
inline void add_to_sums(double* sum, int64_t sy, const float* v, int64_t n) {
  if (sy == 0) {
    float part = 0;
    MS_SIMD_REDUCE_FOR(int64_t i = 0; i < n; ++i) part += v[i];
    *sum += part;
  } else {
    for (int64_t i = 0; i < n; ++i) sum[i * sy] += v[i];
  }
}

// The loop over the output's rows, with everything it reads fixed before it starts; run() may be
// called from several threads at once on disjoint rows.
class ChainLoop {
 public:
  ChainLoop(Chain& chain, const Reduction& red, const Shape& out, Tensor& y, Tensor* full)
      : chain_(chain), reduce_(red.on), half_(chain.half), half_out_(chain.dt == DType::BF16), y_numel_(y.numel()) {
    // The output's strides ride along as one more operand, so axes merge only where they are all
    // reduced or all kept.
    y_op_ = chain.data.size();
    if (reduce_) {
      chain.data.push_back(nullptr);
      chain.data16.push_back(nullptr);
      chain.strides.push_back(red.y_strides);
    }
    lay_ = collapse(out, std::move(chain.strides));
    r_ = lay_.dims.size();
    inner_ = lay_.dims.back();
    rows_ = 1;
    for (size_t a = 0; a + 1 < r_; ++a) rows_ *= lay_.dims[a];
    nops_ = chain.data.size();
    yd_ = half_out_ ? nullptr : y.data<float>();
    fd_ = full && !half_out_ ? full->data<float>() : nullptr;
    yd16_ = half_out_ ? y.data<bf16>() : nullptr;
    fd16_ = full && half_out_ ? full->data<bf16>() : nullptr;
    has_full_ = full != nullptr;
    // Reduce: each thread sums into its own accumulators (double), added up at the end.
    threads_ = std::max(1, omp_get_max_threads());
    acc_.resize(reduce_ ? static_cast<size_t>(threads_) : 0);
    group_ = rows_per_tile(lay_, reduce_, y_op_);
  }

  int64_t rows() const { return rows_; }
  int64_t inner() const { return inner_; }

  // Rows [r0, r1): each operand's row start from the first row's multi-index, then carried from row
  // to row like an odometer (no division per row); each row in tiles, or a group of rows per tile.
  void run(int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    float widened[kTile];  // bf16: an operand's tile in f32
    std::vector<double>* sum = nullptr;
    if (reduce_) {
      sum = &acc_[static_cast<size_t>(std::min(omp_get_thread_num(), threads_ - 1))];
      if (sum->empty()) sum->assign(static_cast<size_t>(y_numel_), 0.0);
    }
    float v[kTile];
    RowCursor cur = seek(r0);
    const bool whole_rows = c0 == 0 && c1 == inner_;
    std::vector<int64_t> gbase(whole_rows && group_ > 1 ? static_cast<size_t>(group_) * nops_ : 0);
    for (int64_t row = r0; row < r1;) {
      if (const int64_t g = whole_rows ? std::min(group_, r1 - row) : 1; g > 1) {
        for (int64_t q = 0; q < g; ++q) {
          if (row + q > r0) next_row(cur);
          std::copy(cur.base.begin(), cur.base.end(), gbase.begin() + q * static_cast<int64_t>(nops_));
        }
        run_row_group(gbase, row, g, v, widened, sum);
        row += g;
        continue;
      }
      if (row > r0) next_row(cur);
      run_row_tiles(cur, row, c0, c1, v, widened, sum);
      ++row;
    }
  }

  // The output from the threads' accumulators, scaled.
  void write_reduction(double scale) const {
    for (int64_t i = 0; i < y_numel_; ++i) {
      double t = 0;
      for (const auto& a : acc_)
        if (!a.empty()) t += a[static_cast<size_t>(i)];
      if (half_out_)
        yd16_[i] = f32_to_bf16(static_cast<float>(t * scale));
      else
        yd_[i] = static_cast<float>(t * scale);
    }
  }

 private:
  // The cursor at row `row`, from its multi-index.
  RowCursor seek(int64_t row) const {
    RowCursor cur{std::vector<int64_t>(nops_, 0), std::vector<int64_t>(r_, 0)};
    int64_t rem = row;
    for (size_t a = r_ - 1; a-- > 0;) {
      cur.idx[a] = rem % lay_.dims[a];
      rem /= lay_.dims[a];
      for (size_t o = 0; o < nops_; ++o) cur.base[o] += cur.idx[a] * lay_.strides[o][a];
    }
    return cur;
  }

  // Bumps the last outer axis, carrying leftwards.
  void next_row(RowCursor& cur) const {
    for (size_t a = r_ - 1; a-- > 0;) {
      for (size_t o = 0; o < nops_; ++o) cur.base[o] += lay_.strides[o][a];
      if (++cur.idx[a] < lay_.dims[a]) break;
      for (size_t o = 0; o < nops_; ++o) cur.base[o] -= lay_.strides[o][a] * lay_.dims[a];
      cur.idx[a] = 0;
    }
  }

  // Rows [row, row + g) as one tile of g * inner elements; gbase holds each row's operand offsets.
  void run_row_group(const std::vector<int64_t>& gbase, int64_t row, int64_t g, float* v, float* widened,
                     std::vector<double>* sum) const {
    const int64_t len = g * inner_;
    auto at = [&](int64_t q, size_t o) { return gbase[static_cast<size_t>(q) * nops_ + o]; };
    load_input(at(0, 0), 1, v, len);
    for (const Link& l : chain_.links) {
      if (l.operand < 0) {
        apply_unary(l, v, len);
        continue;
      }
      const size_t o = static_cast<size_t>(l.operand);
      const float* src = nullptr;
      if (lay_.strides[o] == lay_.strides[0]) {  // as long as the output: rows in a row
        if (chain_.data16[o])
          widen_tile(chain_.data16[o] + at(0, o), 1, widened, len);
        else
          src = chain_.data[o] + at(0, o);
      } else {  // one value per row
        float vals[kTile];
        for (int64_t q = 0; q < g; ++q)
          vals[q] = chain_.data16[o] ? bf16_to_f32(chain_.data16[o][at(q, o)]) : chain_.data[o][at(q, o)];
        fill_rows(widened, vals, g, inner_);
      }
      apply_binary(l.op, v, src ? src : widened, 1, l.side, len);
    }
    store(v, row * inner_, len, sum != nullptr);
    if (sum) {
      const int64_t sy = lay_.strides[y_op_][r_ - 1];
      for (int64_t q = 0; q < g; ++q) add_to_sums(sum->data() + at(q, y_op_), sy, v + q * inner_, inner_);
    }
  }

  // Columns [c0, c1) of one row, a tile at a time.
  void run_row_tiles(const RowCursor& cur, int64_t row, int64_t c0, int64_t c1, float* v, float* widened,
                     std::vector<double>* sum) const {
    const std::vector<int64_t>& base = cur.base;
    for (int64_t t0 = c0; t0 < c1; t0 += kTile) {
      const int64_t len = std::min(kTile, c1 - t0);
      const int64_t st0 = lay_.strides[0][r_ - 1];
      load_input(base[0] + t0 * st0, st0, v, len);
      for (const Link& l : chain_.links) {
        if (l.operand < 0) {
          apply_unary(l, v, len);
        } else {
          const size_t o = static_cast<size_t>(l.operand);
          const int64_t st = lay_.strides[o][r_ - 1];
          if (chain_.data16[o]) {
            const bf16* src = chain_.data16[o] + base[o] + t0 * st;
            widen_tile(src, st, widened, st == 0 ? 1 : len);
            apply_binary(l.op, v, widened, st == 0 ? 0 : 1, l.side, len);
          } else {
            apply_binary(l.op, v, chain_.data[o] + base[o] + t0 * st, st, l.side, len);
          }
        }
      }
      store(v, row * inner_ + t0, len, sum != nullptr);
      if (!sum) continue;
      const int64_t sy = lay_.strides[y_op_][r_ - 1];
      add_to_sums(sum->data() + base[y_op_] + t0 * sy, sy, v, len);
    }
  }

  // v[i] = the chain's input at offset + i * st0, in f32.
  void load_input(int64_t offset, int64_t st0, float* __restrict v, int64_t len) const {
    if (half_) {
      widen_tile(chain_.data16[0] + offset, st0, v, len);
    } else {
      const float* xs = chain_.data[0] + offset;
      if (st0 == 1)
        std::copy(xs, xs + len, v);
      else
        for (int64_t i = 0; i < len; ++i) v[i] = xs[i * st0];
    }
  }

  // The tile v to the outputs at element `at`: output 0 when the chain's result is kept beside a
  // reduction, the output itself when nothing is summed (`summed` false).
  void store(const float* v, int64_t at, int64_t len, bool summed) const {
    if (half_out_) {
      if (fd16_) narrow_tile(v, fd16_ + at, len);
      if (!summed) narrow_tile(v, yd16_ + at, len);
    } else {
      if (has_full_) std::copy(v, v + len, fd_ + at);
      if (!summed) std::copy(v, v + len, yd_ + at);
    }
  }

  const Chain& chain_;
  const bool reduce_, half_, half_out_;
  const int64_t y_numel_;
  size_t y_op_ = 0, r_ = 0, nops_ = 0;
  Layout lay_;
  int64_t inner_ = 0, rows_ = 1, group_ = 1;
  float* yd_ = nullptr;
  float* fd_ = nullptr;
  bf16* yd16_ = nullptr;
  bf16* fd16_ = nullptr;
  bool has_full_ = false;
  int threads_ = 1;
  std::vector<std::vector<double>> acc_;
};

// Runs the loop over `total` elements: on this thread when small, else whole rows per OpenMP task
// or, with few long rows, runs of tiles; names the schedule in the kernel's impl.
void run_scheduled(ChainLoop& loop, int64_t total, runtime::KernelContext& ctx) {
  const int64_t rows = loop.rows(), inner = loop.inner();
  constexpr int64_t kGrain = 1 << 14;
  const int64_t nthreads = omp_get_max_threads();
  if (total < 2 * kGrain || nthreads < 2) {
    loop.run(0, rows, 0, inner);
    ctx.set_impl("fused:rows");
  } else if (rows >= 4 * nthreads) {
    // Whole rows per task, about kGrain elements each.
    const int64_t per = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner));
    const int64_t tasks = (rows + per - 1) / per;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) loop.run(t * per, std::min(rows, (t + 1) * per), 0, inner);
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
      loop.run(row, row + 1, c0, std::min(inner, c0 + chunk));
    }
    ctx.set_impl("fused:chunks:omp");
  }
}

Status fused_elementwise_kernel(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const auto* names = n.attrs.count("chain") ? n.attrs.at("chain").get_if<std::vector<std::string>>() : nullptr;
  if (!names) return ctx.fail("missing 'chain'");
  const auto arity = n.attr_ints("chain_arity"), side = n.attr_ints("chain_side");
  if (arity.size() != names->size() || side.size() != names->size()) return ctx.fail("chain attributes disagree");
  const Tensor& x = ctx.input(0);
  // With `reduce` and two outputs, output 0 is the chain's result and output 1 its reduction.
  const bool both = n.attrs.count("reduce") != 0 && ctx.num_outputs() == 2;
  Tensor* full = both ? &ctx.output(0) : nullptr;
  Tensor& y = ctx.output(both ? 1 : 0);
  if (!f32_or_bf16(x.dtype())) return ctx.unsupported_case("fused elementwise needs f32 or bf16 tensors");
  if (full && full->shape() != x.shape())
    return ctx.fail("output 0 " + shape_to_string(full->shape()) + " is not the chain's shape " +
                    shape_to_string(x.shape()));
  // The loop runs over the chain's shape (input 0's).
  const Shape& out = x.shape();
  Reduction red;
  MS_RETURN_IF_ERROR(read_reduction(ctx, out, y, red));
  Chain chain;
  MS_RETURN_IF_ERROR(build_chain(ctx, *names, arity, side, x, chain));
  if (y.dtype() != chain.dt || (full && full->dtype() != chain.dt))
    return ctx.fail("the outputs are not the chain's " + std::string(dtype_name(chain.dt)));
  ChainLoop loop(chain, red, out, y, full);
  run_scheduled(loop, x.numel(), ctx);
  if (red.on) {
    loop.write_reduction(red.scale);
    ctx.set_impl(ctx.impl() + "+reduce");
  }
  return Status::ok();
}

}  // namespace

void register_fused_elementwise_kernels(runtime::KernelRegistry& r) {
  r.add("FusedElementwise", fused_elementwise_kernel, ops::kFusedDomain);
}

}  // namespace ms::cpu::fused
