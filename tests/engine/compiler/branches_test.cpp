// Concurrent branches at O2: the executor runs the scheduled branches on several CPU threads, the
// outputs equal a sequential run's bit for bit (run after run), values that may be live at the same
// time never share arena bytes, and a chain stays on one thread.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/zoo/zoo.h"
#include "engine/runtime/executor.h"

namespace ms {
namespace {

runtime::TensorMap random_inputs(const ir::Graph& g, uint32_t seed) {
  const std::string in = g.inputs[0];
  const ir::ValueType t = g.value(in)->type;
  std::vector<float> x(static_cast<size_t>(numel(*t.dims)));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : x) v = u(rng);
  return {{in, Tensor::from_vector<float>(x, *t.dims)}};
}

std::unique_ptr<compiler::CompiledExecutor> compile(const ir::Graph& g, runtime::Backend& be, bool parallel) {
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  o.parallel_branches = parallel;
  const std::string in = g.inputs[0];
  auto c = compiler::compile_executor(g, be, {{in, g.value(in)->type}}, o);
  EXPECT_TRUE(c) << c.status().message();
  return c ? std::move(*c) : nullptr;
}

TEST(CompilerBranches, InceptionBranchesRunConcurrentlyWithSequentialResults) {
  auto g = zoo::build_graph("zoo:inception_block?size=16&width=32&classes=4");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(4);
  auto par = compile(*g, *be, true);
  auto seq = compile(*g, *be, false);
  ASSERT_TRUE(par && seq);
  std::set<int> threads(par->step_threads().begin(), par->step_threads().end());
  EXPECT_GE(threads.size(), 2u) << "the four inception branches should be spread over several threads";
  for (int t : seq->step_threads()) EXPECT_EQ(t, 0);

  // Blocks of values that may be live together never overlap: with concurrency the planner widens
  // each value's interval, so overlapping bytes need disjoint (widened) intervals.
  const auto& slots = par->memory_plan().slots;
  for (size_t a = 0; a < slots.size(); ++a)
    for (size_t b = a + 1; b < slots.size(); ++b) {
      const bool bytes =
          slots[a].offset < slots[b].offset + slots[b].bytes && slots[b].offset < slots[a].offset + slots[a].bytes;
      const bool time = !(slots[a].last_step < slots[b].first_step || slots[b].last_step < slots[a].first_step);
      // Sharing is allowed in place (one takes over the other's block) and for a Concat's input
      // written straight into its output.
      const bool inside = slots[a].within == static_cast<int>(b) || slots[b].within == static_cast<int>(a);
      if (bytes && time) {
        EXPECT_TRUE(!slots[b].reuses.empty() || !slots[a].reuses.empty() || inside)
            << slots[a].value << " and " << slots[b].value << " share bytes while both may be live";
      }
      if (inside) {  // the input lies within the output's bytes
        const auto& in = slots[a].within == static_cast<int>(b) ? slots[a] : slots[b];
        const auto& out = slots[a].within == static_cast<int>(b) ? slots[b] : slots[a];
        EXPECT_EQ(in.offset, out.offset + in.within_offset);
        EXPECT_LE(in.within_offset + in.bytes, out.bytes);
      }
    }

  for (uint32_t it = 0; it < 8; ++it) {
    const auto inputs = random_inputs(*g, 11 + it);
    auto want = seq->run(inputs);
    ASSERT_TRUE(want) << want.status().message();
    auto got = par->run(inputs);
    ASSERT_TRUE(got) << got.status().message();
    ASSERT_EQ(want->size(), got->size());
    for (size_t i = 0; i < want->size(); ++i) {
      ASSERT_EQ((*want)[i].nbytes(), (*got)[i].nbytes());
      EXPECT_EQ(std::memcmp((*want)[i].raw(), (*got)[i].raw(), (*want)[i].nbytes()), 0)
          << "output " << i << " run " << it;
    }
    EXPECT_EQ(par->last_stats().kernels, seq->last_stats().kernels);
  }
}

TEST(CompilerBranches, TwoThreadsKeepBranchesInOrder) {
  // Each concurrent branch needs two threads of its own: with two, Inception runs its branches in order.
  auto g = zoo::build_graph("zoo:inception_block?size=16&width=32&classes=4");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(2);
  auto par = compile(*g, *be, true);
  ASSERT_TRUE(par);
  for (int t : par->step_threads()) EXPECT_EQ(t, 0);
}

TEST(CompilerBranches, ChainStaysOnOneThread) {
  auto g = zoo::build_graph("zoo:mnist_mlp?batch=1");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(4);
  auto par = compile(*g, *be, true);
  ASSERT_TRUE(par);
  for (int t : par->step_threads()) EXPECT_EQ(t, 0);
  auto r = par->run(random_inputs(*g, 1));
  ASSERT_TRUE(r) << r.status().message();
}

}  // namespace
}  // namespace ms
