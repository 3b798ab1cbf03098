// CPU kernels: RNN, LSTM, GRU (ONNX opset 7+), and Scan (recurrent_scan.cpp).
// One Eigen GEMM for x*W^T over all time steps, then one h*R^T GEMM plus the gate math per step.
// Math runs in float (double for f64 inputs); inputs are read into time-major [seq, batch, *] buffers
// and outputs written back in the node's layout.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/ops/recurrent_internal.h"

namespace ms::cpu {

void register_scan_kernels(runtime::KernelRegistry& r);  // recurrent_scan.cpp

namespace {

using ops::rnn::Act;
using ops::rnn::ActSpec;
using std::to_string;

template <class A> using Mat = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class A> using MapM = Eigen::Map<Mat<A>>;
template <class A> using CMapM = Eigen::Map<const Mat<A>>;
template <class A> using Row = Eigen::Matrix<A, 1, Eigen::Dynamic>;

enum class Cell { Rnn, Gru, Lstm };

struct Config {
  Cell cell = Cell::Rnn;
  int64_t gates = 1, seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool layout1 = false, reverse = false, input_forget = false, linear_before_reset = false;
  double clip = 0;  // 0: no clipping
  int per_dir = 1;
  std::vector<ActSpec> acts;  // per_dir * dirs, direction-major
  std::vector<int64_t> lens;  // per batch row
};

// ---- activations -------------------------------------------------------------------------------

template <class A> void apply_act(const ActSpec& a, A* p, int64_t n) {
  const A al = static_cast<A>(a.alpha), be = static_cast<A>(a.beta), one(1), zero(0);
  switch (a.kind) {
    case Act::Relu:
      for (int64_t i = 0; i < n; ++i) p[i] = std::max(p[i], zero);
      break;
    case Act::Tanh:
      for (int64_t i = 0; i < n; ++i) p[i] = std::tanh(p[i]);
      break;
    case Act::Sigmoid:
      for (int64_t i = 0; i < n; ++i) p[i] = one / (one + std::exp(-p[i]));
      break;
    case Act::Affine:
      for (int64_t i = 0; i < n; ++i) p[i] = al * p[i] + be;
      break;
    case Act::LeakyRelu:
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] >= zero ? p[i] : al * p[i];
      break;
    case Act::ThresholdedRelu:
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] > al ? p[i] : zero;
      break;
    case Act::ScaledTanh:
      for (int64_t i = 0; i < n; ++i) p[i] = al * std::tanh(be * p[i]);
      break;
    case Act::HardSigmoid:
      for (int64_t i = 0; i < n; ++i) p[i] = std::min(one, std::max(zero, al * p[i] + be));
      break;
    case Act::Elu:
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] >= zero ? p[i] : al * (std::exp(p[i]) - one);
      break;
    case Act::Softsign:
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] / (one + std::abs(p[i]));
      break;
    case Act::Softplus:
      for (int64_t i = 0; i < n; ++i)
        p[i] = p[i] > zero ? p[i] + std::log1p(std::exp(-p[i])) : std::log1p(std::exp(p[i]));
      break;
  }
}

// Clip (when set), then the activation: ONNX clips the inputs of activations.
template <class A> void activate(const Config& c, const ActSpec& a, A* p, int64_t n) {
  if (c.clip > 0) {
    const A lim = static_cast<A>(c.clip);
    for (int64_t i = 0; i < n; ++i) p[i] = std::clamp(p[i], -lim, lim);
  }
  apply_act(a, p, n);
}

// ---- configuration and input checks ------------------------------------------------------------

Status expect_shape(runtime::KernelContext& ctx, size_t i, const char* name, const Shape& want) {
  if (!ctx.has_input(i)) return Status::ok();
  const Tensor& t = ctx.input(i);
  if (t.shape() != want)
    return ctx.fail("input " + to_string(i) + " (" + name + ") has shape " + shape_to_string(t.shape()) +
                    ", expected " + shape_to_string(want));
  if (i != 4 && t.dtype() != ctx.input(0).dtype())
    return ctx.fail("input " + to_string(i) + " (" + name + ") is " + std::string(dtype_name(t.dtype())) + ", X is " +
                    std::string(dtype_name(ctx.input(0).dtype())));
  return Status::ok();
}

