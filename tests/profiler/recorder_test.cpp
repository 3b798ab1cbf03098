#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "engine/compiler/options.h"
#include "profiler/record/recorder.h"
#include "test_util.h"

namespace ms::prof {
namespace {

using test::record;

size_t count_kind(const Trace& t, EventKind k) {
  size_t n = 0;
  for (const Event& e : t.events) n += e.kind == k;
  return n;
}

TEST(Recorder, EagerRunGivesOpsKernelsFlowsAndMemory) {
  TracePtr t = record(runtime::ExecMode::PyNative, 2);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->meta("mode"), "pynative");
  EXPECT_EQ(t->meta("iterations"), "2");
  EXPECT_EQ(count_kind(*t, EventKind::Run), 2u);
  EXPECT_EQ(count_kind(*t, EventKind::Op), 8u);
  EXPECT_EQ(count_kind(*t, EventKind::Kernel), 8u);
  EXPECT_EQ(t->flows.size(), 8u);
  for (const Flow& f : t->flows) {
    const Event& op = t->events[f.from];
    const Event& k = t->events[f.to];
    EXPECT_EQ(op.kind, EventKind::Op);
    EXPECT_EQ(k.kind, EventKind::Kernel);
    EXPECT_EQ(op.node, k.node);
    EXPECT_GE(k.ts_ns, op.ts_ns);
    EXPECT_LE(k.end_ns(), op.end_ns());
  }
  for (const Event& e : t->events) {
    if (e.kind != EventKind::Op) continue;
    const NodeInfo* n = t->node_of(e);
    ASSERT_NE(n, nullptr);
    EXPECT_NE(n->shapes.find("f32[2,8]"), std::string::npos) << n->shapes;
    EXPECT_EQ(n->origins, std::vector<uint64_t>{n->id});
    EXPECT_GT(n->bytes, 0);
    EXPECT_EQ(t->str(e.name), n->op);
  }
  // Eager outputs come from the caching allocator: every intermediate is a block, freed after use.
  ASSERT_GE(t->blocks.size(), 6u);
  size_t freed = 0;
  for (const MemoryBlock& b : t->blocks) {
    EXPECT_FALSE(b.arena);
    EXPECT_GT(b.bytes, 0u);
    freed += b.free_ns >= b.alloc_ns;
  }
  EXPECT_GE(freed, 6u);
  EXPECT_FALSE(t->counters.empty());
  EXPECT_EQ(t->dropped_events, 0u);
}

TEST(Recorder, GraphRunTakesArenaBlocksFromThePlan) {
  // O0: no fusion, so the intermediates t0..t2 live in the arena.
  TracePtr t = record(runtime::ExecMode::Graph, 2, compiler::JitLevel::O0);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->meta("mode"), "graph");
  EXPECT_FALSE(t->meta("compile_ms").empty());
  EXPECT_GT(t->meta_number("arena_bytes"), 0);
  size_t arena = 0;
  for (const MemoryBlock& b : t->blocks) {
    if (!b.arena) continue;
    ++arena;
    EXPECT_GE(b.free_ns, b.alloc_ns);
    EXPECT_LT(b.address, static_cast<uint64_t>(t->meta_number("arena_bytes")));
  }
  EXPECT_GE(arena, 2u);  // t0, t1, t2 per iteration (the planner may share slots)
  EXPECT_EQ(count_kind(*t, EventKind::Run), 2u);
  EXPECT_GE(count_kind(*t, EventKind::Kernel), 2u);
}

TEST(Recorder, GraphOpsCarryTheOriginsOfTheNodesTheyReplace) {
  TracePtr eager = record(runtime::ExecMode::PyNative, 1);
  TracePtr graph = record(runtime::ExecMode::Graph, 1);
  ASSERT_TRUE(eager && graph);
  std::set<uint64_t> eager_ids, covered;
  for (const Event& e : eager->events)
    if (e.kind == EventKind::Op) eager_ids.insert(eager->node_of(e)->id);
  for (const Event& e : graph->events)
    if (e.kind == EventKind::Op)
      for (uint64_t o : graph->node_of(e)->origins) covered.insert(o);
  // Passes may remove nodes (Add of zeros) but never invent origins.
  EXPECT_FALSE(covered.empty());
  for (uint64_t o : covered) EXPECT_TRUE(eager_ids.count(o)) << o;
}

TEST(Recorder, EachThreadRecordsIntoItsOwnTrack) {
  ir::Graph g = test::small_net();
  const ir::Node& node = g.nodes()[1];
  Recorder rec;
  auto work = [&] {
    for (int i = 0; i < 1000; ++i) {
      rec.on_op_begin(node);
      rec.on_op_end(node);
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_EQ(rec.recorded(), 4000u);
  BuildContext ctx;
  ctx.graph = &g;
  TracePtr t = rec.build(ctx);
  std::map<uint32_t, int> per_track;
  for (const Event& e : t->events) ++per_track[e.track];
  ASSERT_EQ(per_track.size(), 2u);
  for (const auto& [track, n] : per_track) {
    EXPECT_EQ(n, 1000);
    EXPECT_EQ(t->tracks[track].kind, TrackKind::HostThread);
  }
}

TEST(Recorder, CountsWhatDoesNotFitAndStillBuilds) {
  ir::Graph g = test::small_net();
  RecorderOptions o;
  o.chunk_events = 64;
  o.preallocated_chunks = 1;
  o.max_events = 128;
  Recorder rec(o);
  for (int i = 0; i < 500; ++i) {
    rec.on_op_begin(g.nodes()[0]);
    rec.on_op_end(g.nodes()[0]);
  }
  EXPECT_GT(rec.dropped(), 0u);
  EXPECT_LE(rec.recorded(), 128u);
  TracePtr t = rec.build({&g, nullptr, {}});
  EXPECT_EQ(t->dropped_events, rec.dropped());
  EXPECT_LE(t->events.size(), 64u);
}

TEST(Recorder, UnbalancedRecordsAreTolerated) {
  ir::Graph g = test::small_net();
  Recorder rec;
  rec.on_op_end(g.nodes()[0]);                          // end without begin
  rec.on_op_begin(g.nodes()[1]);                        // begin without end
  rec.on_kernel_end(g.nodes()[2]);                      // kernel end without begin
  rec.on_free({"t0", g.nodes()[0].id, 0x1000, 64, 0});  // free of a block never allocated
  rec.on_op_begin(g.nodes()[2]);
  rec.on_kernel_begin(g.nodes()[2], "");
  rec.on_kernel_impl(g.nodes()[2], "test:impl");
  rec.on_kernel_end(g.nodes()[2]);
  rec.on_op_end(g.nodes()[2]);
  TracePtr t = rec.build({&g, nullptr, {}});
  ASSERT_EQ(t->events.size(), 2u);
  size_t kernels = 0;
  for (const Event& e : t->events)
    if (e.kind == EventKind::Kernel) {
      ++kernels;
      EXPECT_EQ(t->str(e.impl), "test:impl");
    }
  EXPECT_EQ(kernels, 1u);
  EXPECT_EQ(t->flows.size(), 1u);
}

TEST(Recorder, ClearForgetsRecords) {
  ir::Graph g = test::small_net();
  Recorder rec;
  rec.on_op_begin(g.nodes()[0]);
  rec.on_op_end(g.nodes()[0]);
  EXPECT_EQ(rec.recorded(), 2u);
  rec.clear();
  EXPECT_EQ(rec.recorded(), 0u);
  EXPECT_TRUE(rec.build({&g, nullptr, {}})->events.empty());
}

}  // namespace
}  // namespace ms::prof
