// Every gradient rule against central finite differences (f64, small shapes).
#include "tests/engine/autograd_test_util.h"

namespace ms::test::autograd {
namespace {

using nn::operator+;
using nn::operator*;

constexpr DType D = DType::F64;

Tensor r(const Shape& s, uint32_t seed, double lo = -1, double hi = 1) { return rand_tensor(D, s, seed, lo, hi); }

Var op1(const std::string& t, const Vars& in, F::Attrs a = {}) { return F::op(t, in, std::move(a)); }

TEST(AutogradRules, BinaryWithBroadcasting) {
  check_gradients("Add", [](const Vars& v) { return F::add(v[0], v[1]); }, {r({2, 3, 4}, 1), r({3, 1}, 2)},
                  {true, true});
  check_gradients("Sub", [](const Vars& v) { return F::sub(v[0], v[1]); }, {r({4}, 3), r({2, 3, 4}, 4)}, {true, true});
  check_gradients("Mul", [](const Vars& v) { return F::mul(v[0], v[1]); }, {r({2, 3}, 5), r({3}, 6)}, {true, true});
  // x * x: one gradient term g (2 x).
  check_gradients("Mul x x", [](const Vars& v) { return F::mul(v[0], v[0]); }, {r({2, 3}, 7)}, {true});
  check_gradients("Div", [](const Vars& v) { return F::div(v[0], v[1]); }, {r({2, 3}, 7), r({2, 1}, 8, 1, 2)},
                  {true, true});
  check_gradients("Pow",
                  [](const Vars& v) {
                    return op1("Pow", {v[0], v[1]});
                  },
                  {r({2, 3}, 9, 0.5, 2), r({3}, 10)}, {true, true});
  check_gradients("Where",
                  [](const Vars& v) {
                    return op1("Where", {F::greater(v[0], 0.0), v[0], v[1]});
                  },
                  {r({2, 3}, 11), r({1, 3}, 12)}, {true, true});
  check_gradients("Sum",
                  [](const Vars& v) {
                    return op1("Sum", {v[0], v[1], v[0]});
                  },
                  {r({2, 3}, 13), r({3}, 14)}, {true, true});
}

TEST(AutogradRules, Unary) {
  struct U {
    const char* name;
    std::function<Var(const Var&)> f;
    double lo, hi;
  };
  const std::vector<U> cases{
      {"Relu", [](const Var& x) { return F::relu(x); }, -1, 1},
      {"LeakyRelu",
       [](const Var& x) {
         return op1("LeakyRelu", {x}, {{"alpha", 0.2f}});
       },
       -1, 1},
      {"Relu6", [](const Var& x) { return F::relu6(x); }, -3, 9},
      {"Sigmoid", [](const Var& x) { return F::sigmoid(x); }, -3, 3},
      {"Tanh", [](const Var& x) { return F::tanh(x); }, -2, 2},
      {"Erf", [](const Var& x) { return F::erf(x); }, -2, 2},
      {"Gelu", [](const Var& x) { return F::gelu(x); }, -3, 3},
      {"Exp", [](const Var& x) { return F::exp(x); }, -2, 2},
      {"Log", [](const Var& x) { return op1("Log", {x}); }, 0.5, 3},
      {"Neg", [](const Var& x) { return F::neg(x); }, -1, 1},
      {"Sqrt", [](const Var& x) { return F::sqrt(x); }, 0.5, 3},
      {"Reciprocal", [](const Var& x) { return op1("Reciprocal", {x}); }, 0.5, 3},
      {"Abs", [](const Var& x) { return op1("Abs", {x}); }, -1, 1},
      {"Softplus", [](const Var& x) { return op1("Softplus", {x}); }, -2, 2},
      {"Identity", [](const Var& x) { return F::identity(x); }, -1, 1},
      {"Cast", [](const Var& x) { return F::cast(F::cast(x, DType::F32), D); }, -1, 1},
  };
  uint32_t seed = 20;
  for (const auto& u : cases) {
    FdOptions opt;
    if (std::string(u.name) == "Cast") {  // through f32: a step f32 can resolve
      opt.eps = 1e-2;
      opt.tol = 1e-4;
    }
    check_gradients(
        u.name, [&](const Vars& v) { return u.f(v[0]); }, {r({3, 4}, seed++, u.lo, u.hi)}, {true}, opt);
  }
}

TEST(AutogradRules, SoftmaxFamily) {
  check_gradients("Softmax", [](const Vars& v) { return F::softmax(v[0], -1); }, {r({2, 5}, 30)}, {true});
  check_gradients("Softmax axis 1", [](const Vars& v) { return F::softmax(v[0], 1); }, {r({2, 3, 4}, 31)}, {true});
  check_gradients("LogSoftmax",
                  [](const Vars& v) {
                    return op1("LogSoftmax", {v[0]}, {{"axis", int64_t{-1}}});
                  },
                  {r({3, 4}, 32)}, {true});
  const Tensor labels = Tensor::from_vector<int64_t>({1, 0, 3}, {3});
  for (const char* red : {"mean", "sum", "none"})
    check_gradients(
        std::string("SoftmaxCrossEntropyLoss ") + red,
        [&](const Vars& v) {
          return op1("SoftmaxCrossEntropyLoss", {v[0], F::constant(labels)}, {{"reduction", std::string(red)}});
        },
        {r({3, 4}, 33)}, {true});
  check_gradients("NegativeLogLikelihoodLoss",
                  [&](const Vars& v) {
                    return op1("NegativeLogLikelihoodLoss", {v[0], F::constant(labels)});
                  },
                  {r({3, 4}, 34)}, {true});
}

TEST(AutogradRules, Reductions) {
  check_gradients("ReduceSum axis 1", [](const Vars& v) { return F::reduce_sum(v[0], {1}); }, {r({2, 3, 4}, 40)},
                  {true});
  check_gradients("ReduceSum all", [](const Vars& v) { return F::reduce_sum(v[0]); }, {r({2, 3}, 41)}, {true});
  check_gradients("ReduceSum keepdims",
                  [](const Vars& v) {
                    return op1("ReduceSum", {v[0], F::ints({-1})}, {{"keepdims", int64_t{1}}});
                  },
                  {r({2, 3}, 42)}, {true});
  check_gradients("ReduceMean", [](const Vars& v) { return F::reduce_mean(v[0], {0, 2}); }, {r({2, 3, 4}, 43)}, {true});
}

TEST(AutogradRules, ShapesAndDataMovement) {
  check_gradients("Reshape", [](const Vars& v) { return F::reshape(v[0], {3, 8}); }, {r({2, 3, 4}, 50)}, {true});
  check_gradients("Flatten", [](const Vars& v) { return F::flatten(v[0], 1); }, {r({2, 3, 4}, 51)}, {true});
  check_gradients("Transpose", [](const Vars& v) { return F::transpose(v[0], {2, 0, 1}); }, {r({2, 3, 4}, 52)}, {true});
  check_gradients("Concat",
                  [](const Vars& v) {
                    return F::concat({v[0], v[1], v[0]}, 1);
                  },
                  {r({2, 3}, 53), r({2, 2}, 54)}, {true, true});
  check_gradients("Slice",
                  [](const Vars& v) {
                    return op1("Slice", {v[0], F::ints({1, -3}), F::ints({3, 100}), F::ints({0, 2})});
                  },
                  {r({4, 3, 5}, 55)}, {true});
  const Tensor idx = Tensor::from_vector<int64_t>({2, 0, 2, 1}, {2, 2});
  check_gradients("Gather axis 0", [&](const Vars& v) { return F::gather(v[0], F::constant(idx), 0); }, {r({3, 4}, 56)},
                  {true});
  check_gradients("Gather axis 1", [&](const Vars& v) { return F::gather(v[0], F::constant(idx), 1); },
                  {r({2, 3, 2}, 57)}, {true});
  check_gradients("Expand",
                  [](const Vars& v) {
                    return op1("Expand", {v[0], F::ints({2, 3, 4})});
                  },
                  {r({3, 1}, 58)}, {true});
  check_gradients("Unsqueeze",
                  [](const Vars& v) {
                    return op1("Unsqueeze", {v[0], F::ints({1})});
                  },
                  {r({2, 3}, 59)}, {true});
}

TEST(AutogradRules, GemmAndMatMul) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const Shape as = ta ? Shape{4, 3} : Shape{3, 4};
      const Shape bs = tb ? Shape{5, 4} : Shape{4, 5};
      check_gradients("Gemm " + std::to_string(ta) + std::to_string(tb),
                      [&](const Vars& v) {
                        return op1("Gemm", {v[0], v[1], v[2]},
                                   {{"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", 0.5f}, {"beta", 2.0f}});
                      },
                      {r(as, 60), r(bs, 61), r({5}, 62)}, {true, true, true});
    }
  check_gradients("MatMul 2x2", [](const Vars& v) { return F::matmul(v[0], v[1]); }, {r({3, 4}, 63), r({4, 2}, 64)},
                  {true, true});
  check_gradients("MatMul batch x 2-D", [](const Vars& v) { return F::matmul(v[0], v[1]); },
                  {r({2, 3, 4}, 65), r({4, 2}, 66)}, {true, true});
  check_gradients("MatMul broadcast batch", [](const Vars& v) { return F::matmul(v[0], v[1]); },
                  {r({2, 1, 3, 4}, 67), r({3, 4, 2}, 68)}, {true, true});
  check_gradients("MatMul 1-D", [](const Vars& v) { return F::matmul(v[0], v[1]); }, {r({4}, 69), r({2, 4, 3}, 70)},
                  {true, true});
}

