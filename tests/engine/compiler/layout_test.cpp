// Layout propagation at O2: activations between convolutions stay in oneDNN's blocked layout (no
// reorder between two convs), and the outputs equal the eager run's.
#include <gtest/gtest.h>

#include <random>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/zoo/zoo.h"
#include "engine/runtime/executor.h"

namespace ms {
namespace {

TEST(CompilerLayout, ResNetKeepsActivationsBlockedBetweenConvs) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(1);
  const std::string in = g->inputs[0];
  const ir::ValueType t = g->value(in)->type;
  std::map<std::string, ir::ValueType> sig{{in, t}};
  compiler::CompileOptions o2;
  o2.jit_level = compiler::JitLevel::O2;
  auto c = compiler::compile_executor(*g, *be, sig, o2);
  ASSERT_TRUE(c) << c.status().message();
  int dst_blocked = 0, src_blocked = 0, residual_blocked = 0;
  for (const auto& n : (*c)->graph().nodes()) {
    dst_blocked += n.attr_int("dst_blocked", 0) != 0;
    src_blocked += n.attr_int("src_blocked", 0) != 0;
    residual_blocked += n.attr_int("residual_blocked", 0) != 0;
    for (const auto& o : n.outputs)  // graph outputs are never left blocked
      if (n.attr_int("dst_blocked", 0)) EXPECT_EQ(std::count(g->outputs.begin(), g->outputs.end(), o), 0) << o;
  }
  EXPECT_GT(dst_blocked, 10);
  EXPECT_GT(src_blocked, 10);
  EXPECT_GT(residual_blocked, 2);

  std::vector<float> x(static_cast<size_t>(numel(*t.dims)));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : x) v = u(rng);
  runtime::TensorMap inputs{{in, Tensor::from_vector<float>(x, *t.dims)}};
  runtime::EagerExecutor eager(*g, *be);
  auto want = eager.run(inputs);
  ASSERT_TRUE(want) << want.status().message();
  auto got = (*c)->run(inputs);
  ASSERT_TRUE(got) << got.status().message();
  const Tensor& a = (*want)[0];
  const Tensor& b = (*got)[0];
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i)
    EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-3f + 1e-3f * std::abs(a.data<float>()[i])) << i;
}

}  // namespace
}  // namespace ms
