// PassManager and its instrumentations: order, disable, stop-after, verifier, timing, snapshots only
// on change; graph diff by NodeId and origins.
#include <gtest/gtest.h>

#include "engine/backends/select.h"
#include "engine/compiler/diff.h"
#include "engine/compiler/instrumentations.h"
#include "engine/compiler/pipeline.h"
#include "engine/compiler/rewrite.h"
#include "tests/engine/compiler_test_util.h"

namespace ms::compiler {
namespace {

// Appends its argument to a log; optionally renames the graph (a change the fingerprint sees).
class LogPass final : public Pass {
 public:
  LogPass(std::string arg, std::vector<std::string>* log, bool change)
      : arg_(std::move(arg)), log_(log), change_(change) {}
  std::string name() const override { return "Log" + arg_; }
  std::string argument() const override { return arg_; }
  std::string description() const override { return "test"; }
  Status run(ir::Graph& g) override {
    log_->push_back(arg_);
    if (change_) g.name += arg_;
    return Status::ok();
  }

 private:
  std::string arg_;
  std::vector<std::string>* log_;
  bool change_;
};

// Reads a value nobody defines: the verifier must catch it.
class BreakPass final : public Pass {
 public:
  std::string name() const override { return "Break"; }
  std::string argument() const override { return "break"; }
  std::string description() const override { return "test"; }
  Status run(ir::Graph& g) override {
    ir::Node n;
    n.op_type = "Relu";
    n.inputs = {"nowhere"};
    n.outputs = {"broken"};
    g.add_node(n);
    return Status::ok();
  }
};

ir::Graph tiny() {
  return testing::parse_graph(R"(
    input x: f32[2]
    y = Relu(x)
    output y
  )");
}

TEST(PassManager, RunsInOrderAndSkipsDisabledAndStopsAfterN) {
  std::vector<std::string> log;
  PassManager pm;
  for (const char* a : {"a", "b", "c", "d"}) pm.add(std::make_unique<LogPass>(a, &log, true));
  DisablePasses disable({"b"});
  StopAfter stop(3);
  pm.add_instrumentation(&disable);
  pm.add_instrumentation(&stop);
  ir::Graph g = tiny();
  ASSERT_TRUE(pm.run(g).is_ok());
  EXPECT_EQ(log, (std::vector<std::string>{"a", "c"}));
}

TEST(PassManager, SnapshotsOnlyWhenTheFingerprintChanges) {
  std::vector<std::string> log;
  PassManager pm;
  pm.add(std::make_unique<LogPass>("same", &log, false));
  pm.add(std::make_unique<LogPass>("renamed", &log, true));
  pm.add(std::make_unique<LogPass>("skipped", &log, true));
  DisablePasses disable({"skipped"});
  SnapshotAfterEachPass snaps;
  PassTiming timing;
  pm.add_instrumentation(&disable);
  pm.add_instrumentation(&snaps);
  pm.add_instrumentation(&timing);
  ir::Graph g = tiny();
  ASSERT_TRUE(pm.run(g).is_ok());
  const auto& s = snaps.snapshots();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].pass, "input");
  EXPECT_FALSE(s[1].changed);
  EXPECT_EQ(s[1].graph, s[0].graph) << "an unchanged pass shares the previous snapshot";
  EXPECT_TRUE(s[2].changed);
  EXPECT_NE(s[2].graph, s[1].graph);
  EXPECT_EQ(s[2].graph->name, "renamed");
  EXPECT_FALSE(s[3].ran);
  EXPECT_GE(timing.ms(0), 0);
  EXPECT_LT(timing.ms(2), 0) << "skipped passes are not timed";
  // Snapshots are copies: later edits do not reach them.
  g.name = "edited";
  EXPECT_EQ(s[2].graph->name, "renamed");
}

TEST(PassManager, VerifierNamesThePassThatBrokeTheGraph) {
  PassManager pm;
  pm.add(std::make_unique<BreakPass>());
  VerifyAfterEachPass verify;
  pm.add_instrumentation(&verify);
  ir::Graph g = tiny();
  Status st = pm.run(g);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("break"), std::string::npos) << st.message();
}

TEST(GraphDiff, AddedRemovedRewrittenAndFusedFrom) {
  ir::Graph before = testing::parse_graph(R"(
    input x: f32[4]
    a = Relu(x)
    b = Sigmoid(a)
    c = Neg(b)
    d = Abs(x)
    output c, d
  )");
  ir::Graph after = before.deep_copy();
  const auto ids = [&] {
    std::vector<const ir::Node*> v;
    for (const auto& n : after.nodes()) v.push_back(&n);
    return v;
  }();
  const uint64_t relu = ids[0]->id.value, sigm = ids[1]->id.value, neg = ids[2]->id.value, abs = ids[3]->id.value;
  // Relu+Sigmoid fused; Neg rewritten (attribute); Abs removed; a new Exp added.
  ir::Node f = new_node(after, "FusedElementwise", "ai.modescope", {"x"}, {"b"}, {ids[0], ids[1]});
  const uint64_t fused = f.id.value;
  replace_nodes(after, {relu, sigm}, f);
  after.find_node(ir::NodeId{neg})->attrs["note"] = ir::Attribute(int64_t{1});
  erase_nodes(after, {abs});
  ir::Node e = new_node(after, "Exp", "", {"x"}, {"d"}, {});
  const uint64_t exp = e.id.value;
  insert_node(after, after.nodes().size(), e);

  const GraphDiff d = diff_graphs(before, after);
  EXPECT_EQ(d.added, (std::vector<ir::NodeId>{ir::NodeId{exp}}));
  EXPECT_EQ(d.removed, (std::vector<ir::NodeId>{ir::NodeId{abs}}));
  EXPECT_EQ(d.rewritten, (std::vector<ir::NodeId>{ir::NodeId{neg}}));
  ASSERT_EQ(d.fused.size(), 1u);
  EXPECT_EQ(d.fused[0].node.value, fused);
  EXPECT_EQ(d.fused[0].from, (std::vector<ir::NodeId>{ir::NodeId{relu}, ir::NodeId{sigm}}));
  EXPECT_NE(diff_to_json(d).find("\"fused\":[{\"node\":" + std::to_string(fused)), std::string::npos);
}

