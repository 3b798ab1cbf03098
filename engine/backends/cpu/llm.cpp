// CPU kernels: RMSNormalization, RotaryEmbedding, SwiGLU, TensorScatter here; LinearAttention and
// CausalConvWithState in llm_state.cpp. Shapes are checked by the plans the schemas use
// (engine/ops/llm_internal.h); f16/bf16 compute in f32, f64 in double.
#include "engine/backends/cpu/llm_internal.h"

#include <omp.h>

#include <cmath>
#include <cstring>

#include "engine/backends/cpu/tensor_internal.h"

namespace ms::cpu::llm {

ops::llm::Arg arg_of(runtime::KernelContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return ops::llm::Arg{};
  return ops::llm::arg(ctx.input(i).shape());
}

Status bad_dtype(runtime::KernelContext& ctx, const char* name, DType t) {
  return ctx.unsupported_case(std::string("input '") + name + "' of dtype " + std::string(dtype_name(t)) +
                              " is not supported");
}

bool wants_output(runtime::KernelContext& ctx, size_t i) {
  return i < ctx.num_outputs() && i < ctx.node().outputs.size() && !ctx.node().outputs[i].empty();
}

namespace {

using std::vector;

// Offsets into a tensor of shape `s` broadcast (numpy, right-aligned) onto `x`, for the flattened
// coordinates of x's dims [from, to).
vector<int64_t> broadcast_offsets(const Shape& x, const Shape& s, size_t from, size_t to) {
  const size_t lead = x.size() - s.size();
  const Shape st = contiguous_strides(s);
  int64_t count = 1;
  for (size_t d = from; d < to; ++d) count *= x[d];
  vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, off = 0;
    for (size_t d = to; d-- > from;) {
      const int64_t pos = rest % x[d];
      rest /= x[d];
      if (d >= lead && s[d - lead] != 1) off += pos * st[d - lead];
    }
    out[static_cast<size_t>(i)] = off;
  }
  return out;
}

// --- RMSNormalization -----------------------------------------------------------------------------

template <class T, class V>
void rms_rows(const T* x, const V* w, V* y, const vector<int64_t>& row_off, const vector<int64_t>& col_off,
              double eps) {
  using C = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<V, double>, double, float>;
  const auto outer = static_cast<int64_t>(row_off.size()), inner = static_cast<int64_t>(col_off.size());
  if (inner == 0) return;
#pragma omp parallel for schedule(static) if (outer * inner > 65536)
  for (int64_t o = 0; o < outer; ++o) {
    const T* xr = x + o * inner;
    V* yr = y + o * inner;
    const V* wr = w + row_off[static_cast<size_t>(o)];
    double s = 0;
    for (int64_t j = 0; j < inner; ++j) {
      const auto v = static_cast<double>(xr[j]);
      s += v * v;
    }
    const C inv = C(1) / std::sqrt(static_cast<C>(s / static_cast<double>(inner)) + static_cast<C>(eps));
    for (int64_t j = 0; j < inner; ++j)
      yr[j] = static_cast<V>(static_cast<C>(xr[j]) * inv * static_cast<C>(wr[col_off[static_cast<size_t>(j)]]));
  }
}

Status rms_kernel(runtime::KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  ops::llm::RmsPlan p;
  if (auto e = ops::llm::rms_plan(ctx.node(), arg_of(ctx, 0), arg_of(ctx, 1), p); !e.empty()) return ctx.fail(e);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, w.dtype(), x.shape()));
  const auto axis = static_cast<size_t>(p.axis);
  const vector<int64_t> rows = broadcast_offsets(x.shape(), w.shape(), 0, axis);
  const vector<int64_t> cols = broadcast_offsets(x.shape(), w.shape(), axis, x.shape().size());
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  bool ok = false;
  nn::visit_float(x.dtype(), [&](auto tx) {
    ok = nn::visit_float(w.dtype(), [&](auto tw) {
      using T = typename decltype(tx)::type;
      using V = typename decltype(tw)::type;
      rms_rows(x.data<T>(), w.data<V>(), y->data<V>(), rows, cols, eps);
    });
  });
  if (!ok) return bad_dtype(ctx, is_float(x.dtype()) ? "scale" : "X", is_float(x.dtype()) ? w.dtype() : x.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

// --- RotaryEmbedding ------------------------------------------------------------------------------

template <class T> void rotate_head(const T* x, T* y, const T* c, const T* s, const ops::llm::RotaryPlan& p) {
  using A = nn::acc_t<T>;
  const int64_t half = p.rot_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i1 = p.interleaved ? 2 * i : i, i2 = p.interleaved ? 2 * i + 1 : i + half;
    const A x1 = static_cast<A>(x[i1]), x2 = static_cast<A>(x[i2]);
    const A cv = static_cast<A>(c[i]), sv = static_cast<A>(s[i]);
    y[i1] = static_cast<T>(cv * x1 - sv * x2);
    y[i2] = static_cast<T>(sv * x1 + cv * x2);
  }
  for (int64_t j = p.rot_dim; j < p.head_size; ++j) y[j] = x[j];
}

