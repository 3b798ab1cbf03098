// Gradients of elementwise ops. Binary ops broadcast, so each input's gradient is summed back to
// that input's shape (reduce_to).
#include <cmath>

#include "engine/frontend/nn/grad.h"

namespace ms::autodiff {
namespace {

namespace F = nn::F;
using nn::operator*;
using nn::operator-;
using nn::operator+;
using nn::operator/;

Vars one(Var g) { return Vars{std::move(g)}; }

Expected<Vars> add_grad(const GradContext& c) {
  return Vars{reduce_to(c.gout(0), c.in(0).shape()), reduce_to(c.gout(0), c.in(1).shape())};
}
Expected<Vars> sub_grad(const GradContext& c) {
  return Vars{reduce_to(c.gout(0), c.in(0).shape()), reduce_to(F::neg(c.gout(0)), c.in(1).shape())};
}
Expected<Vars> mul_grad(const GradContext& c) {
  const Var& g = c.gout(0);
  // x * x (a variance's squared deviations): one term g (2 x), the same values as g x + g x (doubling
  // is exact), instead of two equal terms that the backward would write once and read twice. (2 g)
  // would double g where it is an Expand of a reduction's gradient: a whole tensor written.
  if (c.in(0).impl() == c.in(1).impl())
    return Vars{reduce_to(g * (c.in(0) * scalar_like(2.0, c.in(0))), c.in(0).shape()), Var()};
  return Vars{reduce_to(g * c.in(1), c.in(0).shape()), reduce_to(g * c.in(0), c.in(1).shape())};
}
Expected<Vars> div_grad(const GradContext& c) {
  // y = a / b: dy/da = 1 / b, dy/db = -a / b^2 = -y / b.
  const Var& g = c.gout(0);
  Var gb = F::neg(g * c.out(0) / c.in(1));
  return Vars{reduce_to(g / c.in(1), c.in(0).shape()), reduce_to(gb, c.in(1).shape())};
}
Expected<Vars> sum_grad(const GradContext& c) {
  Vars out;
  for (const Var& x : c.inputs) out.push_back(reduce_to(c.gout(0), x.shape()));
  return out;
}
Expected<Vars> where_grad(const GradContext& c) {
  const Var& g = c.gout(0);
  Var z = scalar_like(0.0, g);
  return Vars{Var(), reduce_to(F::op("Where", {c.in(0), g, z}), c.in(1).shape()),
              reduce_to(F::op("Where", {c.in(0), z, g}), c.in(2).shape())};
}
Expected<Vars> pow_grad(const GradContext& c) {
  // y = a^b: dy/da = b a^(b-1); dy/db = y ln a (a > 0 where it matters).
  const Var &g = c.gout(0), &a = c.in(0), &b = c.in(1);
  Var ga = g * b * F::op("Pow", {a, b - scalar_like(1.0, b)});
  Var gb = g * c.out(0) * F::op("Log", {a});
  return Vars{reduce_to(ga, a.shape()), reduce_to(gb, b.shape())};
}

// Max / Min (variadic, broadcasting): each element's gradient goes to the first input equal to the
// result (ties: the earliest input), summed back over the input's broadcast axes.
Expected<Vars> extremum_grad(const GradContext& c) {
  const Var& g = c.gout(0);
  Vars out(c.inputs.size());
  Var taken;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Var hit = F::op("Equal", {c.in(i), c.out(0)});
    if (taken.defined()) hit = F::op("And", {hit, F::op("Not", {taken})});
    taken = taken.defined() ? F::op("Or", {taken, hit}) : hit;
    out[i] = reduce_to(g * cast_like(hit, g), c.in(i).shape());
  }
  return out;
}

Expected<Vars> relu_grad(const GradContext& c) {
  // From the output: Sign(y) is 1 where x > 0 and 0 elsewhere (NaN stays NaN). Two ops that fuse
  // into one loop in Graph mode, and the backward keeps y (the next layer's input) instead of x.
  return one(c.gout(0) * F::op("Sign", {c.out(0)}));
}
Expected<Vars> leaky_relu_grad(const GradContext& c) {
  const double alpha = c.node.attr_float("alpha", 0.01f);
  Var pos = cast_like(F::greater(c.in(0), 0.0), c.gout(0));
  // pos + alpha (1 - pos)
  Var slope = pos + (scalar_like(1.0, pos) - pos) * scalar_like(alpha, pos);
  return one(c.gout(0) * slope);
}
Expected<Vars> clip_grad(const GradContext& c) {
  // Passes where min < x < max (the subgradient PyTorch uses at the bounds: 0).
  const Var& x = c.in(0);
  Var mask;
  if (c.has_input(1)) mask = F::greater(x, c.in(1));
  if (c.has_input(2)) {
    Var lt = F::op("Less", {x, c.in(2)});
    mask = mask.defined() ? F::op("And", {mask, lt}) : lt;
  }
  if (!mask.defined()) return one(c.gout(0));
  return Vars{c.gout(0) * cast_like(mask, c.gout(0)), Var(), Var()};
}
Expected<Vars> sigmoid_grad(const GradContext& c) {
  const Var& y = c.out(0);
  return one(c.gout(0) * y * (scalar_like(1.0, y) - y));
}
Expected<Vars> tanh_grad(const GradContext& c) {
  const Var& y = c.out(0);
  return one(c.gout(0) * (scalar_like(1.0, y) - y * y));
}
Expected<Vars> erf_grad(const GradContext& c) {
  const Var& x = c.in(0);
  const double k = 2.0 / std::sqrt(M_PI);
  return one(c.gout(0) * F::mul(F::exp(F::neg(x * x)), k));
}
Expected<Vars> exp_grad(const GradContext& c) { return one(c.gout(0) * c.out(0)); }
Expected<Vars> log_grad(const GradContext& c) { return one(c.gout(0) / c.in(0)); }
Expected<Vars> neg_grad(const GradContext& c) { return one(F::neg(c.gout(0))); }
Expected<Vars> sqrt_grad(const GradContext& c) { return one(F::mul(c.gout(0), 0.5) / c.out(0)); }
Expected<Vars> reciprocal_grad(const GradContext& c) {
  const Var& y = c.out(0);
  return one(F::neg(c.gout(0) * y * y));
}
Expected<Vars> abs_grad(const GradContext& c) { return one(c.gout(0) * F::op("Sign", {c.in(0)})); }
Expected<Vars> softplus_grad(const GradContext& c) { return one(c.gout(0) * F::sigmoid(c.in(0))); }
Expected<Vars> identity_grad(const GradContext& c) { return one(c.gout(0)); }
Expected<Vars> cast_grad(const GradContext& c) {
  // Mixed precision: the gradient goes back in the input's dtype.
  if (!is_float(c.in(0).dtype())) return Vars{Var()};
  return one(F::cast(c.gout(0), c.in(0).dtype()));
}

}  // namespace

void register_elementwise_grads(GradRegistry& r) {
  r.add("Add", add_grad);
  r.add("Sub", sub_grad);
  r.add("Mul", mul_grad);
  r.add("Div", div_grad);
  r.add("Sum", sum_grad);
  r.add("Where", where_grad);
  r.add("Max", extremum_grad);
  r.add("Min", extremum_grad);
  r.add("Pow", pow_grad);
  r.add("Relu", relu_grad);
  r.add("LeakyRelu", leaky_relu_grad);
  r.add("Clip", clip_grad);
  r.add("Sigmoid", sigmoid_grad);
  r.add("Tanh", tanh_grad);
  r.add("Erf", erf_grad);
  r.add("Exp", exp_grad);
  r.add("Log", log_grad);
  r.add("Neg", neg_grad);
  r.add("Sqrt", sqrt_grad);
  r.add("Reciprocal", reciprocal_grad);
  r.add("Abs", abs_grad);
  r.add("Softplus", softplus_grad);
  r.add("Identity", identity_grad);
  r.add("Cast", cast_grad);
}

}  // namespace ms::autodiff
