// F::custom: a plain function runs as an op in PyNative; tracing it needs an inference function (the
// error names the op and says so); with one it runs in Graph mode with the same values.
#include <gtest/gtest.h>

#include "engine/frontend/nn/custom.h"
#include "engine/frontend/nn/nn.h"

namespace ms::nn {
namespace {

Expected<Tensor> twice_plus_one(const Tensor& x) {
  if (x.dtype() != DType::F32) return invalid_argument("takes f32");
  Tensor y = Tensor::empty(DType::F32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = x.data<float>()[i] * 2.f + 1.f;
  return y;
}

Tensor input() { return Tensor::from_vector<float>({-1.f, 0.f, 0.5f, 3.f}, {2, 2}); }

void expect_twice_plus_one(const Var& y) {
  ASSERT_TRUE(y.ok()) << y.status().message();
  const Tensor t = *y.tensor();
  ASSERT_EQ(t.shape(), (Shape{2, 2}));
  const Tensor x = input();
  for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(t.data<float>()[i], x.data<float>()[i] * 2.f + 1.f);
}

TEST(NnCustomOp, RunsInPyNative) {
  auto op = F::custom("twice_plus_one_eager", twice_plus_one);
  expect_twice_plus_one(op(Var(input())));
}

TEST(NnCustomOp, AnErrorOfTheFunctionNamesTheOp) {
  auto op = F::custom("twice_plus_one_checked", twice_plus_one);
  Var y = op(Var(Tensor::zeros(DType::I64, {2})));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("custom op 'twice_plus_one_checked': takes f32"), std::string::npos)
      << y.status().message();
}

TEST(NnCustomOp, TracingWithoutInferenceFailsNamingTheOp) {
  auto op = F::custom("twice_plus_one_no_infer", twice_plus_one);
  JitFunction f = jit([op](const Vars& in) { return Vars{F::relu(op(in[0]))}; });
  Vars y = f(Vars{Var(input())});
  ASSERT_FALSE(y[0].ok());
  const std::string m = y[0].status().message();
  EXPECT_NE(m.find("custom op 'twice_plus_one_no_infer' has no shape inference function"), std::string::npos) << m;
  EXPECT_NE(m.find("Graph mode"), std::string::npos) << m;
}

TEST(NnCustomOp, WithInferenceItRunsInGraphMode) {
  auto op = F::custom("twice_plus_one_graph", twice_plus_one);
  op.infer_same_as_input();
  JitFunction f = jit([op](const Vars& in) { return Vars{op(F::identity(in[0]))}; });
  Vars y = f(Vars{Var(input())});
  expect_twice_plus_one(y[0]);
  EXPECT_EQ(f.cache().traces(), 1);
}

TEST(NnCustomOp, GraphModeChecksTheResultAgainstInference) {
  auto op = F::custom("wrong_shape_graph",
                      [](const Tensor& x) -> Expected<Tensor> { return Tensor::zeros(x.dtype(), {x.numel()}); });
  op.infer_same_as_input();
  JitFunction f = jit([op](const Vars& in) { return Vars{op(F::identity(in[0]))}; });
  Vars y = f(Vars{Var(input())});
  ASSERT_FALSE(y[0].ok());
  EXPECT_NE(y[0].status().message().find("custom op 'wrong_shape_graph' returned f32[4] for output 0, its inference "
                                         "said f32[2,2]"),
            std::string::npos)
      << y[0].status().message();
}

}  // namespace
}  // namespace ms::nn