struct ConvCase {
  const char* name;
  Shape x, w;
  std::vector<int64_t> stride, pad, dilation;
  int64_t group;
};

TEST(AutogradRules, Conv) {
  const std::vector<ConvCase> cases{
      {"plain", {2, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
      {"stride 2 pad 1", {1, 2, 6, 5}, {3, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1},
      {"stride 2 uneven", {1, 2, 7, 6}, {2, 2, 2, 3}, {2, 3}, {0, 1}, {1, 1}, 1},
      {"dilation 2", {1, 2, 7, 7}, {2, 2, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1},
      {"groups 2", {2, 4, 5, 5}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2},
      {"depthwise stride 2", {1, 3, 6, 6}, {3, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 3},
  };
  uint32_t seed = 80;
  for (const auto& c : cases)
    check_gradients(std::string("Conv ") + c.name,
                    [&](const Vars& v) { return F::conv2d(v[0], v[1], v[2], c.stride, c.pad, c.dilation, c.group); },
                    {r(c.x, seed++), r(c.w, seed++), r({c.w[0]}, seed++)}, {true, true, true});
}

// Max/Min (first equal input wins), ReduceMax/ReduceMin (ties share), Split (an unused output gets
// zeros), constant Pad; other Pad modes and crops fail with a message.
TEST(AutogradRules, ExtremaSplitAndPad) {
  check_gradients("Max broadcast",
                  [](const Vars& v) {
                    return op1("Max", {v[0], v[1]});
                  },
                  {r({2, 3}, 120), r({3}, 121)}, {true, true});
  check_gradients("Min three",
                  [](const Vars& v) {
                    return op1("Min", {v[0], v[1], v[2]});
                  },
                  {r({4}, 122), r({4}, 123), r({2, 4}, 124)}, {true, true, true});
  check_gradients("ReduceMax axis 1",
                  [](const Vars& v) {
                    return op1("ReduceMax", {v[0]}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
                  },
                  {r({3, 5, 2}, 125)}, {true});
  check_gradients("ReduceMin all", [](const Vars& v) { return op1("ReduceMin", {v[0]}); }, {r({2, 3}, 126)}, {true});
  check_gradients("Split",
                  [](const Vars& v) {
                    const Vars parts = F::op_n("Split", {v[0], F::ints({1, 3})}, {{"axis", int64_t{1}}}, 2);
                    return F::mul(parts[1], 2.0);  // part 0 does not reach the result
                  },
                  {r({2, 4, 3}, 127)}, {true});
  check_gradients("Pad constant",
                  [](const Vars& v) {
                    return op1("Pad", {v[0], F::ints({0, 1, 2, 1, 0, 3})});
                  },
                  {r({2, 3, 2}, 128)}, {true});
  Var x(r({2, 3}, 129));
  auto st = nn::value_and_grad(
      [&] {
        return F::reduce_sum(op1("Pad", {x, F::ints({0, 1, 0, 1})}, {{"mode", std::string("reflect")}}));
      },
      {x});
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.status().message().find("constant-mode"), std::string::npos) << st.status().message();
}

TEST(AutogradRules, Pools) {
  check_gradients("MaxPool 2x2",
                  [](const Vars& v) {
                    return F::max_pool2d(v[0], {2, 2});
                  },
                  {r({2, 2, 4, 4}, 90)}, {true});
  check_gradients("MaxPool 3x3 s2 p1",
                  [](const Vars& v) {
                    return F::max_pool2d(v[0], {3, 3}, {2, 2}, {1, 1});
                  },
                  {r({1, 2, 5, 6}, 91)}, {true});
  check_gradients("AveragePool 2x2",
                  [](const Vars& v) {
                    return F::avg_pool2d(v[0], {2, 2});
                  },
                  {r({1, 2, 4, 4}, 92)}, {true});
  for (int64_t include : {0, 1})
    check_gradients("AveragePool 3x3 s2 p1 include_pad " + std::to_string(include),
                    [&](const Vars& v) {
                      return op1("AveragePool", {v[0]},
                                 {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                  {"strides", std::vector<int64_t>{2, 2}},
                                  {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                  {"count_include_pad", include}});
                    },
                    {r({1, 2, 5, 5}, 93)}, {true});
  check_gradients("GlobalAveragePool", [](const Vars& v) { return F::global_avg_pool(v[0]); }, {r({2, 3, 3, 2}, 94)},
                  {true});
}

TEST(AutogradRules, Norms) {
  check_gradients("BatchNormalization (inference form)",
                  [](const Vars& v) { return F::batch_norm(v[0], v[1], v[2], v[3], v[4], 1e-3f); },
                  {r({2, 3, 2, 2}, 100), r({3}, 101), r({3}, 102), r({3}, 103), r({3}, 104, 0.5, 2)},
                  {true, true, true, false, false});
  check_gradients("LayerNormalization", [](const Vars& v) { return F::layer_norm(v[0], v[1], v[2], 1e-3f); },
                  {r({2, 3, 4}, 105), r({4}, 106), r({4}, 107)}, {true, true, true});
  check_gradients("LayerNormalization axis 1",
                  [](const Vars& v) {
                    return op1("LayerNormalization", {v[0], v[1], v[2]}, {{"axis", int64_t{1}}, {"epsilon", 1e-3f}});
                  },
                  {r({2, 3, 4}, 108), r({3, 4}, 109), r({3, 4}, 110)}, {true, true, true});
}

TEST(AutogradRules, DropoutTrainingUsesItsMask) {
  // A fixed seed gives the same mask on every call, so finite differences see the same function.
  check_gradients("Dropout",
                  [](const Vars& v) {
                    return F::op_n("Dropout", {v[0], F::scalar(0.3, D), F::constant(Tensor::scalar<bool>(true))},
                                   {{"seed", 5.0f}}, 2)[0];
                  },
                  {r({4, 5}, 120)}, {true});
}

TEST(AutogradRules, BatchNorm2dTrainingStatistics) {
  nn::manual_seed(1);
  nn::BatchNorm2d bn(3);
  bn.set_training(true);
  FdOptions opt;
  opt.eps = 1e-2;
  opt.tol = 2e-2;  // f32 module
  check_gradients(
      "BatchNorm2d training", [&](const Vars& v) { return bn(v[0]); }, {rand_tensor(DType::F32, {2, 3, 2, 2}, 130)},
      {true}, opt);
  bn.set_training(false);
}

TEST(AutogradRules, MissingRuleIsAnError) {
  Var x(r({3}, 140));
  auto g = nn::grad([&] { return F::reduce_sum(op1("Floor", {x})); }, {x});
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.status().message().find("Floor"), std::string::npos) << g.status().message();
}

TEST(AutogradRules, UnusedInputGetsZeros) {
  Var x(r({2, 2}, 141)), y(r({3}, 142));
  auto g = nn::grad([&] { return F::reduce_sum(F::mul(x, x)); }, {x, y});
  ASSERT_TRUE(g.has_value()) << g.status().message();
  auto gy = (*g)[1].tensor();
  ASSERT_TRUE(gy.has_value());
  EXPECT_EQ(gy->shape(), (Shape{3}));
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(gy->at_double(i), 0.0);
}

TEST(AutogradRules, NonScalarLossIsAnError) {
  Var x(r({2, 2}, 143));
  auto g = nn::grad([&] { return F::mul(x, x); }, {x});
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.status().message().find("scalar"), std::string::npos);
}

}  // namespace
}  // namespace ms::test::autograd