TEST(Pipeline, LevelsListTheirPassesAndMemoryPlanning) {
  const auto o0 = describe_pipeline(JitLevel::O0);
  const auto o1 = describe_pipeline(JitLevel::O1);
  const auto o2 = describe_pipeline(JitLevel::O2);
  ASSERT_FALSE(o0.empty());
  EXPECT_EQ(o0.front().argument, "infer-types");
  EXPECT_EQ(o0.back().argument, "plan-memory");
  EXPECT_GT(o1.size(), o0.size());
  EXPECT_GT(o2.size(), o1.size());
  EXPECT_EQ(o2.back().argument, "branch-schedule");
  EXPECT_TRUE(parse_jit_level("O2").has_value());
  EXPECT_FALSE(parse_jit_level("O3").has_value());
}

// A backend that says it is a CUDA device (nothing runs on it): what the pipeline leaves out there.
// `chains`: it says it runs FusedElementwise chains.
class DeviceLikeBackend final : public runtime::Backend {
 public:
  explicit DeviceLikeBackend(bool chains = false) : chains_(chains) {}
  std::string name() const override { return "device-like"; }
  Device device() const override { return {DeviceType::CUDA, 0}; }
  bool runs_fused_elementwise() const override { return chains_; }
  runtime::Allocator& allocator() override { return cpu_->allocator(); }
  runtime::Allocator& arena_allocator() override { return cpu_->arena_allocator(); }
  runtime::KernelFn find_kernel(const ir::Node& n) const override { return cpu_->find_kernel(n); }
  void set_threads(int) override {}
  int threads() const override { return 1; }
  Status copy_to_host(const Tensor& s, Tensor& d) override { return cpu_->copy_to_host(s, d); }
  Status copy_from_host(const Tensor& s, Tensor& d) override { return cpu_->copy_from_host(s, d); }

 private:
  bool chains_;
  std::unique_ptr<runtime::Backend> cpu_ = backends::create_cpu_backend(1);
};

std::vector<std::string> pass_arguments(const PassManager& pm) {
  std::vector<std::string> out;
  for (const auto& p : pm.passes()) out.push_back(p->argument());
  return out;
}

// On a device, fused elementwise loops (a CPU kernel) and oneDNN's blocked layouts are left out.
TEST(Pipeline, DevicePipelinesLeaveOutCpuOnlyPasses) {
  auto cpu = backends::create_cpu_backend(1);
  DeviceLikeBackend dev;
  const auto on_cpu = pass_arguments(build_pipeline(JitLevel::O2, cpu.get()));
  const auto on_dev = pass_arguments(build_pipeline(JitLevel::O2, &dev));
  auto has = [](const std::vector<std::string>& v, const std::string& a) {
    return std::find(v.begin(), v.end(), a) != v.end();
  };
  EXPECT_TRUE(has(on_cpu, "fuse-elementwise"));
  EXPECT_TRUE(has(on_cpu, "conv-layout"));
  EXPECT_FALSE(has(on_dev, "fuse-elementwise"));
  EXPECT_TRUE(has(on_cpu, "fuse-reduce"));
  EXPECT_FALSE(has(on_dev, "fuse-reduce"));
  EXPECT_FALSE(has(on_dev, "conv-layout"));
  EXPECT_TRUE(has(on_dev, "fuse-ops"));
  EXPECT_TRUE(has(on_dev, "channels-last"));
  EXPECT_FALSE(has(on_cpu, "channels-last"));
}

// A device whose backend runs FusedElementwise chains gets the fuse-elementwise pass (not the
// reducing chains, which have a CPU kernel only).
TEST(Pipeline, ADeviceThatRunsChainsGetsTheElementwiseFusion) {
  DeviceLikeBackend dev(/*chains=*/true);
  const auto on_dev = pass_arguments(build_pipeline(JitLevel::O2, &dev));
  EXPECT_NE(std::find(on_dev.begin(), on_dev.end(), "fuse-elementwise"), on_dev.end());
  EXPECT_EQ(std::find(on_dev.begin(), on_dev.end(), "fuse-reduce"), on_dev.end());
}

}  // namespace
}  // namespace ms::compiler