Status read_lens(runtime::KernelContext& ctx, Config& c) {
  c.lens.assign(static_cast<size_t>(c.batch), c.seq);
  if (!ctx.has_input(4)) return Status::ok();
  const Tensor& l = ctx.input(4);
  if (l.dtype() != DType::I32 && l.dtype() != DType::I64)
    return ctx.fail("input 4 (sequence_lens) must be i32, got " + std::string(dtype_name(l.dtype())));
  MS_RETURN_IF_ERROR(expect_shape(ctx, 4, "sequence_lens", {c.batch}));
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t v = l.at_int(b);
    if (v < 0 || v > c.seq)
      return ctx.fail("input 4 (sequence_lens) entry " + to_string(b) + " = " + to_string(v) + " is outside [0, " +
                      to_string(c.seq) + "]");
    c.lens[static_cast<size_t>(b)] = v;
  }
  return Status::ok();
}

Status read_attrs(runtime::KernelContext& ctx, Config& c) {
  const ir::Node& n = ctx.node();
  c.dirs = ops::rnn::num_directions(n);
  if (c.dirs == 0)
    return ctx.fail("attribute 'direction' must be forward, reverse or bidirectional, got '" +
                    n.attr_string("direction", "") + "'");
  c.reverse = n.attr_string("direction", "forward") == "reverse";
  const int64_t layout = n.attr_int("layout", 0);
  if (layout != 0 && layout != 1) return ctx.fail("attribute 'layout' must be 0 or 1, got " + to_string(layout));
  c.layout1 = layout == 1;
  if (n.has_attr("clip")) {
    c.clip = n.attr_float("clip", 0);
    if (!(c.clip > 0)) return ctx.fail("attribute 'clip' must be > 0, got " + std::to_string(c.clip));
  }
  c.input_forget = n.attr_int("input_forget", 0) != 0;
  c.linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;
  c.per_dir = ops::rnn::activations_per_direction(n.op_type);
  const std::string err = ops::rnn::parse_activations(n, c.per_dir, static_cast<int>(c.dirs), c.acts);
  if (!err.empty()) return ctx.fail(err);
  return Status::ok();
}

Status read_config(runtime::KernelContext& ctx, Config& c) {
  MS_RETURN_IF_ERROR(read_attrs(ctx, c));
  const Tensor& x = ctx.input(0);
  if (!is_float(x.dtype()))
    return ctx.fail("input 0 (X) must be a float tensor, got " + std::string(dtype_name(x.dtype())));
  if (x.rank() != 3 || ctx.input(2).rank() != 3)
    return ctx.fail("inputs X and R must have rank 3, got " + shape_to_string(x.shape()) + " and " +
                    shape_to_string(ctx.input(2).shape()));
  c.seq = x.dim(c.layout1 ? 1 : 0);
  c.batch = x.dim(c.layout1 ? 0 : 1);
  c.input = x.dim(2);
  c.hidden = ctx.input(2).dim(2);
  const int64_t h = c.hidden, d = c.dirs, gh = c.gates * h;
  const int64_t attr_h = ctx.node().attr_int("hidden_size", h);
  if (attr_h != h) return ctx.fail("attribute 'hidden_size' = " + to_string(attr_h) + " but R has " + to_string(h));
  MS_RETURN_IF_ERROR(expect_shape(ctx, 1, "W", {d, gh, c.input}));
  MS_RETURN_IF_ERROR(expect_shape(ctx, 2, "R", {d, gh, h}));
  MS_RETURN_IF_ERROR(expect_shape(ctx, 3, "B", {d, 2 * gh}));
  const Shape state = c.layout1 ? Shape{c.batch, d, h} : Shape{d, c.batch, h};
  MS_RETURN_IF_ERROR(expect_shape(ctx, 5, "initial_h", state));
  if (c.cell == Cell::Lstm) {
    MS_RETURN_IF_ERROR(expect_shape(ctx, 6, "initial_c", state));
    MS_RETURN_IF_ERROR(expect_shape(ctx, 7, "P", {d, 3 * h}));
  }
  return read_lens(ctx, c);
}

// ---- buffers -----------------------------------------------------------------------------------

template <class A, class T> std::vector<A> to_acc(const Tensor& t) {
  std::vector<A> v(static_cast<size_t>(t.numel()));
  const T* p = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<A>(p[i]);
  return v;
}

// [n0, n1, inner] -> [n1, n0, inner].
template <class A> std::vector<A> swap01(const std::vector<A>& src, int64_t n0, int64_t n1, int64_t inner) {
  std::vector<A> dst(src.size());
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j)
      std::copy_n(src.begin() + (i * n1 + j) * inner, inner, dst.begin() + (j * n0 + i) * inner);
  return dst;
}

template <class A> struct Buffers {
  std::vector<A> x;       // [seq, batch, input]
  std::vector<A> w, r;    // [dirs, gates*hidden, input], [dirs, gates*hidden, hidden]
  std::vector<A> bias;    // [dirs, 2*gates*hidden]
  std::vector<A> p;       // [dirs, 3*hidden]
  std::vector<A> y;       // [seq, dirs, batch, hidden]
  std::vector<A> h, cst;  // [dirs, batch, hidden]: initial, then final states
};

