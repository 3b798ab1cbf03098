// The last training step observed op by op (nn::train::RunOptions::observe_last_step): in PyNative
// every eager op of the step (forward, backward, optimizer update) becomes an op with its kernel and
// its output blocks; in Graph mode the compiled step's run, with the arena from its memory plan.
#include <gtest/gtest.h>

#include <set>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/train/run.h"
#include "profiler/record/profiling_session.h"

namespace ms::prof {
namespace {

size_t count_events_of_kind(const Trace& t, EventKind k) {
  size_t n = 0;
  for (const Event& e : t.events) n += e.kind == k;
  return n;
}

struct Observed {
  nn::train::RunResult result;
  TracePtr trace;
};

// Three Adam steps of the digits MLP in one mode, the last one observed, and its trace.
Expected<Observed> observe_last_step(nn::Mode mode) {
  nn::train::RunOptions o;
  o.model = "zoo:mnist_mlp";
  o.data = "digits";
  o.mode = mode;
  o.steps = 3;
  o.batch = 16;
  o.optimizer = "adam";
  o.evaluate = false;
  ProfilingSession session(nn::backend());
  o.observe_last_step = &session.observer_for_one_run();
  auto r = nn::train::run_training(o);
  if (!r) return r.status();
  if (!r->observed_graph) return internal_error("no observed graph");
  Observed out{std::move(*r), nullptr};
  const runtime::MemoryPlan* plan = out.result.observed_plan ? &*out.result.observed_plan : nullptr;
  BuildContext ctx;
  ctx.graph = &*out.result.observed_graph;
  ctx.plan = plan;
  ctx.metadata["mode"] = mode == nn::Mode::Graph ? "graph" : "pynative";
  out.trace = session.build(std::move(ctx));
  return out;
}

TEST(TrainStepTrace, PyNativeStepHasEveryEagerOpWithKernelAndBlocks) {
  auto ob = observe_last_step(nn::Mode::PyNative);
  ASSERT_TRUE(ob.has_value()) << ob.status().message();
  EXPECT_FALSE(ob->result.observed_plan.has_value());
  const ir::Graph& g = *ob->result.observed_graph;
  // Forward, backward and Adam's update: far more ops than the three Gemms of the forward.
  ASSERT_GT(g.nodes().size(), 30u);
  const Trace& t = *ob->trace;
  EXPECT_EQ(count_events_of_kind(t, EventKind::Run), 1u);
  EXPECT_EQ(count_events_of_kind(t, EventKind::Op), g.nodes().size());
  EXPECT_EQ(count_events_of_kind(t, EventKind::Kernel), g.nodes().size());
  std::set<std::string> ops;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::Op) continue;
    const NodeInfo* n = t.node_of(e);
    ASSERT_NE(n, nullptr);
    ops.insert(n->op);
  }
  EXPECT_TRUE(ops.count("Gemm") || ops.count("MatMul")) << "no matrix product among the step's ops";
  EXPECT_GT(ops.size(), 5u);
  EXPECT_GT(t.blocks.size(), 10u);  // the step's eager values, from the caching allocator
  for (const MemoryBlock& b : t.blocks) EXPECT_FALSE(b.arena);
  EXPECT_EQ(t.dropped_events, 0u);
}

TEST(TrainStepTrace, GraphStepIsTheCompiledRunWithItsArena) {
  auto ob = observe_last_step(nn::Mode::Graph);
  ASSERT_TRUE(ob.has_value()) << ob.status().message();
  ASSERT_TRUE(ob->result.observed_plan.has_value());
  const Trace& t = *ob->trace;
  EXPECT_EQ(count_events_of_kind(t, EventKind::Run), 1u);
  EXPECT_GT(count_events_of_kind(t, EventKind::Op), 10u);
  size_t arena = 0;
  for (const MemoryBlock& b : t.blocks) arena += b.arena;
  EXPECT_GT(arena, 0u);
  // Backward nodes keep their "grad." names in the compiled step.
  bool backward = false;
  for (const Event& e : t.events)
    if (e.kind == EventKind::Op)
      if (const NodeInfo* n = t.node_of(e)) backward = backward || n->name.rfind("grad.", 0) == 0;
  EXPECT_TRUE(backward);
}

}  // namespace
}  // namespace ms::prof
