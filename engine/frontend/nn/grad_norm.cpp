// Gradients of Softmax/LogSoftmax, the norms (inference-form BatchNormalization, LayerNormalization)
// and the ONNX losses (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss without class weights).
// Statistics are recomputed from the inputs rather than taken from optional outputs, so the
// rules hold whether or not the forward asked for them.
#include "engine/frontend/nn/grad.h"

namespace ms::autodiff {
namespace {

namespace F = nn::F;
using nn::operator*;
using nn::operator-;
using nn::operator+;
using nn::operator/;

int64_t norm_axis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

Var mean_keepdims(const Var& x, const std::vector<int64_t>& axes) {
  return F::op("ReduceMean", {x}, {{"axes", axes}, {"keepdims", int64_t{1}}});
}

Expected<Vars> softmax_grad(const GradContext& c) {
  const Var& y = c.out(0);
  const Var& g = c.gout(0);
  const int64_t axis = norm_axis(c.node.attr_int("axis", -1), y.rank());
  return Vars{y * (g - sum_keepdims(g * y, {axis}))};
}

Expected<Vars> log_softmax_grad(const GradContext& c) {
  const Var& y = c.out(0);
  const Var& g = c.gout(0);
  const int64_t axis = norm_axis(c.node.attr_int("axis", -1), y.rank());
  return Vars{g - F::exp(y) * sum_keepdims(g, {axis})};
}

Expected<Vars> batch_norm_grad(const GradContext& c) {
  if (c.node.attr_int("training_mode", 0) != 0 || c.outputs.size() > 1)
    return c.fail(
        "training_mode=1 is not differentiable here; nn::BatchNorm2d in training mode builds its own statistics");
  const Var &x = c.in(0), &scale = c.in(1), &mean = c.in(3), &var = c.in(4);
  const Var& g = c.gout(0);
  const int64_t r = x.rank();
  Shape bc(static_cast<size_t>(r), 1);
  bc[1] = x.dim(1);
  std::vector<int64_t> axes{0};
  for (int64_t i = 2; i < r; ++i) axes.push_back(i);
  const double eps = c.node.attr_float("epsilon", 1e-5f);
  Var rstd = F::reshape(F::op("Reciprocal", {F::sqrt(F::add(var, eps))}), bc);
  Var xhat = (x - F::reshape(mean, bc)) * rstd;
  Vars out(c.inputs.size());
  out[0] = g * F::reshape(scale, bc) * rstd;
  out[1] = F::reduce_sum(g * xhat, axes);
  out[2] = F::reduce_sum(g, axes);
  return out;
}

Expected<Vars> layer_norm_grad(const GradContext& c) {
  const Var& x = c.in(0);
  const Var& g = c.gout(0);
  const int64_t r = x.rank();
  const int64_t axis = norm_axis(c.node.attr_int("axis", -1), r);
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  const double eps = c.node.attr_float("epsilon", 1e-5f);
  Var xc = x - mean_keepdims(x, axes);
  Var rstd = F::op("Reciprocal", {F::sqrt(F::add(mean_keepdims(xc * xc, axes), eps))});
  Var xhat = xc * rstd;
  Var dxhat = g * c.in(1);
  Vars out(c.inputs.size());
  out[0] = rstd * (dxhat - mean_keepdims(dxhat, axes) - xhat * mean_keepdims(dxhat * xhat, axes));
  out[1] = reduce_to(g * xhat, c.in(1).shape());
  if (c.has_input(2)) out[2] = reduce_to(g, c.in(2).shape());
  return out;
}

// d loss / d input of the ONNX losses, given the per-element log-probability gradient form:
// scale = the loss gradient spread over the reduced elements.
Expected<Var> loss_scale(const GradContext& c, const Var& input) {
  if (c.has_input(2)) return c.fail("class weights are not supported");
  if (c.node.has_attr("ignore_index")) return c.fail("ignore_index is not supported");
  const std::string red = c.node.attr_string("reduction", "mean");
  const Shape s = input.shape();
  const Var& g = c.gout(0);
  if (red == "none") {
    Shape bc = s;
    bc[1] = 1;
    return F::reshape(g, bc);
  }
  if (red == "sum") return g;
  if (red != "mean") return c.fail("reduction '" + red + "' is not supported");
  int64_t count = 1;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != 1) count *= s[i];
  return F::mul(g, 1.0 / static_cast<double>(count));
}

Var one_hot(const Var& labels, int64_t classes, const Var& like) {
  Tensor values = Tensor::empty(like.dtype(), {2});
  visit_dtype(like.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    values.data<T>()[0] = static_cast<T>(0.0f);
    values.data<T>()[1] = static_cast<T>(1.0f);
  });
  return F::op("OneHot", {labels, F::ints({classes}), F::constant(values)}, {{"axis", int64_t{1}}});
}

Expected<Vars> softmax_ce_grad(const GradContext& c) {
  const Var& scores = c.in(0);
  if (!c.gout(0).defined()) return c.fail("only the loss output is differentiable");
  MS_ASSIGN_OR_RETURN(Var scale, loss_scale(c, scores));
  Var p = c.outputs.size() > 1 ? F::exp(c.out(1)) : F::softmax(scores, 1);
  Vars out(c.inputs.size());
  out[0] = (p - one_hot(c.in(1), scores.dim(1), scores)) * scale;
  return out;
}

Expected<Vars> nll_grad(const GradContext& c) {
  const Var& input = c.in(0);
  MS_ASSIGN_OR_RETURN(Var scale, loss_scale(c, input));
  Vars out(c.inputs.size());
  out[0] = F::neg(one_hot(c.in(1), input.dim(1), input) * scale);
  return out;
}

}  // namespace

void register_norm_grads(GradRegistry& r) {
  r.add("Softmax", softmax_grad);
  r.add("LogSoftmax", log_softmax_grad);
  r.add("BatchNormalization", batch_norm_grad);
  r.add("LayerNormalization", layer_norm_grad);
  r.add("SoftmaxCrossEntropyLoss", softmax_ce_grad);
  r.add("NegativeLogLikelihoodLoss", nll_grad);
}

}  // namespace ms::autodiff