// Input i in time-major/direction-major form, or `fill` zeros of `n` when absent.
template <class A, class T>
std::vector<A> load(runtime::KernelContext& ctx, size_t i, size_t n, bool swap, int64_t n0, int64_t n1, int64_t inner) {
  if (!ctx.has_input(i)) return std::vector<A>(n, A(0));
  std::vector<A> v = to_acc<A, T>(ctx.input(i));
  return swap ? swap01(v, n0, n1, inner) : v;
}

template <class A, class T> Buffers<A> load_buffers(runtime::KernelContext& ctx, const Config& c) {
  Buffers<A> b;
  const int64_t h = c.hidden, d = c.dirs, gh = c.gates * h;
  const auto state_n = static_cast<size_t>(d * c.batch * h);
  b.x = load<A, T>(ctx, 0, 0, c.layout1, c.batch, c.seq, c.input);
  b.w = to_acc<A, T>(ctx.input(1));
  b.r = to_acc<A, T>(ctx.input(2));
  b.bias = load<A, T>(ctx, 3, static_cast<size_t>(d * 2 * gh), false, 0, 0, 0);
  b.h = load<A, T>(ctx, 5, state_n, c.layout1, c.batch, d, h);
  if (c.cell == Cell::Lstm) {
    b.cst = load<A, T>(ctx, 6, state_n, c.layout1, c.batch, d, h);
    b.p = load<A, T>(ctx, 7, static_cast<size_t>(d * 3 * h), false, 0, 0, 0);
  }
  b.y.assign(static_cast<size_t>(c.seq * d * c.batch * h), A(0));
  return b;
}

// ---- one direction -----------------------------------------------------------------------------

template <class A> struct Work {
  const Config& c;
  int64_t d;
  CMapM<A> r;        // [gates*hidden, hidden]
  Mat<A> xw;         // [seq*batch, gates*hidden], input biases folded in
  Mat<A> gates;      // [batch, gates*hidden]
  Mat<A> tmp, tmp2;  // [batch, hidden]
  MapM<A> h;         // [batch, hidden] state (in Buffers::h)
  A* cst;            // LSTM cell state rows (in Buffers::cst)
  const A* peep;     // LSTM peepholes [3*hidden]
  Row<A> rb_h;       // GRU with linear_before_reset: the recurrent bias of the h gate
  const ActSpec* act;
  std::vector<int64_t> time;  // per batch row: this step's time index, -1 when past the row's length
};

// x*W^T for every step at once, plus the biases that sit outside the recurrence.
template <class A> void input_projection(Work<A>& w, Buffers<A>& b) {
  const Config& c = w.c;
  const int64_t h = c.hidden, gh = c.gates * h;
  CMapM<A> x(b.x.data(), c.seq * c.batch, c.input);
  CMapM<A> wd(b.w.data() + w.d * gh * c.input, gh, c.input);
  w.xw.noalias() = x * wd.transpose();
  const A* wb = b.bias.data() + w.d * 2 * gh;
  const A* rb = wb + gh;
  Row<A> bias(gh);
  for (int64_t k = 0; k < gh; ++k) bias[k] = wb[k] + rb[k];
  if (c.cell == Cell::Gru && c.linear_before_reset) {
    w.rb_h = Eigen::Map<const Row<A>>(rb + 2 * h, h);
    for (int64_t k = 2 * h; k < gh; ++k) bias[k] = wb[k];
  }
  w.xw.rowwise() += bias;
}

template <class A> void gather_step(Work<A>& w, int64_t s) {
  const Config& c = w.c;
  const bool reverse = c.reverse || w.d == 1;
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t len = c.lens[static_cast<size_t>(b)];
    const int64_t t = s < len ? (reverse ? len - 1 - s : s) : -1;
    w.time[static_cast<size_t>(b)] = t;
    if (t >= 0)
      w.gates.row(b) = w.xw.row(t * c.batch + b);
    else
      w.gates.row(b).setZero();
  }
}

template <class A> void store_h(Work<A>& w, Buffers<A>& buf, int64_t b, const A* hrow) {
  const Config& c = w.c;
  const int64_t t = w.time[static_cast<size_t>(b)];
  std::copy_n(hrow, c.hidden, &w.h(b, 0));
  std::copy_n(hrow, c.hidden, buf.y.data() + ((t * c.dirs + w.d) * c.batch + b) * c.hidden);
}

