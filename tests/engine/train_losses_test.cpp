// Losses against hand-computed values, eagerly and traced (jit), and the accuracy helper.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/frontend/nn/jit.h"
#include "engine/frontend/train/losses.h"

namespace ms::nn::train {
namespace {

Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, std::move(s)); }
Tensor i64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>(v, {n});
}
// f32 kernels: compare to the double references within 1e-5.
double value(const Var& v) {
  EXPECT_TRUE(v.ok()) << v.status().message();
  auto x = v.item();
  return x ? *x : NAN;
}

// -sum_j t_j log softmax(z)_j for one row.
double row_ce(const std::vector<double>& z, const std::vector<double>& t) {
  double mx = z[0], s = 0, r = 0;
  for (double x : z) mx = std::max(mx, x);
  for (double x : z) s += std::exp(x - mx);
  for (size_t j = 0; j < z.size(); ++j) r -= t[j] * (z[j] - mx - std::log(s));
  return r;
}

TEST(TrainLosses, CrossEntropyMatchesHandValues) {
  const Tensor logits = f32({1, 2, 3, 1, 1, 1}, {2, 3});
  const Tensor labels = i64({2, 0});
  // Row 0: -(3 - log(e + e^2 + e^3)) = 0.40760596; row 1: log 3 = 1.09861229.
  EXPECT_NEAR(value(cross_entropy(logits, labels)), (0.40760596 + 1.09861229) / 2, 1e-5);
  // Smoothing 0.1 over 3 classes: targets 0.1/3 off, 0.9 + 0.1/3 on.
  const double off = 0.1 / 3, on = 0.9 + off;
  const double want = (row_ce({1, 2, 3}, {off, off, on}) + row_ce({1, 1, 1}, {on, off, off})) / 2;
  EXPECT_NEAR(value(cross_entropy(logits, labels, 0.1)), want, 1e-5);
  // Soft targets equal to the one-hot rows give the plain loss.
  EXPECT_NEAR(value(cross_entropy_soft(logits, f32({0, 0, 1, 1, 0, 0}, {2, 3}))), (0.40760596 + 1.09861229) / 2, 1e-5);
  // Large logits stay finite (LogSoftmax, not log(softmax)).
  EXPECT_NEAR(value(cross_entropy(f32({1000, 0}, {1, 2}), i64({1}))), 1000.0, 1e-3);
}

TEST(TrainLosses, MseMatchesHandValues) {
  // ((1-0)^2 + (2-4)^2 + (3-3)^2 + (-1-1)^2) / 4 = 9 / 4.
  EXPECT_NEAR(value(mse(f32({1, 2, 3, -1}, {2, 2}), f32({0, 4, 3, 1}, {2, 2}))), 2.25, 1e-6);
  Var bad = mse(f32({1, 2}, {2}), f32({1, 2}, {2, 1}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[2,1]"), std::string::npos) << bad.status().message();
}

TEST(TrainLosses, BadInputsAreErrorsNamingShapes) {
  const Tensor logits = f32({1, 2, 3, 1, 1, 1}, {2, 3});
  Var out_of_range = cross_entropy(logits, i64({2, 3}));
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("label 3"), std::string::npos) << out_of_range.status().message();
  Var count = cross_entropy(logits, i64({1, 2, 0}));
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("[2,3]"), std::string::npos) << count.status().message();
  EXPECT_FALSE(cross_entropy(logits, f32({1, 2}, {2})).ok());       // float labels
  EXPECT_FALSE(cross_entropy(f32({1, 2, 3}, {3}), i64({0})).ok());  // rank-1 logits
  EXPECT_FALSE(cross_entropy(logits, i64({0, 1}), 1.0).ok());       // smoothing out of range
  EXPECT_FALSE(cross_entropy(Var::failed(invalid_argument("upstream")), i64({0})).ok());
}

TEST(TrainLosses, TracedLossEqualsEager) {
  const Tensor logits = f32({0.5f, -1, 2, 0.25f, 3, -2, 1, 1}, {2, 4});
  const Tensor labels = i64({1, 3});
  auto traced = jit([](const Vars& v) { return Vars{cross_entropy(v[0], v[1], 0.05)}; });
  Vars out = traced(Vars{Var(logits), Var(labels)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NEAR(value(out[0]), value(cross_entropy(logits, labels, 0.05)), 1e-6);
  auto traced_mse = jit([](const Vars& v) { return Vars{mse(v[0], v[1])}; });
  Vars m = traced_mse(Vars{Var(logits), Var(f32({0, 0, 0, 0, 0, 0, 0, 0}, {2, 4}))});
  EXPECT_NEAR(value(m[0]), (0.25 + 1 + 4 + 0.0625 + 9 + 4 + 1 + 1) / 8, 1e-6);
}

TEST(TrainLosses, Accuracy) {
  const Tensor logits = f32({0.1f, 0.9f, 0.8f, 0.2f, 0.5f, 0.5f}, {3, 2});
  auto n = count_correct(logits, i64({1, 1, 0}));  // ties take the first index
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 2);
  auto acc = accuracy(logits, i64({1, 0, 0}));
  ASSERT_TRUE(acc);
  EXPECT_DOUBLE_EQ(*acc, 1.0);
  EXPECT_FALSE(accuracy(logits, i64({1, 0})));
}

}  // namespace
}  // namespace ms::nn::train
