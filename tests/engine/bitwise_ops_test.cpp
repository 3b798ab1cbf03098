// BitwiseAnd/Or/Xor/Not, BitCast, BitShift's signed rules, Clip with min > max, ReduceMax/Min on bool,
// CumProd, LpNormalization, GroupNormalization, Unique and the random generators: kernels against
// values computed with numpy, inference of the data-dependent shapes, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;
using Doubles = std::vector<double>;

std::vector<Tensor> run(const std::string& op, std::vector<Tensor> inputs, Attrs attrs = {}, int64_t opset = 28,
                        size_t outputs = 1) {
  const ir::Node node = test::make_node(op, inputs.size(), outputs, std::move(attrs));
  auto r = test::run_kernel(node, inputs, opset);
  EXPECT_TRUE(r.has_value()) << op << ": " << r.status().message();
  return r ? *r : std::vector<Tensor>{};
}

std::string error_of(const std::string& op, std::vector<Tensor> inputs, Attrs attrs = {}, int64_t opset = 28,
                     size_t outputs = 1) {
  const ir::Node node = test::make_node(op, inputs.size(), outputs, std::move(attrs));
  auto r = test::run_kernel(node, inputs, opset);
  return r.has_value() ? std::string("(no error)") : r.status().message();
}

void expect_near(const Tensor& t, const Doubles& want, double tol = 1e-4) {
  const Doubles got = test::values_of(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// --- Bitwise --------------------------------------------------------------------------------------

TEST(BitwiseOps, AndBroadcastsUnsigned) {
  auto y = run("BitwiseAnd", {Tensor::from_vector<uint8_t>({12, 255, 7, 1, 2, 255}, {2, 3}),
                              Tensor::from_vector<uint8_t>({10, 15, 5}, {3})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dtype(), DType::U8);
  EXPECT_EQ(y[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(test::values_of(y[0]), (Doubles{8, 15, 5, 0, 2, 5}));
}

TEST(BitwiseOps, OrXorNotOnSignedValues) {
  const Tensor a = Tensor::from_vector<int32_t>({-8, 5, -1, 100}, {4});
  const Tensor b = Tensor::from_vector<int32_t>({3, -6, 7, -100}, {4});
  EXPECT_EQ(test::values_of(run("BitwiseOr", {a, b})[0]), (Doubles{-5, -1, -1, -4}));
  EXPECT_EQ(test::values_of(run("BitwiseXor", {a, b})[0]), (Doubles{-5, -1, -8, -8}));
  EXPECT_EQ(test::values_of(run("BitwiseNot", {Tensor::from_vector<int8_t>({0, -1, 5, 127}, {4})})[0]),
            (Doubles{-1, 0, -6, -128}));
}

TEST(BitwiseOps, RejectsFloatsAndMixedTypes) {
  EXPECT_NE(error_of("BitwiseAnd", {Tensor::zeros(DType::F32, {2}), Tensor::zeros(DType::F32, {2})}), "(no error)");
  EXPECT_NE(error_of("BitwiseOr", {Tensor::zeros(DType::I32, {2}), Tensor::zeros(DType::I64, {2})}), "(no error)");
  EXPECT_NE(error_of("BitwiseNot", {Tensor::zeros(DType::Bool, {2})}), "(no error)");
}

TEST(BitCastOp, ReinterpretsBits) {
  auto y = run("BitCast", {Tensor::from_vector<float>({1.0f, -2.5f}, {2})}, {{"to", int64_t{6}}}, 26);
  EXPECT_EQ(y[0].dtype(), DType::I32);
  EXPECT_EQ(test::values_of(y[0]), (Doubles{1065353216, -1071644672}));
  auto b = run("BitCast", {Tensor::from_vector<bool>({true, false}, {2})}, {{"to", int64_t{2}}}, 26);
  EXPECT_EQ(b[0].dtype(), DType::U8);
  EXPECT_EQ(test::values_of(b[0]), (Doubles{1, 0}));
  // Any non-zero byte reads as true.
  auto t = run("BitCast", {Tensor::from_vector<uint8_t>({0, 2}, {2})}, {{"to", int64_t{9}}}, 26);
  EXPECT_EQ(t[0].dtype(), DType::Bool);
  EXPECT_EQ(test::values_of(t[0]), (Doubles{0, 1}));
}

TEST(BitCastOp, ErrorsNameTheWidthAndTarget) {
  const std::string e = error_of("BitCast", {Tensor::zeros(DType::F32, {2})}, {{"to", int64_t{5}}}, 26);
  EXPECT_NE(e.find("bit width"), std::string::npos) << e;
  const std::string s = error_of("BitCast", {Tensor::zeros(DType::F32, {2})}, {{"to", int64_t{8}}}, 26);
  EXPECT_NE(s.find("'to'"), std::string::npos) << s;
  const std::string m = error_of("BitCast", {Tensor::zeros(DType::F32, {2})}, {}, 26);
  EXPECT_NE(m.find("'to' is required"), std::string::npos) << m;
}

TEST(BitShiftOp, RightIsArithmeticAndOutOfRangeFollowsTheSign) {
  const Tensor x = Tensor::from_vector<int8_t>({-16, -1, 16, 100, -7}, {5});
  const Tensor s = Tensor::from_vector<int8_t>({2, 9, -1, 8, 0}, {5});
  EXPECT_EQ(test::values_of(run("BitShift", {x, s}, {{"direction", std::string("RIGHT")}})[0]),
            (Doubles{-4, -1, 0, 0, -7}));
  EXPECT_EQ(test::values_of(run("BitShift", {x, s}, {{"direction", std::string("LEFT")}})[0]),
            (Doubles{-64, 0, 0, 0, -7}));
}

// --- Clip, ReduceMax/Min on bool, CumProd -------------------------------------------------------------

TEST(ClipOp, MinAboveMaxGivesMax) {
  auto y =
      run("Clip", {Tensor::from_vector<float>({-2, 0, 5}, {3}), Tensor::scalar<float>(3), Tensor::scalar<float>(1)}, {},
          13);
  EXPECT_EQ(test::values_of(y[0]), (Doubles{1, 1, 1}));
}

TEST(ReduceBool, MaxIsAnyMinIsAll) {
  const Tensor x = Tensor::from_vector<bool>({true, true, true, false, false, true, false, false}, {4, 2});
  const Tensor axes = Tensor::from_vector<int64_t>({1}, {1});
  auto mx = run("ReduceMax", {x, axes}, {}, 20);
  EXPECT_EQ(mx[0].dtype(), DType::Bool);
  EXPECT_EQ(test::values_of(mx[0]), (Doubles{1, 1, 1, 0}));
  EXPECT_EQ(test::values_of(run("ReduceMin", {x, axes}, {}, 20)[0]), (Doubles{1, 0, 0, 0}));
  // Empty sets: max is false, min is true.
  const Tensor empty = Tensor::zeros(DType::Bool, {2, 0});
  EXPECT_EQ(test::values_of(run("ReduceMax", {empty, axes}, {}, 20)[0]), (Doubles{0, 0}));
  EXPECT_EQ(test::values_of(run("ReduceMin", {empty, axes}, {}, 20)[0]), (Doubles{1, 1}));
  EXPECT_NE(error_of("ReduceSum", {x, axes}, {}, 20).find("does not support dtype bool"), std::string::npos);
}

TEST(CumProdOp, InclusiveExclusiveReverse) {
  auto y =
      run("CumProd", {Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}), Tensor::scalar<int64_t>(1)}, {}, 26);
  EXPECT_EQ(test::values_of(y[0]), (Doubles{1, 2, 6, 4, 20, 120}));
  auto e = run("CumProd", {Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {3, 2}), Tensor::scalar<int32_t>(0)},
               {{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}, 26);
  EXPECT_EQ(test::values_of(e[0]), (Doubles{15, 24, 5, 6, 1, 1}));
  const std::string err = error_of("CumProd", {Tensor::zeros(DType::F32, {2}), Tensor::scalar<int64_t>(1)}, {}, 26);
  EXPECT_NE(err.find("axis 1 is out of range for rank 1"), std::string::npos) << err;
}

// --- LpNormalization, GroupNormalization -----------------------------------------------------------------

TEST(LpNormalizationOp, L1AndL2WithZeroNorm) {
  const Tensor x = Tensor::from_vector<float>({3, -4, 0, 0}, {2, 2});
  expect_near(run("LpNormalization", {x}, {{"p", int64_t{1}}, {"axis", int64_t{1}}}, 22)[0], {3.0 / 7, -4.0 / 7, 0, 0});
  expect_near(run("LpNormalization", {x}, {}, 22)[0], {0.6, -0.8, 0, 0});
  // Axis 0 of [[3,-4],[0,0]]: each column has one non-zero.
  expect_near(run("LpNormalization", {x}, {{"axis", int64_t{0}}}, 22)[0], {1, -1, 0, 0});
}

TEST(LpNormalizationOp, Errors) {
  const std::string p = error_of("LpNormalization", {Tensor::zeros(DType::F32, {2})}, {{"p", int64_t{3}}}, 22);
  EXPECT_NE(p.find("'p' must be 1 or 2"), std::string::npos) << p;
  const std::string a = error_of("LpNormalization", {Tensor::zeros(DType::F32, {2})}, {{"axis", int64_t{1}}}, 22);
  EXPECT_NE(a.find("'axis' = 1 is out of range"), std::string::npos) << a;
}

Tensor groupnorm_input() {
  std::vector<float> v(24);
  const float mult[4] = {1, -1, 0.5f, 2};
  for (int i = 0; i < 24; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * mult[(i / 3) % 4];
  return Tensor::from_vector<float>(v, {2, 4, 3});
}

TEST(GroupNormalizationOp, PerChannelScaleAtOpset21) {
  auto y = run("GroupNormalization",
               {groupnorm_input(), Tensor::from_vector<float>({1, 2, -1, 0.5f}, {4}),
                Tensor::from_vector<float>({0, 1, 2, 3}, {4})},
               {{"num_groups", int64_t{2}}}, 21);
  expect_near(y[0], {0.57035,  0.95059,  1.33082, -0.1407, -0.90117, -1.66164, 3.04974, 2.98975,
                     2.92977,  3.37491,  3.49488, 3.61485, 0.92956,  0.99842,  1.06727, -0.85912,
                     -0.99684, -1.13455, 3.02654, 2.99763, 2.96871,  3.44098,  3.49881, 3.55665});
}

TEST(GroupNormalizationOp, PerGroupScaleAtOpset18) {
  auto y =
      run("GroupNormalization",
          {groupnorm_input(), Tensor::from_vector<float>({2, -1}, {2}), Tensor::from_vector<float>({0.5f, 1}, {2})},
          {{"num_groups", int64_t{2}}}, 18);
  expect_near(y[0], {1.6407,   2.40117,  3.16164, -0.6407,  -1.40117, -2.16164, 2.04974, 1.98975,
                     1.92977,  0.25019,  0.01025, -0.22969, 2.35912,  2.49684,  2.63455, -1.35912,
                     -1.49684, -1.63455, 2.02654, 1.99763,  1.96871,  0.11804,  0.00237, -0.1133});
}

TEST(GroupNormalizationOp, Errors) {
  const Tensor s = Tensor::zeros(DType::F32, {4});
  const std::string g = error_of("GroupNormalization", {groupnorm_input(), s, s}, {{"num_groups", int64_t{3}}}, 21);
  EXPECT_NE(g.find("does not divide"), std::string::npos) << g;
  const std::string c = error_of("GroupNormalization", {groupnorm_input(), Tensor::zeros(DType::F32, {2}), s},
                                 {{"num_groups", int64_t{2}}}, 21);
  EXPECT_NE(c.find("(scale) has 2 values, expected 4"), std::string::npos) << c;
  const std::string m = error_of("GroupNormalization", {groupnorm_input(), s, s}, {}, 21);
  EXPECT_NE(m.find("'num_groups' is required"), std::string::npos) << m;
}

// --- Unique -----------------------------------------------------------------------------------------

TEST(UniqueOp, SortedAndUnsortedWithoutAxis) {
  const Tensor x = Tensor::from_vector<int64_t>({3, 1, 3, -2, 1, 1}, {6});
  auto s = run("Unique", {x}, {}, 28, 4);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(test::values_of(s[0]), (Doubles{-2, 1, 3}));
  EXPECT_EQ(test::values_of(s[1]), (Doubles{3, 1, 0}));
  EXPECT_EQ(test::values_of(s[2]), (Doubles{2, 1, 2, 0, 1, 1}));
  EXPECT_EQ(test::values_of(s[3]), (Doubles{1, 3, 2}));
  auto u = run("Unique", {x}, {{"sorted", int64_t{0}}}, 28, 4);
  EXPECT_EQ(test::values_of(u[0]), (Doubles{3, 1, -2}));
  EXPECT_EQ(test::values_of(u[1]), (Doubles{0, 1, 3}));
  EXPECT_EQ(test::values_of(u[2]), (Doubles{0, 1, 0, 2, 1, 1}));
  EXPECT_EQ(test::values_of(u[3]), (Doubles{2, 3, 1}));
}

TEST(UniqueOp, SlicesAlongAxisAndNaNMerged) {
  const Tensor x = Tensor::from_vector<int32_t>({1, 0, 1, 0, 2, 2, 2, 2, 1, 0, 1, 0}, {3, 4});
  auto y = run("Unique", {x}, {{"axis", int64_t{1}}}, 28, 4);
  EXPECT_EQ(y[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(test::values_of(y[0]), (Doubles{0, 1, 2, 2, 0, 1}));
  EXPECT_EQ(test::values_of(y[1]), (Doubles{1, 0}));
  EXPECT_EQ(test::values_of(y[2]), (Doubles{1, 0, 1, 0}));
  EXPECT_EQ(test::values_of(y[3]), (Doubles{2, 2}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto n = run("Unique", {Tensor::from_vector<float>({nan, 1, nan}, {3})}, {}, 28, 4);
  ASSERT_EQ(n[0].numel(), 2);
  EXPECT_TRUE(std::isnan(test::value_at(n[0], 1)));
  EXPECT_EQ(test::values_of(n[3]), (Doubles{1, 2}));
}

TEST(UniqueOp, InfersDataDependentShapesAndErrors) {
  const ir::Node node = test::make_node("Unique", 1, 4, {{"axis", int64_t{-1}}});
  ir::ValueType x{DType::F32, std::vector<int64_t>{3, 5}, {"", ""}};
  auto t = test::infer_types(node, std::vector<ir::ValueType>{x}, 28);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(*(*t)[0].dims, (std::vector<int64_t>{3, -1}));
  EXPECT_EQ(*(*t)[2].dims, (std::vector<int64_t>{5}));
  EXPECT_EQ(*(*t)[3].dims, (std::vector<int64_t>{-1}));
  const std::string e = error_of("Unique", {Tensor::zeros(DType::F32, {2})}, {{"axis", int64_t{1}}}, 28, 4);
  EXPECT_NE(e.find("'axis' = 1 is out of range"), std::string::npos) << e;
}

// --- Random generators ------------------------------------------------------------------------------

TEST(RandomOps, UniformIsSeededAndInRange) {
  const Attrs a{{"shape", std::vector<int64_t>{1000}}, {"low", -2.0f}, {"high", 3.0f}, {"seed", 7.0f}};
  auto y1 = run("RandomUniform", {}, a, 22);
  auto y2 = run("RandomUniform", {}, a, 22);
  ASSERT_EQ(y1[0].shape(), (Shape{1000}));
  EXPECT_EQ(y1[0].dtype(), DType::F32);
  EXPECT_EQ(test::values_of(y1[0]), test::values_of(y2[0]));
  double sum = 0;
  for (double v : test::values_of(y1[0])) {
    EXPECT_GE(v, -2.0);
    EXPECT_LT(v, 3.0);
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, 0.5, 0.25);
}

// A seeded node draws numpy's legacy RandomState(seed) stream, as onnx's reference implementation.
TEST(RandomOps, SeededStreamsMatchNumpy) {
  const Attrs u{{"shape", std::vector<int64_t>{3}}, {"dtype", int64_t{11}}, {"seed", 0.0f}};
  expect_near(run("RandomUniform", {}, u, 22)[0], {0.5488135, 0.71518937, 0.60276338}, 1e-8);
  expect_near(run("RandomNormal", {}, u, 22)[0], {1.76405235, 0.40015721, 0.97873798}, 1e-8);
  const Attrs n{{"dtype", int64_t{11}}, {"mean", 5.0f}, {"scale", 2.0f}, {"seed", 3.0f}};
  expect_near(run("RandomNormalLike", {Tensor::zeros(DType::F32, {3})}, n, 22)[0], {8.57725695, 5.8730197, 5.19299494},
              1e-7);
  auto b = run("Bernoulli", {Tensor::from_vector<double>({0.3, 0.7, 0.1, 0.9, 0.5, 0.2, 0.8, 0.6, 0.4, 0.05}, {10})},
               {{"seed", 0.0f}}, 22);
  EXPECT_EQ(b[0].dtype(), DType::F64);
  EXPECT_EQ(test::values_of(b[0]), (Doubles{0, 0, 0, 1, 0, 0, 1, 0, 1, 0}));
}

TEST(RandomOps, NormalLikeMatchesMeanAndScale) {
  auto y = run("RandomNormalLike", {Tensor::zeros(DType::I32, {100, 100})},
               {{"dtype", int64_t{11}}, {"mean", 5.0f}, {"scale", 2.0f}, {"seed", 1.0f}}, 22);
  EXPECT_EQ(y[0].dtype(), DType::F64);
  const Doubles v = test::values_of(y[0]);
  double m = 0, s2 = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s2 += (x - m) * (x - m);
  EXPECT_NEAR(m, 5.0, 0.1);
  EXPECT_NEAR(std::sqrt(s2 / static_cast<double>(v.size())), 2.0, 0.1);
}

TEST(RandomOps, BernoulliAndMultinomialExtremes) {
  auto b = run("Bernoulli", {Tensor::from_vector<float>({0, 1, 0, 1}, {4})}, {{"dtype", int64_t{9}}}, 22);
  EXPECT_EQ(b[0].dtype(), DType::Bool);
  EXPECT_EQ(test::values_of(b[0]), (Doubles{0, 1, 0, 1}));
  const float inf = std::numeric_limits<float>::infinity();
  auto m = run("Multinomial", {Tensor::from_vector<float>({0, -inf, -inf, -inf, -inf, 3}, {2, 3})},
               {{"sample_size", int64_t{4}}, {"seed", 3.0f}}, 22);
  EXPECT_EQ(m[0].dtype(), DType::I32);
  EXPECT_EQ(m[0].shape(), (Shape{2, 4}));
  EXPECT_EQ(test::values_of(m[0]), (Doubles{0, 0, 0, 0, 2, 2, 2, 2}));
}

TEST(RandomOps, Errors) {
  const std::string d = error_of("RandomUniform", {}, {{"shape", std::vector<int64_t>{2}}, {"dtype", int64_t{6}}}, 22);
  EXPECT_NE(d.find("not a float type"), std::string::npos) << d;
  const std::string s = error_of("RandomNormal", {}, {}, 22);
  EXPECT_NE(s.find("'shape' is required"), std::string::npos) << s;
  const std::string p = error_of("Bernoulli", {Tensor::from_vector<float>({0.5f, 1.5f}, {2})}, {}, 22);
  EXPECT_NE(p.find("outside [0, 1]"), std::string::npos) << p;
  const std::string r = error_of("Multinomial", {Tensor::zeros(DType::F32, {3})}, {}, 22);
  EXPECT_NE(r.find("must have rank 2"), std::string::npos) << r;
}

}  // namespace
}  // namespace ms