template <class A> void rnn_step(Work<A>& w, Buffers<A>& buf) {
  w.gates.noalias() += w.h * w.r.transpose();
  for (int64_t b = 0; b < w.c.batch; ++b) {
    if (w.time[static_cast<size_t>(b)] < 0) continue;
    A* g = &w.gates(b, 0);
    activate(w.c, w.act[0], g, w.c.hidden);
    store_h(w, buf, b, g);
  }
}

template <class A> void lstm_row(Work<A>& w, int64_t b, A* g, A* hout) {
  const Config& c = w.c;
  const int64_t h = c.hidden;
  A *ig = g, *og = g + h, *fg = g + 2 * h, *cg = g + 3 * h;
  A* cs = w.cst + b * h;
  const A *pi = w.peep, *po = w.peep + h, *pf = w.peep + 2 * h;
  for (int64_t k = 0; k < h; ++k) {
    ig[k] += pi[k] * cs[k];
    fg[k] += pf[k] * cs[k];
  }
  activate(c, w.act[0], ig, h);
  if (c.input_forget)
    for (int64_t k = 0; k < h; ++k) fg[k] = A(1) - ig[k];
  else
    activate(c, w.act[0], fg, h);
  activate(c, w.act[1], cg, h);
  for (int64_t k = 0; k < h; ++k) {
    cs[k] = fg[k] * cs[k] + ig[k] * cg[k];
    og[k] += po[k] * cs[k];
    hout[k] = cs[k];
  }
  activate(c, w.act[0], og, h);
  apply_act(w.act[2], hout, h);  // h(Ct): the cell state is not clipped
  for (int64_t k = 0; k < h; ++k) hout[k] *= og[k];
}

template <class A> void lstm_step(Work<A>& w, Buffers<A>& buf) {
  w.gates.noalias() += w.h * w.r.transpose();
  for (int64_t b = 0; b < w.c.batch; ++b) {
    if (w.time[static_cast<size_t>(b)] < 0) continue;
    A* hout = &w.tmp(b, 0);
    lstm_row(w, b, &w.gates(b, 0), hout);
    store_h(w, buf, b, hout);
  }
}

// GRU: z, r = f(...); h~ = g(x*Wh^T + (r . h)*Rh^T + biases) or, with linear_before_reset,
// g(x*Wh^T + Wbh + r . (h*Rh^T + Rbh)); h' = (1 - z) . h~ + z . h.
template <class A> void gru_step(Work<A>& w, Buffers<A>& buf) {
  const Config& c = w.c;
  const int64_t h = c.hidden;
  w.gates.leftCols(2 * h).noalias() += w.h * w.r.topRows(2 * h).transpose();
  for (int64_t b = 0; b < c.batch; ++b) {
    if (w.time[static_cast<size_t>(b)] >= 0) activate(c, w.act[0], &w.gates(b, 0), 2 * h);
  }
  if (c.linear_before_reset) {
    w.tmp.noalias() = w.h * w.r.bottomRows(h).transpose();
    w.tmp.rowwise() += w.rb_h;
    w.tmp.array() *= w.gates.middleCols(h, h).array();
  } else {
    w.tmp2 = w.gates.middleCols(h, h).cwiseProduct(w.h);
    w.tmp.noalias() = w.tmp2 * w.r.bottomRows(h).transpose();
  }
  for (int64_t b = 0; b < c.batch; ++b) {
    if (w.time[static_cast<size_t>(b)] < 0) continue;
    A* z = &w.gates(b, 0);
    A* hh = z + 2 * h;
    const A* hprev = &w.h(b, 0);
    for (int64_t k = 0; k < h; ++k) hh[k] += w.tmp(b, k);
    activate(c, w.act[1], hh, h);
    A* hout = &w.tmp2(b, 0);
    for (int64_t k = 0; k < h; ++k) hout[k] = (A(1) - z[k]) * hh[k] + z[k] * hprev[k];
    store_h(w, buf, b, hout);
  }
}

template <class A> void run_direction(const Config& c, int64_t d, Buffers<A>& buf) {
  const int64_t h = c.hidden, gh = c.gates * h;
  Work<A> w{c,
            d,
            CMapM<A>(buf.r.data() + d * gh * h, gh, h),
            Mat<A>(),
            Mat<A>::Zero(c.batch, gh),
            Mat<A>::Zero(c.batch, h),
            Mat<A>::Zero(c.batch, h),
            MapM<A>(buf.h.data() + d * c.batch * h, c.batch, h),
            c.cell == Cell::Lstm ? buf.cst.data() + d * c.batch * h : nullptr,
            c.cell == Cell::Lstm ? buf.p.data() + d * 3 * h : nullptr,
            Row<A>(),
            c.acts.data() + d * c.per_dir,
            std::vector<int64_t>(static_cast<size_t>(c.batch), -1)};
  input_projection(w, buf);
  for (int64_t s = 0; s < c.seq; ++s) {
    gather_step(w, s);
    if (c.cell == Cell::Rnn) rnn_step(w, buf);
    if (c.cell == Cell::Gru) gru_step(w, buf);
    if (c.cell == Cell::Lstm) lstm_step(w, buf);
  }
}

