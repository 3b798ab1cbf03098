// Optimizers against hand-written references (PyTorch's update formulas, in double) on small
// tensors over a few eager steps; parameter groups; learning-rate schedules.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/frontend/nn/functional.h"
#include "engine/frontend/train/optim.h"

namespace ms::nn::train {
namespace {

using Vec = std::vector<double>;

// Two parameters: a [2] bias-like one and a [2, 2] matrix.
const std::vector<Shape> kShapes{{2}, {2, 2}};
const std::vector<Vec> kInit{{1.0, -2.0}, {0.5, 0.25, -1.0, 3.0}};

// A different gradient at every step and element.
double grad_at(size_t p, size_t i, int step) { return std::sin(1.0 + 0.7 * double(p) + 1.3 * double(i) + 0.9 * step); }

Vars to_vars(const std::vector<Vec>& v) {
  Vars out;
  for (size_t p = 0; p < v.size(); ++p) {
    std::vector<float> f(v[p].begin(), v[p].end());
    out.emplace_back(Tensor::from_vector<float>(f, kShapes[p]));
  }
  return out;
}

struct Ref {
  virtual ~Ref() = default;
  virtual void step(std::vector<Vec>& p, const std::vector<Vec>& g, double lr, int t) = 0;
};

// Runs `steps` eager updates of `rule` and of `ref` with the lr of each step, compares every step.
void check_against(const UpdateRule& rule, Ref& ref, int steps, const std::vector<double>& lrs) {
  Vars params = to_vars(kInit);
  std::vector<Vec> want = kInit;
  Vars state = rule.init_state(params);
  for (int t = 1; t <= steps; ++t) {
    std::vector<Vec> g(2);
    for (size_t p = 0; p < 2; ++p)
      for (size_t i = 0; i < kInit[p].size(); ++i) g[p].push_back(grad_at(p, i, t));
    const double lr = lrs[static_cast<size_t>(t - 1) % lrs.size()];
    auto [np, ns] = rule.update(params, to_vars(g), state, F::scalar(lr), F::scalar(double(t)));
    ASSERT_EQ(np.size(), 2u);
    ASSERT_TRUE(first_error(np).is_ok()) << first_error(np).message();
    ASSERT_TRUE(first_error(ns).is_ok()) << first_error(ns).message();
    ref.step(want, g, lr, t);
    for (size_t p = 0; p < 2; ++p) {
      auto got = np[p].tensor();
      ASSERT_TRUE(got);
      ASSERT_EQ(got->shape(), kShapes[p]);
      for (size_t i = 0; i < want[p].size(); ++i) {
        EXPECT_NEAR(got->data<float>()[i], want[p][i], 1e-5 * (1 + std::abs(want[p][i])))
            << "step " << t << " param " << p << " element " << i;
      }
    }
    params = np;
    state = ns;
  }
}

struct SgdRef : Ref {
  double mu, wd;
  bool nesterov;
  std::vector<double> decay;  // per parameter (groups)
  std::vector<Vec> buf{Vec(2, 0.0), Vec(4, 0.0)};
  SgdRef(double mu, double wd, bool nesterov, std::vector<double> decay = {})
      : mu(mu), wd(wd), nesterov(nesterov), decay(std::move(decay)) {}
  void step(std::vector<Vec>& p, const std::vector<Vec>& g, double lr, int) override {
    for (size_t k = 0; k < p.size(); ++k) {
      const double d = decay.empty() ? wd : decay[k];
      for (size_t i = 0; i < p[k].size(); ++i) {
        double gi = g[k][i] + d * p[k][i];
        if (mu > 0) {
          buf[k][i] = mu * buf[k][i] + gi;
          gi = nesterov ? gi + mu * buf[k][i] : buf[k][i];
        }
        p[k][i] -= lr * gi;
      }
    }
  }
};

struct AdamRef : Ref {
  double b1, b2, eps, wd;
  bool decoupled;
  std::vector<double> lr_scale;
  std::vector<Vec> m{Vec(2, 0.0), Vec(4, 0.0)}, v{Vec(2, 0.0), Vec(4, 0.0)};
  AdamRef(double b1, double b2, double eps, double wd, bool decoupled, std::vector<double> lr_scale = {1, 1})
      : b1(b1), b2(b2), eps(eps), wd(wd), decoupled(decoupled), lr_scale(std::move(lr_scale)) {}
  void step(std::vector<Vec>& p, const std::vector<Vec>& g, double lr0, int t) override {
    for (size_t k = 0; k < p.size(); ++k) {
      const double lr = lr0 * lr_scale[k];
      for (size_t i = 0; i < p[k].size(); ++i) {
        double gi = g[k][i];
        if (decoupled)
          p[k][i] *= 1 - lr * wd;
        else
          gi += wd * p[k][i];
        m[k][i] = b1 * m[k][i] + (1 - b1) * gi;
        v[k][i] = b2 * v[k][i] + (1 - b2) * gi * gi;
        const double mhat = m[k][i] / (1 - std::pow(b1, t)), vhat = v[k][i] / (1 - std::pow(b2, t));
        p[k][i] -= lr * mhat / (std::sqrt(vhat) + eps);
      }
    }
  }
};

TEST(TrainOptim, SgdPlainMomentumNesterovWeightDecay) {
  for (double mu : {0.0, 0.9})
    for (bool nesterov : {false, true})
      for (double wd : {0.0, 0.01}) {
        if (nesterov && mu == 0) continue;
        SCOPED_TRACE("momentum " + std::to_string(mu) + " nesterov " + std::to_string(nesterov) + " wd " +
                     std::to_string(wd));
        OptimizerConfig c;
        c.kind = OptimizerKind::SGD;
        c.momentum = mu;
        c.nesterov = nesterov;
        c.weight_decay = wd;
        SgdRef ref(mu, wd, nesterov);
        check_against(make_update_rule(c), ref, 4, {0.1, 0.05});
        EXPECT_EQ(make_update_rule(c).init_state(to_vars(kInit)).size(), mu > 0 ? 2u : 0u);
      }
}

TEST(TrainOptim, AdamWithBiasCorrection) {
  OptimizerConfig c;
  c.kind = OptimizerKind::Adam;
  c.beta1 = 0.8;
  c.beta2 = 0.95;
  c.eps = 1e-6;
  AdamRef ref(0.8, 0.95, 1e-6, 0.0, false);
  check_against(make_update_rule(c), ref, 5, {0.01});
  c.weight_decay = 0.1;  // L2 added to the gradient
  AdamRef l2(0.8, 0.95, 1e-6, 0.1, false);
  check_against(make_update_rule(c), l2, 4, {0.01, 0.02});
}

TEST(TrainOptim, AdamWDecoupledDecay) {
  OptimizerConfig c;
  c.kind = OptimizerKind::AdamW;
  c.weight_decay = 0.05;
  AdamRef ref(0.9, 0.999, 1e-8, 0.05, true);
  check_against(make_update_rule(c), ref, 5, {0.01, 0.005});
}

TEST(TrainOptim, ParameterGroups) {
  OptimizerConfig c;
  c.kind = OptimizerKind::SGD;
  c.momentum = 0.5;
  c.weight_decay = 0.1;
  c.groups.push_back(no_decay_group());
  const auto hyper = resolve_groups(c, {"fc.bias", "fc.weight"}, kShapes);
  ASSERT_EQ(hyper.size(), 2u);
  EXPECT_EQ(hyper[0].weight_decay, 0.0);  // rank 1: no decay
  EXPECT_EQ(hyper[1].weight_decay, 0.1);
  SgdRef ref(0.5, 0.0, false, {0.0, 0.1});
  check_against(make_update_rule(c, hyper), ref, 3, {0.1});

  // A group by name with its own lr (AdamW).
  OptimizerConfig a;
  a.kind = OptimizerKind::AdamW;
  a.weight_decay = 0.0;
  a.groups.push_back({"head", [](const std::string& n, const Shape&) { return n.rfind("head.", 0) == 0; }, {3.0, 0.0}});
  AdamRef aref(0.9, 0.999, 1e-8, 0.0, true, {1.0, 3.0});
  check_against(make_update_rule(a, resolve_groups(a, {"body.bias", "head.weight"}, kShapes)), aref, 3, {0.01});
}

TEST(TrainOptim, MismatchesAndBadConfigsAreErrors) {
  OptimizerConfig c;
  c.kind = OptimizerKind::Adam;
  UpdateRule r = make_update_rule(c, {Hyper{}});  // one group entry for two parameters
  Vars p = to_vars(kInit);
  auto [np, ns] = r.update(p, p, r.init_state(p), F::scalar(0.1), F::scalar(1.0));
  ASSERT_FALSE(first_error(np).is_ok());
  EXPECT_NE(first_error(np).message().find("cover 1"), std::string::npos) << first_error(np).message();
  UpdateRule r2 = make_update_rule(c);
  auto [np2, ns2] = r2.update(p, Vars{p[0]}, r2.init_state(p), F::scalar(0.1), F::scalar(1.0));
  EXPECT_FALSE(first_error(np2).is_ok());
  c.beta1 = 1.0;
  EXPECT_FALSE(validate(c).is_ok());
  UpdateRule bad = make_update_rule(c);
  auto [np3, ns3] = bad.update(p, p, {}, F::scalar(0.1), F::scalar(1.0));
  ASSERT_FALSE(first_error(np3).is_ok());
  EXPECT_NE(first_error(np3).message().find("betas"), std::string::npos);
  EXPECT_FALSE(optimizer_kind("lamb"));
  EXPECT_EQ(*optimizer_kind("adamw"), OptimizerKind::AdamW);
}

TEST(TrainOptim, LrSchedules) {
  LrSchedule s;
  s.base_lr = 0.1;
  EXPECT_DOUBLE_EQ(s.at(1), 0.1);
  EXPECT_DOUBLE_EQ(s.at(1000), 0.1);
  s.kind = LrSchedule::Kind::Step;
  s.step_size = 10;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(s.at(10), 0.1);
  EXPECT_DOUBLE_EQ(s.at(11), 0.05);
  EXPECT_DOUBLE_EQ(s.at(25), 0.025);
  s.kind = LrSchedule::Kind::Cosine;
  s.total_steps = 101;
  s.min_lr = 0.0;
  EXPECT_DOUBLE_EQ(s.at(1), 0.1);
  EXPECT_NEAR(s.at(51), 0.05, 1e-12);
  EXPECT_NEAR(s.at(101), 0.0, 1e-12);
  EXPECT_NEAR(s.at(500), 0.0, 1e-12);  // stays at min after the end
  s.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(s.at(1), 0.025);
  EXPECT_DOUBLE_EQ(s.at(4), 0.1);
  EXPECT_DOUBLE_EQ(s.at(5), 0.1);  // cosine starts after the warmup
  EXPECT_FALSE(schedule_kind("linear"));
}

}  // namespace
}  // namespace ms::nn::train
