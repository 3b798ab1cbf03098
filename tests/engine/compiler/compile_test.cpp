// compiler::compile: the compile product (stages, kernels, notes, executable), the knobs of
// CompileOptions, environment overrides read in one place, and executors sharing one executable.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/zoo/zoo.h"
#include "tests/engine/compiler_test_util.h"

namespace ms::compiler {
namespace {

const char* kChain = R"(
input x: f32[4,8]
init w: f32[8,8] = 0.5
init b: f32[8] = 0.25
m = MatMul(x, w)
a = Add(m, b)
r = Relu(a)
s = Sigmoid(r)
output s
)";

runtime::TensorMap inputs_for(const ir::Graph& g, float v = 0.3f) {
  runtime::TensorMap in;
  for (const auto& name : g.inputs) {
    const ir::ValueType t = g.value(name)->type;
    std::vector<float> values(static_cast<size_t>(numel(*t.dims)), v);
    in[name] = Tensor::from_vector<float>(values, *t.dims);
  }
  return in;
}

Signature signature_of(const ir::Graph& g) {
  Signature sig;
  for (const auto& name : g.inputs) sig[name] = g.value(name)->type;
  return sig;
}

TEST(Compile, ReportsEveryStageInOrderWithKernelsPerStep) {
  ir::Graph g = testing::parse_graph(kChain);
  auto be = backends::create_cpu_backend(1);
  auto c = compile(g, *be, signature_of(g));
  ASSERT_TRUE(c) << c.status().message();
  std::vector<std::string> stages;
  for (const auto& s : c->stages) stages.push_back(s.stage);
  EXPECT_EQ(stages, (std::vector<std::string>{"passes", "types", "kernels", "values", "schedule", "memory", "replay"}));
  ASSERT_TRUE(c->executable);
  EXPECT_EQ(c->kernels.size(), c->executable->program.steps.size());
  for (const auto& k : c->kernels) EXPECT_NE(k.find("-> cpu"), std::string::npos) << k;
  EXPECT_FALSE(c->passes.reports.empty());
  EXPECT_GT(c->compile_ms, 0.0);
  // Every step has its kernel; the plan covers the intermediates.
  for (const auto& s : c->executable->program.steps) EXPECT_NE(s.kernel, nullptr) << s.node->label();
  EXPECT_EQ(c->memory_plan().slots.size(), c->executable->value_slots.size());
}

TEST(Compile, ExecutorsShareOneExecutableAndAgree) {
  ir::Graph g = testing::parse_graph(kChain);
  auto be = backends::create_cpu_backend(1);
  auto c = compile(g, *be, signature_of(g));
  ASSERT_TRUE(c) << c.status().message();
  runtime::GraphExecutor a(c->executable, *be), b(c->executable, *be);
  const auto in = inputs_for(g);
  auto ra = a.run(in), rb = b.run(in), ra2 = a.run(in);
  ASSERT_TRUE(ra && rb && ra2) << (ra ? rb ? ra2.status().message() : rb.status().message() : ra.status().message());
  ASSERT_EQ((*ra)[0].numel(), (*rb)[0].numel());
  for (int64_t i = 0; i < (*ra)[0].numel(); ++i) {
    EXPECT_EQ((*ra)[0].data<float>()[i], (*rb)[0].data<float>()[i]);
    EXPECT_EQ((*ra)[0].data<float>()[i], (*ra2)[0].data<float>()[i]);
  }
  EXPECT_EQ(c->executable.use_count(), 3);  // the compile product and the two executors
}

TEST(Compile, EnvironmentOverridesAreReadInOnePlaceAndNoted) {
  ::setenv("MODESCOPE_CUDA_STREAMS", "4", 1);
  ::setenv("MODESCOPE_CUDA_GRAPHS", "0", 1);
  std::vector<std::string> notes;
  const CompileOptions o = with_environment(CompileOptions{}, &notes);
  ::unsetenv("MODESCOPE_CUDA_STREAMS");
  ::unsetenv("MODESCOPE_CUDA_GRAPHS");
  EXPECT_EQ(o.cuda_streams, 4);
  EXPECT_FALSE(o.cuda_graphs);
  ASSERT_EQ(notes.size(), 2u);
  const CompileOptions plain = with_environment(CompileOptions{});
  EXPECT_EQ(plain.cuda_streams, 1);
  EXPECT_TRUE(plain.cuda_graphs);
}

TEST(Compile, BranchThresholdsAreOptions) {
  auto g = zoo::build_graph("zoo:inception_block?size=16&width=32&classes=4");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(4);
  CompileOptions o;
  o.jit_level = JitLevel::O2;
  auto par = compile(*g, *be, signature_of(*g), o);
  ASSERT_TRUE(par) << par.status().message();
  std::set<int> threads(par->executable->step_threads.begin(), par->executable->step_threads.end());
  EXPECT_GE(threads.size(), 2u);
  // Asking each branch for more threads than the backend has keeps the graph sequential.
  o.branch_min_threads = 8;
  auto seq = compile(*g, *be, signature_of(*g), o);
  ASSERT_TRUE(seq) << seq.status().message();
  for (int t : seq->executable->step_threads) EXPECT_EQ(t, 0);
  // Every step alone on one thread when the parallel-region threshold is huge.
  o.parallel_step_min_cost = 1e30;
  auto one = compile(*g, *be, signature_of(*g), o);
  ASSERT_TRUE(one) << one.status().message();
  for (char s : one->executable->single) EXPECT_TRUE(s);
}

TEST(Compile, ScratchBudgetFollowsItsMargin) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=4&width=16");
  ASSERT_TRUE(g) << g.status().message();
  auto be = backends::create_cpu_backend(1);
  CompileOptions o;
  o.jit_level = JitLevel::O2;
  auto by_default = compile(*g, *be, signature_of(*g), o);  // at least 8 MiB beyond the bound
  o.scratch_min_room = 0;
  o.scratch_over_lower_bound = 0;
  auto tight = compile(*g, *be, signature_of(*g), o);
  o.scratch_over_lower_bound = 1.0;
  auto roomy = compile(*g, *be, signature_of(*g), o);
  ASSERT_TRUE(tight && roomy && by_default);
  const auto& x = *tight->executable;
  for (size_t si = 0; si < x.scratch_budget.size(); ++si) {
    const uint64_t live = si < x.plan.live.size() ? x.plan.live[si] : 0;
    EXPECT_LE(x.scratch_budget[si], x.plan.lower_bound - std::min(live, x.plan.lower_bound)) << si;
    EXPECT_GE(roomy->executable->scratch_budget[si], x.scratch_budget[si] + x.plan.lower_bound / 2) << si;
    EXPECT_GE(by_default->executable->scratch_budget[si], CompileOptions{}.scratch_min_room) << si;
  }
}

TEST(Compile, MissingKernelsAreReportedTogether) {
  ir::Graph g = testing::parse_graph(R"(
input x: f32[2,3]
y = NoSuchOpA(x)
z = NoSuchOpB(y)
output z
)");
  auto be = backends::create_cpu_backend(1);
  auto c = compile(g, *be, signature_of(g));
  ASSERT_FALSE(c);
  EXPECT_NE(c.status().message().find("NoSuchOpA"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace ms::compiler