template <class T>
void rotary_loop(const ops::llm::RotaryPlan& p, const T* x, T* y, const T* cos, const T* sin, const int64_t* pos) {
  const int64_t half = p.rot_dim / 2, heads = p.heads, seq = p.seq, d = p.head_size;
#pragma omp parallel for schedule(static) if (p.batch * seq * heads * d > 65536)
  for (int64_t bs = 0; bs < p.batch * seq; ++bs) {
    const int64_t b = bs / seq, s = bs % seq;
    const int64_t row = pos ? pos[bs] : bs;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t off = p.four_d ? ((b * heads + h) * seq + s) * d : (bs * heads + h) * d;
      rotate_head(x + off, y + off, cos + row * half, sin + row * half, p);
    }
  }
}

Status rotary_kernel(runtime::KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &cos = ctx.input(1), &sin = ctx.input(2);
  ops::llm::RotaryPlan p;
  if (auto e = ops::llm::rotary_plan(ctx.node(), arg_of(ctx, 0), arg_of(ctx, 1), arg_of(ctx, 2), arg_of(ctx, 3), p);
      !e.empty())
    return ctx.fail(e);
  if (cos.dtype() != x.dtype() || sin.dtype() != x.dtype())
    return ctx.fail("cos_cache and sin_cache must have X's dtype " + std::string(dtype_name(x.dtype())));
  const int64_t* pos = nullptr;
  if (ctx.has_input(3)) {
    const Tensor& ids = ctx.input(3);
    if (ids.dtype() != DType::I64) return ctx.fail("input 'position_ids' must be i64");
    pos = ids.data<int64_t>();
    const int64_t max_pos = cos.dim(0);
    for (int64_t i = 0; i < ids.numel(); ++i)
      if (pos[i] < 0 || pos[i] >= max_pos)
        return ctx.fail("position_ids value " + std::to_string(pos[i]) + " is out of range [0, " +
                        std::to_string(max_pos) + ") of cos_cache");
  }
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.shape()));
  const bool ok = nn::visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    rotary_loop(p, x.data<T>(), y->data<T>(), cos.data<T>(), sin.data<T>(), pos);
  });
  if (!ok) return bad_dtype(ctx, "X", x.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

// --- SwiGLU ---------------------------------------------------------------------------------------

// Y = A * sigmoid(alpha * A) * B, the sigmoid and the Swish product rounded to T as the reference does.
template <class T> void swiglu_loop(const T* a, const T* b, T* y, int64_t n, float alpha) {
  using A = nn::acc_t<T>;
  const A al = static_cast<A>(alpha);
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const A av = static_cast<A>(a[i]);
    const T sig = static_cast<T>(A(1) / (A(1) + std::exp(-al * av)));
    const T swish = static_cast<T>(av * static_cast<A>(sig));
    y[i] = static_cast<T>(static_cast<A>(swish) * static_cast<A>(b[i]));
  }
}

