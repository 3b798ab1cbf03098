// Issue 24: fallbacks counted per op and reason (runtime/fallback.h) and reported by the compile;
// a compile and a training run that stop at their cancel predicate; a failed allocation that says
// how much was asked for and for what.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/core/alloc_error.h"
#include "engine/frontend/train/run.h"
#include "engine/runtime/fallback.h"
#include "tests/engine/compiler_test_util.h"
#include "tests/engine/train_test_util.h"

namespace ms::runtime {
namespace {

const char* kChain = R"(
input x: f32[4,8]
r = Relu(x)
s = Sigmoid(r)
t = Relu(s)
output t
)";

// The CPU backend, except that Relu counts as its "CPU fallback" (as a device backend reports an op
// it has no kernel for).
class ReluFallsBack final : public Backend {
 public:
  ReluFallsBack() : cpu_(backends::create_cpu_backend(1)) {}
  std::string name() const override { return "fake"; }
  Device device() const override { return cpu_->device(); }
  Allocator& allocator() override { return cpu_->allocator(); }
  Allocator& arena_allocator() override { return cpu_->arena_allocator(); }
  KernelFn find_kernel(const ir::Node& node) const override { return cpu_->find_kernel(node); }
  bool is_fallback(KernelFn fn) const override {
    ir::Node relu;
    relu.op_type = "Relu";
    return fn == cpu_->find_kernel(relu);
  }
  void set_threads(int n) override { cpu_->set_threads(n); }
  int threads() const override { return cpu_->threads(); }
  Status copy_to_host(const Tensor& src, Tensor& dst) override { return cpu_->copy_to_host(src, dst); }
  Status copy_from_host(const Tensor& src, Tensor& dst) override { return cpu_->copy_from_host(src, dst); }

 private:
  std::unique_ptr<Backend> cpu_;
};

compiler::Signature signature_of(const ir::Graph& g) {
  compiler::Signature sig;
  for (const auto& name : g.inputs) sig[name] = g.value(name)->type;
  return sig;
}

TEST(Fallbacks, CountsEachNodeOncePerOpAndReason) {
  FallbackLog log;
  log.add(1, "Where", "no cuda kernel: runs on the CPU");
  log.add(1, "Where", "no cuda kernel: runs on the CPU");  // the same node again (another iteration)
  log.add(2, "Where", "no cuda kernel: runs on the CPU");
  log.add(3, "Add", "case the cuda kernel does not cover (inputs f16): runs on the CPU");
  const auto list = log.list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(describe_fallbacks(list),
            "Add x1 (case the cuda kernel does not cover (inputs f16): runs on the CPU); Where x2 (no cuda kernel: "
            "runs on the CPU)");
  std::vector<Fallback> merged = list;
  merge_fallbacks(merged, list);
  EXPECT_EQ(merged[1].count, 4);
  merge_fallbacks(merged, list, /*sum=*/false);
  EXPECT_EQ(merged[1].count, 4);
}

TEST(Fallbacks, ListNamesTheNodesAndMergeUnitesThem) {
  FallbackLog log;
  log.add(9, "Where", "no cuda kernel: runs on the CPU");
  log.add(4, "Where", "no cuda kernel: runs on the CPU");
  log.add(9, "Where", "no cuda kernel: runs on the CPU");  // another iteration of node 9
  log.add(5, "Add", "no cuda kernel: runs on the CPU");
  log.add(Fallback{"*", 1, "no CUDA device"});  // counted, no nodes
  const auto list = log.list();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].op, "*");
  EXPECT_TRUE(list[0].nodes.empty());
  EXPECT_EQ(list[1].op, "Add");
  EXPECT_EQ(list[1].nodes, (std::vector<uint64_t>{5}));
  EXPECT_EQ(list[2].op, "Where");
  EXPECT_EQ(list[2].nodes, (std::vector<uint64_t>{4, 9}));  // sorted, each once
  EXPECT_EQ(list[2].count, 2);

  // The same model seen by two runs: one more node in the second; the union, counted once each.
  std::vector<Fallback> merged = {list[2]};
  merge_fallbacks(merged, {Fallback{"Where", 2, "no cuda kernel: runs on the CPU", {4, 11}}}, /*sum=*/false);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].nodes, (std::vector<uint64_t>{4, 9, 11}));
  EXPECT_EQ(merged[0].count, 3);
  // An entry without nodes (an old report) keeps the nodes already known.
  merge_fallbacks(merged, {Fallback{"Where", 1, "no cuda kernel: runs on the CPU"}});
  EXPECT_EQ(merged[0].nodes, (std::vector<uint64_t>{4, 9, 11}));
  EXPECT_EQ(merged[0].count, 4);
  // Adding an entry with nodes to a log counts the nodes once, with those it had.
  log.add(Fallback{"Where", 2, "no cuda kernel: runs on the CPU", {4, 7}});
  EXPECT_EQ(log.list()[2].nodes, (std::vector<uint64_t>{4, 7, 9}));
  EXPECT_EQ(log.list()[2].count, 3);
}

