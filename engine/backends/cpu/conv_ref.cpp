// Reference Conv / ConvTranspose loops for the dtypes and shapes oneDNN does not take (f64, f16,
// bf16, more than 3 spatial axes, negative ConvTranspose end padding). Accumulates in acc_t<T>.
#include "engine/backends/cpu/nn_kernels.h"

namespace ms::cpu::nn {
namespace {

struct ConvDims {
  int64_t n, c, m, group, in_size, out_size, taps;
};

template <class T>
void conv_loop(const T* x, const T* w, const T* b, T* y, const ConvDims& d, const std::vector<int64_t>& table) {
  using A = acc_t<T>;
  const int64_t cg = d.c / d.group, mg = d.m / d.group;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t m = 0; m < d.m; ++m) {
      const int64_t g = m / mg;
      T* yp = y + (n * d.m + m) * d.out_size;
      for (int64_t p = 0; p < d.out_size; ++p) {
        A acc = b ? static_cast<A>(b[m]) : A(0);
        const int64_t* row = table.data() + p * d.taps;
        for (int64_t ic = 0; ic < cg; ++ic) {
          const T* xc = x + (n * d.c + g * cg + ic) * d.in_size;
          const T* wc = w + (m * cg + ic) * d.taps;
          for (int64_t kk = 0; kk < d.taps; ++kk)
            if (row[kk] >= 0) acc += static_cast<A>(xc[row[kk]]) * static_cast<A>(wc[kk]);
        }
        yp[p] = static_cast<T>(acc);
      }
    }
}

// Scatter form: every input position adds its products into the output positions it reaches.
template <class T>
void conv_transpose_loop(const T* x, const T* w, const T* b, T* y, const ConvDims& d,
                         const std::vector<int64_t>& table) {
  using A = acc_t<T>;
  const int64_t cg = d.c / d.group, mg = d.m / d.group;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t m = 0; m < d.m; ++m) {
      const int64_t g = m / mg, ml = m % mg;
      std::vector<A> acc(static_cast<size_t>(d.out_size), b ? static_cast<A>(b[m]) : A(0));
      for (int64_t ic = 0; ic < cg; ++ic) {
        const int64_t c = g * cg + ic;
        const T* xc = x + (n * d.c + c) * d.in_size;
        const T* wc = w + (c * mg + ml) * d.taps;
        for (int64_t p = 0; p < d.in_size; ++p) {
          const A xv = static_cast<A>(xc[p]);
          const int64_t* row = table.data() + p * d.taps;
          for (int64_t kk = 0; kk < d.taps; ++kk)
            if (row[kk] >= 0) acc[static_cast<size_t>(row[kk])] += xv * static_cast<A>(wc[kk]);
        }
      }
      T* yp = y + (n * d.m + m) * d.out_size;
      for (int64_t p = 0; p < d.out_size; ++p) yp[p] = static_cast<T>(acc[static_cast<size_t>(p)]);
    }
}

// For each input position and kernel tap: the output's flat spatial offset, or -1 when it falls in
// the cropped border.
std::vector<int64_t> transpose_table(const Shape& in, const ops::WindowGeometry& g) {
  const size_t s = in.size();
  const int64_t positions = numel(in), taps = numel(g.kernel);
  std::vector<int64_t> table(static_cast<size_t>(positions * taps));
  std::vector<int64_t> ip(s), k(s);
  for (int64_t p = 0; p < positions; ++p) {
    for (int64_t rest = p, i = static_cast<int64_t>(s) - 1; i >= 0; --i) {
      ip[i] = rest % in[i];
      rest /= in[i];
    }
    for (int64_t kk = 0; kk < taps; ++kk) {
      for (int64_t rest = kk, i = static_cast<int64_t>(s) - 1; i >= 0; --i) {
        k[i] = rest % g.kernel[i];
        rest /= g.kernel[i];
      }
      int64_t flat = 0;
      bool inside = true;
      for (size_t i = 0; i < s; ++i) {
        const int64_t pos = ip[i] * g.strides[i] - g.pads_begin[i] + k[i] * g.dilations[i];
        inside = inside && pos >= 0 && pos < g.out[i];
        flat = flat * g.out[i] + pos;
      }
      table[static_cast<size_t>(p * taps + kk)] = inside ? flat : -1;
    }
  }
  return table;
}

Status run_typed(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                 const ConvDims& d, const std::vector<int64_t>& table, bool transpose) {
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* bias = b ? b->data<T>() : nullptr;
    if (transpose)
      conv_transpose_loop<T>(x.data<T>(), w.data<T>(), bias, y.data<T>(), d, table);
    else
      conv_loop<T>(x.data<T>(), w.data<T>(), bias, y.data<T>(), d, table);
  });
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(x.dtype())) + " is not supported");
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace

Status conv_reference(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                      const ops::WindowGeometry& g, int64_t group) {
  const Shape in(x.shape().begin() + 2, x.shape().end());
  const ConvDims d{x.dim(0), x.dim(1), w.dim(0), group, numel(in), numel(g.out), numel(g.kernel)};
  return run_typed(ctx, x, w, b, y, d, window_table(in, g), false);
}

Status conv_transpose_reference(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b,
                                Tensor& y, const ops::WindowGeometry& g, int64_t group) {
  const Shape in(x.shape().begin() + 2, x.shape().end());
  const ConvDims d{x.dim(0), x.dim(1), w.dim(1) * group, group, numel(in), numel(g.out), numel(g.kernel)};
  return run_typed(ctx, x, w, b, y, d, transpose_table(in, g), true);
}

}  // namespace ms::cpu::nn
