// O2 layout propagation through pools: a MaxPool or GlobalAveragePool between blocked convs becomes
// a FusedPool reading and writing the blocked layout (no reorder, no reorder scratch outside the
// arena), outputs equal the eager run's; a pool with nothing blocked around it stays the plain op.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/zoo/zoo.h"
#include "engine/runtime/executor.h"

namespace ms {
namespace {

runtime::TensorMap random_inputs(const ir::Graph& g) {
  const std::string in = g.inputs[0];
  const ir::ValueType t = g.value(in)->type;
  std::vector<float> x(static_cast<size_t>(numel(*t.dims)));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : x) v = u(rng);
  return {{in, Tensor::from_vector<float>(x, *t.dims)}};
}

TEST(CompilerPoolLayout, ResNetPoolsStayInTheBlockedRegion) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(1);
  const std::string in = g->inputs[0];
  std::map<std::string, ir::ValueType> sig{{in, g->value(in)->type}};
  compiler::CompileOptions o2;
  o2.jit_level = compiler::JitLevel::O2;
  auto c = compiler::compile_executor(*g, *be, sig, o2);
  ASSERT_TRUE(c) << c.status().message();
  int max_pools = 0, avg_pools = 0, plain_pools = 0;
  for (const auto& n : (*c)->graph().nodes()) {
    if (n.op_type == "MaxPool" || n.op_type == "GlobalAveragePool") ++plain_pools;
    if (n.op_type != "FusedPool") continue;
    if (n.attr_string("pool", "") == "MaxPool") {
      ++max_pools;  // the stem conv writes blocked, the first block's convs read blocked
      EXPECT_EQ(n.attr_int("src_blocked", 0), 1);
      EXPECT_EQ(n.attr_int("dst_blocked", 0), 1);
    }
    if (n.attr_string("pool", "") == "GlobalAveragePool") {
      ++avg_pools;  // reads the last block blocked; Flatten reads its output
      EXPECT_EQ(n.attr_int("src_blocked", 0), 1);
      EXPECT_EQ(n.attr_int("dst_blocked", 0), 0);
    }
  }
  EXPECT_EQ(max_pools, 1);
  EXPECT_EQ(avg_pools, 1);
  EXPECT_EQ(plain_pools, 0);
  // The stem conv now writes its output blocked (read only by the pool).
  for (const auto& n : (*c)->graph().nodes()) {
    if (n.name != "conv1") continue;
    EXPECT_EQ(n.attr_int("dst_blocked", 0), 1);
  }

  const runtime::TensorMap inputs = random_inputs(*g);
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

// Kernel scratch (reorders at region boundaries, oneDNN scratchpads) is learned on the first run and
// planned in the arena from the second on: then the only memory outside the arena is the output.
TEST(CompilerPoolLayout, ScratchMovesIntoTheArena) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(1);
  const std::string in = g->inputs[0];
  compiler::CompileOptions o2;
  o2.jit_level = compiler::JitLevel::O2;
  auto c = compiler::compile_executor(*g, *be, {{in, g->value(in)->type}}, o2);
  ASSERT_TRUE(c) << c.status().message();
  const runtime::TensorMap inputs = random_inputs(*g);
  auto first = (*c)->run(inputs);
  ASSERT_TRUE(first) << first.status().message();
  const uint64_t arena_before = (*c)->memory_plan().arena_bytes;
  auto second = (*c)->run(inputs);
  ASSERT_TRUE(second) << second.status().message();
  const auto& plan = (*c)->memory_plan();
  int scratch_slots = 0;
  for (const auto& s : plan.slots) {
    if (s.value.size() < 8 || s.value.compare(s.value.size() - 8, 8, " scratch") != 0) continue;
    ++scratch_slots;
    EXPECT_LE(s.last_step - s.first_step, 0) << s.value << ": scratch lives during its step only";
  }
  EXPECT_GT(scratch_slots, 0);
  EXPECT_GE(plan.arena_bytes, arena_before);
  EXPECT_GE(plan.arena_bytes, plan.lower_bound);
  // Outside the arena: the graph output (5 floats, one 64-byte size class).
  EXPECT_LE((*c)->last_stats().peak_bytes, plan.arena_bytes + 64);
  const Tensor& a = (*first)[0];
  const Tensor& b = (*second)[0];
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << "scratch in the arena changes no result";
  const uint64_t arena_after = plan.arena_bytes;
  auto third = (*c)->run(inputs);  // the plan is final after the second run
  ASSERT_TRUE(third) << third.status().message();
  EXPECT_EQ((*c)->memory_plan().arena_bytes, arena_after);
}

TEST(CompilerPoolLayout, LonePoolStaysPlain) {
  ir::Graph g;
  g.name = "pool";
  g.inputs = {"x"};
  g.add_value(
      ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{1, 16, 8, 8}, {"", "", "", ""}}, {}, std::nullopt});
  ir::Node n;
  n.op_type = "MaxPool";
  n.name = "pool";
  n.inputs = {"x"};
  n.outputs = {"y"};
  n.attrs["kernel_shape"] = ir::Attribute(std::vector<int64_t>{2, 2});
  n.attrs["strides"] = ir::Attribute(std::vector<int64_t>{2, 2});
  g.add_node(n);
  g.outputs = {"y"};
  auto be = backends::create_cpu_backend(1);
  compiler::CompileOptions o2;
  o2.jit_level = compiler::JitLevel::O2;
  auto c = compiler::compile_executor(g, *be, {{"x", g.value("x")->type}}, o2);
  ASSERT_TRUE(c) << c.status().message();
  ASSERT_EQ((*c)->graph().nodes().size(), 1u);
  EXPECT_EQ((*c)->graph().nodes()[0].op_type, "MaxPool");
  EXPECT_TRUE((*c)->graph().nodes()[0].domain.empty());
  EXPECT_EQ((*c)->graph().nodes()[0].attrs.count("pool"), 0u);
}

}  // namespace
}  // namespace ms