Status swiglu_kernel(runtime::KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    return ctx.fail("inputs A (" + std::string(dtype_name(a.dtype())) + ops::llm::dims_text(a.shape()) + ") and B (" +
                    std::string(dtype_name(b.dtype())) + ops::llm::dims_text(b.shape()) +
                    ") must have identical shapes and dtypes");
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, a.dtype(), a.shape()));
  const float alpha = ctx.node().attr_float("alpha", 1.f);
  const bool ok = nn::visit_float(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    swiglu_loop(a.data<T>(), b.data<T>(), y->data<T>(), a.numel(), alpha);
  });
  if (!ok) return bad_dtype(ctx, "A", a.dtype());
  ctx.set_impl("ref");
  return Status::ok();
}

// --- TensorScatter --------------------------------------------------------------------------------

// Cache row each batch's first update row lands on; validates write_indices against the mode.
Expected<vector<int64_t>> write_starts(runtime::KernelContext& ctx, const ops::llm::ScatterPlan& p, int64_t batch,
                                       int64_t max_seq, int64_t seq) {
  vector<int64_t> starts(static_cast<size_t>(batch), 0);
  if (!ctx.has_input(2)) return starts;
  const Tensor& idx = ctx.input(2);
  if (idx.dtype() != DType::I64) return ctx.fail("input 'write_indices' must be i64");
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t w = idx.data<int64_t>()[b];
    if (p.circular) {
      starts[static_cast<size_t>(b)] = max_seq > 0 ? ((w % max_seq) + max_seq) % max_seq : 0;
    } else if (w < 0 || w > max_seq - seq) {
      return ctx.fail("write_indices[" + std::to_string(b) + "] = " + std::to_string(w) + " plus the update length " +
                      std::to_string(seq) + " exceeds max_sequence_length " + std::to_string(max_seq) +
                      " (mode 'linear')");
    } else {
      starts[static_cast<size_t>(b)] = w;
    }
  }
  return starts;
}

Status tensor_scatter_kernel(runtime::KernelContext& ctx) {
  const Tensor &past = ctx.input(0), &upd = ctx.input(1);
  ops::llm::ScatterPlan p;
  if (auto e = ops::llm::tensor_scatter_plan(ctx.node(), arg_of(ctx, 0), arg_of(ctx, 1), arg_of(ctx, 2), p); !e.empty())
    return ctx.fail(e);
  if (upd.dtype() != past.dtype()) return ctx.fail("input 'update' must have past_cache's dtype");
  MS_ASSIGN_OR_RETURN(size_t es, tensor::element_size(ctx, past.dtype()));
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, past.dtype(), past.shape()));
  const Shape& s = past.shape();
  const auto axis = static_cast<size_t>(p.axis);
  const int64_t batch = s[0], max_seq = s[axis], seq = upd.shape()[axis];
  int64_t prefix = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) prefix *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  MS_ASSIGN_OR_RETURN(vector<int64_t> starts, write_starts(ctx, p, batch, max_seq, seq));
  tensor::copy_if_distinct(past, *out);
  if (prefix == 0 || seq == 0 || inner == 0) return Status::ok();
  const size_t row = static_cast<size_t>(inner) * es;
  const int64_t per_batch = prefix / batch;
  auto* dst = static_cast<char*>(out->raw());
  const auto* src = static_cast<const char*>(upd.raw());
  for (int64_t pre = 0; pre < prefix; ++pre) {
    const int64_t start = starts[static_cast<size_t>(pre / per_batch)];
    for (int64_t i = 0; i < seq; ++i) {
      const int64_t r = p.circular ? (start + i) % max_seq : start + i;
      std::memcpy(dst + static_cast<size_t>(pre * max_seq + r) * row, src + static_cast<size_t>(pre * seq + i) * row,
                  row);
    }
  }
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace
}  // namespace ms::cpu::llm

namespace ms::cpu {

void register_llm_kernels(runtime::KernelRegistry& r) {
  r.add("RMSNormalization", llm::rms_kernel);
  r.add("RotaryEmbedding", llm::rotary_kernel);
  r.add("SwiGLU", llm::swiglu_kernel);
  r.add("TensorScatter", llm::tensor_scatter_kernel);
  llm::register_state_kernels(r);
}

}  // namespace ms::cpu
