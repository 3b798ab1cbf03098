// Backward kernels of the 2-D pools (ai.modescope MaxPoolGrad, AveragePoolGrad): plain loops over
// the forward window table, one (n, c) plane per OpenMP task; any float dtype (f64 for gradient
// checks), accumulated in f64 for f64 and f32 otherwise (a position sums at most one share per window).
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/nn_kernels.h"
#include "engine/ops/grad_ops.h"

namespace ms::cpu {
namespace {

// An element as the accumulation type (bf16 widened by a shift, not through Eigen's conversion).
template <class T, class A = nn::acc_t<T>> inline A load(const T& v) {
  if constexpr (std::is_same_v<T, bf16>)
    return elementwise::bf16_to_f32(v);
  else
    return static_cast<A>(v);
}

template <class T>
void pool_grad_plane(const T* x, const T* gy, T* gx, const ops::WindowGeometry& g, int64_t h, int64_t w, bool max,
                     bool include_pad) {
  using A = nn::acc_t<T>;
  const int64_t oh = g.out[0], ow = g.out[1];
  std::vector<A> acc(static_cast<size_t>(h * w), A(0));
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j) {
      const A gv = load(gy[i * ow + j]);
      const int64_t h0 = i * g.strides[0] - g.pads_begin[0], w0 = j * g.strides[1] - g.pads_begin[1];
      if (max) {
        int64_t best = -1;
        A bv = -std::numeric_limits<A>::infinity();
        for (int64_t a = 0; a < g.kernel[0]; ++a) {
          const int64_t y = h0 + a * g.dilations[0];
          if (y < 0 || y >= h) continue;
          for (int64_t b = 0; b < g.kernel[1]; ++b) {
            const int64_t xx = w0 + b * g.dilations[1];
            if (xx < 0 || xx >= w) continue;
            const A v = load(x[y * w + xx]);
            if (best < 0 || v > bv) {
              bv = v;
              best = y * w + xx;
            }
          }
        }
        if (best >= 0) acc[static_cast<size_t>(best)] += gv;
        continue;
      }
      int64_t count = 0;
      for (int64_t a = 0; a < g.kernel[0]; ++a)
        for (int64_t b = 0; b < g.kernel[1]; ++b) {
          const int64_t y = h0 + a * g.dilations[0], xx = w0 + b * g.dilations[1];
          const bool inside = y >= 0 && y < h && xx >= 0 && xx < w;
          const bool in_padded =
              y >= -g.pads_begin[0] && y < h + g.pads_end[0] && xx >= -g.pads_begin[1] && xx < w + g.pads_end[1];
          if (inside || (include_pad && in_padded)) ++count;
        }
      if (count == 0) continue;
      const A share = gv / static_cast<A>(count);
      for (int64_t a = 0; a < g.kernel[0]; ++a)
        for (int64_t b = 0; b < g.kernel[1]; ++b) {
          const int64_t y = h0 + a * g.dilations[0], xx = w0 + b * g.dilations[1];
          if (y >= 0 && y < h && xx >= 0 && xx < w) acc[static_cast<size_t>(y * w + xx)] += share;
        }
    }
  for (int64_t i = 0; i < h * w; ++i) gx[i] = static_cast<T>(acc[static_cast<size_t>(i)]);
}

Status pool_grad_kernel(runtime::KernelContext& ctx, bool max) {
  const Tensor& x = ctx.input(0);
  const Tensor& gy = ctx.input(1);
  Tensor& gx = ctx.output(0);
  if (x.rank() != 4 || gy.rank() != 4) return ctx.fail("only 2-D pools are supported");
  Shape in(x.shape().begin() + 2, x.shape().end());
  auto g = ops::resolve_window(ctx.node(), ops::WindowKind::Pool, in, ctx.node().attr_ints("kernel_shape"));
  if (!g) return ctx.fail(g.status().message());
  if (g->out.size() != 2 || g->out[0] != gy.dim(2) || g->out[1] != gy.dim(3))
    return ctx.fail("dY does not match the pool output");
  const bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3), oplane = gy.dim(2) * gy.dim(3);
  ctx.set_impl("ref");
  const bool ok = nn::visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = x.data<T>();
    const T* gyd = gy.data<T>();
    T* gxd = gx.data<T>();
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p)
      pool_grad_plane<T>(xd + p * h * w, gyd + p * oplane, gxd + p * h * w, *g, h, w, max, include_pad);
  });
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(x.dtype())) + " is not supported");
  return Status::ok();
}

}  // namespace

void register_grad_kernels(runtime::KernelRegistry& r) {
  r.add(
      "MaxPoolGrad", [](runtime::KernelContext& c) { return pool_grad_kernel(c, true); }, autodiff::kGradDomain);
  r.add(
      "AveragePoolGrad", [](runtime::KernelContext& c) { return pool_grad_kernel(c, false); }, autodiff::kGradDomain);
  register_conv_grad_kernels(r);
}

}  // namespace ms::cpu
