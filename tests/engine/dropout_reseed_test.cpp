// A Dropout traced into a compiled training step must not repeat its traced mask every run: the
// kernel's "reseed" draws a new mask per run; without it, a fixed seed gives the same mask.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/nn/layers.h"
#include "engine/frontend/nn/trace.h"
#include "engine/runtime/executor.h"

namespace ms {
namespace {

Expected<std::vector<Tensor>> run_dropout_twice(bool reseed) {
  ir::Graph g;
  g.inputs = {"x"};
  const ir::ValueType t{DType::F32, std::vector<int64_t>{64, 64}, {"", ""}};
  g.add_value(ir::Value{"x", t, {}, std::nullopt});
  g.add_value(
      ir::Value{"ratio", ir::ValueType{DType::F32, std::vector<int64_t>{}, {}}, {}, Tensor::scalar<float>(0.5f)});
  g.add_value(
      ir::Value{"train", ir::ValueType{DType::Bool, std::vector<int64_t>{}, {}}, {}, Tensor::scalar<bool>(true)});
  ir::Node n;
  n.op_type = "Dropout";
  n.name = "drop";
  n.inputs = {"x", "ratio", "train"};
  n.outputs = {"y", "mask"};
  n.attrs["seed"] = 7.0f;
  if (reseed) n.attrs["reseed"] = int64_t{1};
  g.add_node(n);
  g.outputs = {"y"};
  auto cpu = backends::create_cpu_backend(1);
  auto exe = compiler::compile_executor(g, *cpu, {{"x", t}});
  if (!exe) return exe.status();
  Tensor x = Tensor::zeros(DType::F32, {64, 64});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.0f;
  std::vector<Tensor> outs;
  for (int run = 0; run < 2; ++run) {
    auto y = (*exe)->run({{"x", x}});
    if (!y) return y.status();
    outs.push_back((*y)[0].clone());
  }
  return outs;
}

TEST(DropoutReseed, CompiledRunsDrawANewMaskEachRun) {
  auto fixed = run_dropout_twice(false);
  ASSERT_TRUE(fixed.has_value()) << fixed.status().message();
  EXPECT_EQ(std::memcmp((*fixed)[0].raw(), (*fixed)[1].raw(), (*fixed)[0].nbytes()), 0);
  auto fresh = run_dropout_twice(true);
  ASSERT_TRUE(fresh.has_value()) << fresh.status().message();
  EXPECT_NE(std::memcmp((*fresh)[0].raw(), (*fresh)[1].raw(), (*fresh)[0].nbytes()), 0);
  // Still dropout: about half of the 4096 values kept (and scaled by 2).
  int kept = 0;
  for (int64_t i = 0; i < (*fresh)[1].numel(); ++i) kept += (*fresh)[1].data<float>()[i] != 0.0f;
  EXPECT_GT(kept, 1700);
  EXPECT_LT(kept, 2400);
}

TEST(DropoutReseed, TracedTrainingDropoutAsksForIt) {
  nn::Dropout d(0.5f);
  d.set_training(true);
  nn::TraceState root("t", "");
  {
    nn::TraceGuard guard(&root);
    nn::Var x = root.add_input("x", ir::ValueType{DType::F32, std::vector<int64_t>{2, 3}, {"", ""}});
    nn::Var y = d(x);
    ASSERT_TRUE(y.ok()) << y.status().message();
  }
  bool found = false;
  for (const auto& n : root.graph.nodes())
    if (n.op_type == "Dropout") found = n.attr_int("reseed", 0) == 1;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace ms