TEST(Fallbacks, NoteFallbackGoesToTheInnermostScopeOnThisThread) {
  ir::Node n;
  n.op_type = "Sin";
  n.id = ir::NodeId{7};
  note_fallback(n, "unscoped");  // nobody listening: dropped
  FallbackLog outer, inner;
  {
    FallbackScope a(outer);
    {
      FallbackScope b(inner);
      note_fallback(n, "inner");
    }
    note_fallback(n, "outer");
  }
  ASSERT_EQ(inner.list().size(), 1u);
  EXPECT_EQ(inner.list()[0].reason, "inner");
  EXPECT_EQ(inner.list()[0].nodes, std::vector<uint64_t>{7});
  ASSERT_EQ(outer.list().size(), 1u);
  EXPECT_EQ(outer.list()[0].reason, "outer");
}

TEST(Fallbacks, CompileListsTheOpsTheBackendRunsThroughItsCpuFallback) {
  ir::Graph g = testing::parse_graph(kChain);
  ReluFallsBack be;
  FallbackLog log;
  find_fallbacks(g, be, log);
  ASSERT_EQ(log.list().size(), 1u);
  EXPECT_EQ(log.list()[0].op, "Relu");
  EXPECT_EQ(log.list()[0].count, 2);
  EXPECT_EQ(log.list()[0].reason, "no fake kernel: runs on the CPU");
  std::vector<uint64_t> relus;  // the Relu nodes, not the Sigmoid
  for (const ir::Node& n : g.nodes())
    if (n.op_type == "Relu") relus.push_back(n.id.value);
  ASSERT_EQ(relus.size(), 2u);
  std::sort(relus.begin(), relus.end());
  EXPECT_EQ(log.list()[0].nodes, relus);

  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O0;  // no fusion: both Relus stay steps
  auto c = compiler::compile(g, be, signature_of(g), o);
  ASSERT_TRUE(c) << c.status().message();
  ASSERT_EQ(c->fallbacks.size(), 1u);
  EXPECT_EQ(c->fallbacks[0].op, "Relu");
  EXPECT_EQ(c->fallbacks[0].count, 2);
  std::vector<uint64_t> compiled_relus;  // the compiled graph's Relu nodes
  for (const ir::Node& n : c->graph().nodes())
    if (n.op_type == "Relu") compiled_relus.push_back(n.id.value);
  std::sort(compiled_relus.begin(), compiled_relus.end());
  EXPECT_EQ(c->fallbacks[0].nodes, compiled_relus);
  bool noted = false;
  for (const auto& n : c->notes) noted = noted || n.find("Relu x2") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(CompileCancel, StopsBetweenPassesWithCancelled) {
  ir::Graph g = testing::parse_graph(kChain);
  auto be = backends::create_cpu_backend(1);
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  std::atomic<int> polls{0};
  o.cancelled = [&polls] { return ++polls > 2; };  // cancelled after the second pass has started
  auto c = compiler::compile(g, *be, signature_of(g), o);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), ErrorCode::Cancelled) << c.status().message();
  EXPECT_NE(c.status().message().find("cancelled"), std::string::npos);
  o.cancelled = [] { return false; };
  EXPECT_TRUE(compiler::compile(g, *be, signature_of(g), o));
}

TEST(TrainCancel, StopsBetweenStepsWithCancelled) {
  const nn::Context saved = nn::get_context();
  nn::set_context(nn::Context{nn::Mode::PyNative, "cpu", 1});
  nn::train::RunOptions o = nn::train::testing::digits_mlp(nn::Mode::PyNative, 50);
  o.evaluate = false;
  int64_t steps_done = 0;
  std::atomic<bool> cancel{false};
  o.cancelled = [&cancel] { return cancel.load(); };
  auto r = nn::train::run_training(o, [&](int64_t step, double, double) {
    steps_done = step;
    if (step == 3) cancel = true;
  });
  nn::set_context(saved);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), ErrorCode::Cancelled);
  EXPECT_EQ(steps_done, 3);
  EXPECT_NE(r.status().message().find("before step 4"), std::string::npos) << r.status().message();
}

TEST(AllocationFailed, SaysHowMuchWasAskedForAndForWhat) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan aborts on an impossible allocation instead of returning null";
#else
  try {
    Tensor t = Tensor::empty(DType::F32, Shape{1, 3, int64_t{1} << 22, int64_t{1} << 22});
    FAIL() << "allocated " << t.nbytes() << " bytes";
  } catch (const std::bad_alloc& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("out of memory: 192.00 TiB"), std::string::npos) << what;
    EXPECT_NE(what.find("f32 [1,3,4194304,4194304] tensor"), std::string::npos) << what;
  }
#endif
}

}  // namespace
}  // namespace ms::runtime
