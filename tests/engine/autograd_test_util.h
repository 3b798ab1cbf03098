// Helpers of the autodiff tests: deterministic tensors, a central finite-difference check of
// value_and_grad, and comparison of gradient sets.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "engine/frontend/nn/autograd.h"
#include "engine/frontend/nn/nn.h"

namespace ms::test::autograd {

using nn::Var;
using nn::Vars;
namespace F = nn::F;

// Values in [lo, hi) from a fixed LCG.
inline Tensor rand_tensor(DType t, const Shape& shape, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  Tensor out = Tensor::empty(t, shape);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < out.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    const double u = static_cast<double>(s >> 8) / static_cast<double>(1u << 24);
    const double v = lo + (hi - lo) * u;
    if (t == DType::F64)
      out.data<double>()[i] = v;
    else
      out.data<float>()[i] = static_cast<float>(v);
  }
  return out;
}

inline void set_elem(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::F64)
    t.data<double>()[i] = v;
  else
    t.data<float>()[i] = static_cast<float>(v);
}

// sum(y * w) in double.
inline double weighted_sum(const Tensor& y, const Tensor& w) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += y.at_double(i) * w.at_double(i);
  return s;
}

struct FdOptions {
  double eps = 1e-6;
  double tol = 1e-6;  // |analytic - numeric| <= tol * max(1, |numeric|)
};

// Checks d/dx sum(f(inputs) * w) for every input marked in `diff` against central differences.
inline void check_gradients(const std::string& name, const std::function<Var(const Vars&)>& f,
                            std::vector<Tensor> inputs, const std::vector<bool>& diff, FdOptions opt = {}) {
  SCOPED_TRACE(name);
  Vars vars;
  for (const Tensor& t : inputs) vars.emplace_back(t);
  Var y0 = f(vars);
  ASSERT_TRUE(y0.ok()) << y0.status().message();
  auto yt = y0.tensor();
  ASSERT_TRUE(yt.has_value());
  const Tensor w = rand_tensor(yt->dtype(), yt->shape(), 977, -1.0, 1.0);
  Vars wrt;
  std::vector<size_t> idx;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (diff[i]) {
      wrt.push_back(vars[i]);
      idx.push_back(i);
    }
  auto vg = nn::value_and_grad([&] { return F::reduce_sum(F::mul(f(vars), F::constant(w))); }, wrt);
  ASSERT_TRUE(vg.has_value()) << vg.status().message();
  ASSERT_EQ(vg->grads.size(), wrt.size());
  for (size_t k = 0; k < idx.size(); ++k) {
    const size_t i = idx[k];
    auto g = vg->grads[k].tensor();
    ASSERT_TRUE(g.has_value()) << g.status().message();
    ASSERT_EQ(g->shape(), inputs[i].shape()) << "input " << i;
    ASSERT_EQ(g->dtype(), inputs[i].dtype()) << "input " << i;
    for (int64_t j = 0; j < inputs[i].numel(); ++j) {
      std::vector<Tensor> plus, minus;
      for (const Tensor& t : inputs) {
        plus.push_back(t.clone());
        minus.push_back(t.clone());
      }
      const double x = inputs[i].at_double(j);
      set_elem(plus[i], j, x + opt.eps);
      set_elem(minus[i], j, x - opt.eps);
      Vars vp, vm;
      for (auto& t : plus) vp.emplace_back(t);
      for (auto& t : minus) vm.emplace_back(t);
      auto yp = f(vp).tensor();
      auto ym = f(vm).tensor();
      ASSERT_TRUE(yp.has_value() && ym.has_value());
      const double num = (weighted_sum(*yp, w) - weighted_sum(*ym, w)) / (2 * opt.eps);
      const double ana = g->at_double(j);
      ASSERT_NEAR(ana, num, opt.tol * std::max(1.0, std::abs(num))) << "input " << i << " element " << j;
    }
  }
}

// max |a - b| / max(1, |b|) over two gradient sets.
inline double max_rel_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    for (int64_t j = 0; j < a[i].numel(); ++j) {
      const double x = a[i].at_double(j), y = b[i].at_double(j);
      m = std::max(m, std::abs(x - y) / std::max(1.0, std::abs(y)));
    }
  return m;
}

}  // namespace ms::test::autograd