// ---- outputs -----------------------------------------------------------------------------------

// Y: [seq, dirs, batch, hidden] (layout 0) or [batch, seq, dirs, hidden] (layout 1).
template <class A, class T> void write_y(const Config& c, const std::vector<A>& y, Tensor& out) {
  T* dst = out.data<T>();
  const int64_t h = c.hidden;
  for (int64_t t = 0; t < c.seq; ++t)
    for (int64_t d = 0; d < c.dirs; ++d)
      for (int64_t b = 0; b < c.batch; ++b) {
        const A* src = y.data() + ((t * c.dirs + d) * c.batch + b) * h;
        const int64_t o = c.layout1 ? ((b * c.seq + t) * c.dirs + d) * h : ((t * c.dirs + d) * c.batch + b) * h;
        for (int64_t k = 0; k < h; ++k) dst[o + k] = static_cast<T>(src[k]);
      }
}

// Y_h, Y_c: [dirs, batch, hidden] (layout 0) or [batch, dirs, hidden] (layout 1).
template <class A, class T> void write_state(const Config& c, const std::vector<A>& s, Tensor& out) {
  const std::vector<A> v = c.layout1 ? swap01(s, c.dirs, c.batch, c.hidden) : s;
  T* dst = out.data<T>();
  for (size_t i = 0; i < v.size(); ++i) dst[i] = static_cast<T>(v[i]);
}

template <class T> Status run_typed(runtime::KernelContext& ctx, const Config& c) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  Buffers<A> buf = load_buffers<A, T>(ctx, c);
  for (int64_t d = 0; d < c.dirs; ++d) run_direction(c, d, buf);
  const int64_t s = c.seq, b = c.batch, d = c.dirs, h = c.hidden;
  const Shape state = c.layout1 ? Shape{b, d, h} : Shape{d, b, h};
  const DType dt = ctx.input(0).dtype();
  const auto& names = ctx.node().outputs;
  for (size_t i = 0; i < ctx.num_outputs() && i < 3; ++i) {
    if (i < names.size() && names[i].empty()) continue;  // optional output left out
    if (i == 2 && c.cell != Cell::Lstm) return ctx.fail("has an output Y_c, which only LSTM gives");
    MS_ASSIGN_OR_RETURN(
        Tensor * o, ctx.allocate_output(i, dt, i == 0 ? (c.layout1 ? Shape{b, s, d, h} : Shape{s, d, b, h}) : state));
    if (i == 0)
      write_y<A, T>(c, buf.y, *o);
    else
      write_state<A, T>(c, i == 1 ? buf.h : buf.cst, *o);
  }
  return Status::ok();
}

Status recurrent_kernel(runtime::KernelContext& ctx, Cell cell, int64_t gates, const char* impl) {
  Config c;
  c.cell = cell;
  c.gates = gates;
  MS_RETURN_IF_ERROR(read_config(ctx, c));
  ctx.set_impl(impl);
  switch (ctx.input(0).dtype()) {
    case DType::F32: return run_typed<float>(ctx, c);
    case DType::F64: return run_typed<double>(ctx, c);
    case DType::F16: return run_typed<f16>(ctx, c);
    case DType::BF16: return run_typed<bf16>(ctx, c);
    default: return ctx.unsupported_case("dtype " + std::string(dtype_name(ctx.input(0).dtype())));
  }
}

Status rnn_kernel(runtime::KernelContext& ctx) { return recurrent_kernel(ctx, Cell::Rnn, 1, "eigen:rnn"); }
Status gru_kernel(runtime::KernelContext& ctx) { return recurrent_kernel(ctx, Cell::Gru, 3, "eigen:gru"); }
Status lstm_kernel(runtime::KernelContext& ctx) { return recurrent_kernel(ctx, Cell::Lstm, 4, "eigen:lstm"); }

}  // namespace

void register_recurrent_kernels(runtime::KernelRegistry& r) {
  r.add("RNN", rnn_kernel);
  r.add("GRU", gru_kernel);
  r.add("LSTM", lstm_kernel);
  register_scan_kernels(r);
}

}  // namespace ms::cpu
