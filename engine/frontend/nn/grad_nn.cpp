// Gradients of Gemm, MatMul, Conv and the pools. Conv's input gradient is a ConvTranspose with the
// same weights; its weight gradient is the ai.modescope ConvGradWeight op (oneDNN's backward-weights
// convolution on the CPU), grouped convs included. Pools use the ai.modescope MaxPoolGrad /
// AveragePoolGrad kernels (engine/ops/grad_ops.cpp).
#include "engine/frontend/nn/grad.h"
#include "engine/ops/grad_ops.h"
#include "engine/ops/nn_geometry.h"

namespace ms::autodiff {
namespace {

namespace F = nn::F;
using nn::operator*;

Var gemm(const Var& a, const Var& b, bool ta, bool tb, double alpha) {
  F::Attrs at{{"transA", int64_t{ta}}, {"transB", int64_t{tb}}};
  if (alpha != 1.0) at["alpha"] = static_cast<float>(alpha);
  return F::op("Gemm", {a, b}, std::move(at));
}

Expected<Vars> gemm_grad(const GradContext& c) {
  // Y = alpha A' B' + beta C with A' = transA ? A^T : A, B' = transB ? B^T : B.
  const bool ta = c.node.attr_int("transA", 0), tb = c.node.attr_int("transB", 0);
  const double alpha = c.node.attr_float("alpha", 1.0f), beta = c.node.attr_float("beta", 1.0f);
  const Var& g = c.gout(0);
  const Var &a = c.in(0), &b = c.in(1);
  Vars out(c.inputs.size());
  out[0] = ta ? gemm(b, g, tb, true, alpha) : gemm(g, b, false, !tb, alpha);
  out[1] = tb ? gemm(g, a, true, ta, alpha) : gemm(a, g, !ta, false, alpha);
  if (c.has_input(2)) out[2] = reduce_to(beta == 1.0 ? g : F::mul(g, beta), c.in(2).shape());
  return out;
}

Var transpose_last2(const Var& x) {
  const int64_t r = x.rank();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r - 2; ++i) perm.push_back(i);
  perm.push_back(r - 1);
  perm.push_back(r - 2);
  return F::transpose(x, perm);
}

Expected<Vars> matmul_grad(const GradContext& c) {
  // 1-D operands are promoted to matrices ([1,K] and [K,1]) as numpy does, then the gradients
  // are summed over broadcast batch axes and reshaped back.
  Var a = c.in(0), b = c.in(1);
  const Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) a = F::reshape(a, {1, as[0]});
  if (bs.size() == 1) b = F::reshape(b, {bs[0], 1});
  const Shape a2 = a.shape(), b2 = b.shape();
  const size_t r = std::max(a2.size(), b2.size());
  Shape ys(r);
  for (size_t i = 0; i + 2 < r; ++i) {
    const int64_t da = i + a2.size() >= r ? a2[i + a2.size() - r] : 1;
    const int64_t db = i + b2.size() >= r ? b2[i + b2.size() - r] : 1;
    ys[i] = std::max(da, db);
  }
  ys[r - 2] = a2[a2.size() - 2];
  ys[r - 1] = b2[b2.size() - 1];
  Var g = F::reshape(c.gout(0), ys);
  Var ga = reduce_to(F::matmul(g, transpose_last2(b)), a2);
  Var gb = reduce_to(F::matmul(transpose_last2(a), g), b2);
  if (as.size() == 1) ga = F::reshape(ga, as);
  if (bs.size() == 1) gb = F::reshape(gb, bs);
  return Vars{ga, gb};
}

Expected<ops::WindowGeometry> window(const GradContext& c, ops::WindowKind kind, const Shape& x, const Shape& kernel) {
  Shape in(x.begin() + 2, x.end());
  auto g = ops::resolve_window(c.node, kind, in, kernel);
  if (!g) return c.fail(g.status().message());
  return g;
}

Expected<Vars> conv_grad(const GradContext& c) {
  const Var &x = c.in(0), &w = c.in(1);
  const Var& gy = c.gout(0);
  const Shape xs = x.shape(), ws = w.shape(), ys = c.out(0).shape();
  const int64_t nsp = static_cast<int64_t>(xs.size()) - 2;
  const int64_t group = c.node.attr_int("group", 1);
  MS_ASSIGN_OR_RETURN(auto geo, window(c, ops::WindowKind::Conv, xs, Shape(ws.begin() + 2, ws.end())));
  std::vector<int64_t> pads = geo.pads_begin;
  pads.insert(pads.end(), geo.pads_end.begin(), geo.pads_end.end());
  Vars out(c.inputs.size());

  // dX: ConvTranspose(gy, W) with output_padding making its output exactly X's size.
  std::vector<int64_t> out_pad(static_cast<size_t>(nsp));
  for (size_t i = 0; i < out_pad.size(); ++i) {
    const int64_t full =
        geo.strides[i] * (ys[i + 2] - 1) + geo.effective_kernel(i) - geo.pads_begin[i] - geo.pads_end[i];
    out_pad[i] = xs[i + 2] - full;
    if (out_pad[i] < 0) return c.fail("cannot express the input gradient as a ConvTranspose");
  }
  out[0] = F::op("ConvTranspose", {gy, w},
                 {{"strides", geo.strides},
                  {"dilations", geo.dilations},
                  {"pads", pads},
                  {"group", group},
                  {"kernel_shape", geo.kernel},
                  {"output_padding", out_pad}});

  out[1] = F::op("ConvGradWeight", {x, gy},
                 {{"strides", geo.strides},
                  {"dilations", geo.dilations},
                  {"pads", pads},
                  {"group", group},
                  {"kernel_shape", geo.kernel}},
                 kGradDomain);
  if (c.has_input(2)) {
    std::vector<int64_t> axes_b{0};
    for (int64_t i = 0; i < nsp; ++i) axes_b.push_back(2 + i);
    out[2] = F::reduce_sum(gy, axes_b);
  }
  return out;
}

Expected<Vars> pool_grad(const GradContext& c, const char* grad_op) {
  if (c.outputs.size() > 1) return c.fail("the Indices output is not differentiable");
  F::Attrs attrs = c.node.attrs;
  return Vars{F::op(grad_op, {c.in(0), c.gout(0)}, std::move(attrs), kGradDomain)};
}

Expected<Vars> global_avg_pool_grad(const GradContext& c) {
  const Shape xs = c.in(0).shape();
  int64_t count = 1;
  for (size_t i = 2; i < xs.size(); ++i) count *= xs[i];
  return Vars{F::op("Expand", {F::mul(c.gout(0), 1.0 / static_cast<double>(count)), F::ints(xs)})};
}

}  // namespace

void register_nn_grads(GradRegistry& r) {
  r.add("Gemm", gemm_grad);
  r.add("MatMul", matmul_grad);
  r.add("Conv", conv_grad);
  r.add("MaxPool", [](const GradContext& c) { return pool_grad(c, "MaxPoolGrad"); });
  r.add("AveragePool", [](const GradContext& c) { return pool_grad(c, "AveragePoolGrad"); });
  r.add("GlobalAveragePool", global_avg_pool_grad);
}

}  // namespace ms::autodiff
