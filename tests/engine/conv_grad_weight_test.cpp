// ConvGradWeight (ai.modescope), the weight gradient of a Conv: the oneDNN backward-weights path
// (f32, bf16) against the f64 reference loop over strides, pads, dilations, groups and 1-3 spatial
// axes; shape errors name the node.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/ops/grad_ops.h"
#include "tests/engine/autograd_test_util.h"

namespace ms::test::autograd {
namespace {

struct Case {
  const char* name;
  Shape x, w;
  std::vector<int64_t> stride, pad, dilation;  // pad: begin then end per axis
  int64_t group;
};

Var grad_weight(const Var& x, const Var& gy, const Case& c) {
  const Shape k(c.w.begin() + 2, c.w.end());
  return F::op("ConvGradWeight", {x, gy},
               {{"strides", c.stride},
                {"dilations", c.dilation},
                {"pads", c.pad},
                {"group", c.group},
                {"kernel_shape", std::vector<int64_t>(k.begin(), k.end())}},
               autodiff::kGradDomain);
}

// The Conv's output shape for the case, from a forward run.
Shape conv_out(const Case& c) {
  Var y = F::op("Conv", {Var(rand_tensor(DType::F32, c.x, 1)), Var(rand_tensor(DType::F32, c.w, 2))},
                {{"strides", c.stride}, {"dilations", c.dilation}, {"pads", c.pad}, {"group", c.group}});
  auto t = y.tensor();
  return t ? t->shape() : Shape{};
}

TEST(ConvGradWeight, OneDnnMatchesTheReferenceLoop) {
  const std::vector<Case> cases{
      {"3x3 pad 1", {2, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {"1x1 stride 2 (downsample)", {2, 16, 10, 10}, {32, 16, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
      {"7x7 stride 2 pad 3 (stem)", {1, 3, 15, 15}, {8, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1},
      {"uneven pads, stride 3", {1, 4, 11, 8}, {4, 4, 3, 2}, {3, 2}, {1, 0, 0, 1}, {1, 1}, 1},
      {"dilation 2", {1, 4, 9, 9}, {6, 4, 3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1},
      {"groups 2", {2, 8, 7, 7}, {12, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
      {"depthwise stride 2", {2, 16, 8, 8}, {16, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 16},
      {"1-D", {2, 4, 12}, {5, 4, 3}, {2}, {1, 1}, {1}, 1},
      {"3-D", {1, 2, 5, 5, 5}, {3, 2, 3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1},
  };
  uint32_t seed = 10;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape ys = conv_out(c);
    ASSERT_FALSE(ys.empty());
    const Tensor x = rand_tensor(DType::F32, c.x, seed++), gy = rand_tensor(DType::F32, ys, seed++);
    auto got = grad_weight(Var(x), Var(gy), c).tensor();
    ASSERT_TRUE(got.has_value()) << got.status().message();
    EXPECT_EQ(got->shape(), c.w);
    auto ref = grad_weight(F::cast(Var(x), DType::F64), F::cast(Var(gy), DType::F64), c).tensor();
    ASSERT_TRUE(ref.has_value()) << ref.status().message();
    ASSERT_EQ(ref->shape(), c.w);
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < ref->numel(); ++i) {
      worst = std::max(worst, std::abs(got->at_double(i) - ref->at_double(i)));
      scale = std::max(scale, std::abs(ref->at_double(i)));
    }
    EXPECT_GT(scale, 0.1);
    EXPECT_LE(worst, 1e-4 * std::max(1.0, scale));

    // bf16 inputs: the same sums with 8-bit mantissas in and out.
    auto low = grad_weight(F::cast(Var(x), DType::BF16), F::cast(Var(gy), DType::BF16), c).tensor();
    ASSERT_TRUE(low.has_value()) << low.status().message();
    ASSERT_EQ(low->dtype(), DType::BF16);
    double worst_low = 0;
    for (int64_t i = 0; i < ref->numel(); ++i)
      worst_low = std::max(worst_low, std::abs(low->at_double(i) - ref->at_double(i)));
    EXPECT_LE(worst_low, 0.05 * std::max(1.0, scale));
  }
}

TEST(ConvGradWeight, AMismatchedGradientNamesTheShapes) {
  const Case c{"3x3", {1, 2, 6, 6}, {3, 2, 3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1};
  Var bad = grad_weight(Var(rand_tensor(DType::F32, c.x, 1)), Var(rand_tensor(DType::F32, {1, 3, 5, 5}, 2)), c);
  auto t = bad.tensor();
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.status().message().find("does not match the conv output"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("[1,3,5,5]"), std::string::npos) << t.status().message();

  Case odd = c;
  odd.group = 4;  // 2 channels do not divide into 4 groups
  auto t2 =
      grad_weight(Var(rand_tensor(DType::F32, c.x, 1)), Var(rand_tensor(DType::F32, {1, 4, 4, 4}, 2)), odd).tensor();
  ASSERT_FALSE(t2.has_value());
  EXPECT_NE(t2.status().message().find("groups"), std::string::npos) << t2.status().message();
}

}  // namespace
}  // namespace ms::test::autograd
