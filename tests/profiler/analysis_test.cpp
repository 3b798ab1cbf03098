// Analysis on hand-built traces (exact figures) and on recorded ones (consistency).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "profiler/analysis/compare.h"
#include "profiler/analysis/memory_analysis.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/report.h"
#include "test_util.h"

namespace ms::prof {
namespace {

constexpr int64_t us = 1000;

struct Hand {
  TraceBuilder b;
  uint32_t host = b.add_track({TrackKind::HostThread, 1, 1, "p", "host", 0});
  uint32_t kern = b.add_track({TrackKind::KernelThread, 1, 2, "p", "kernels", 1});
  int32_t node(uint64_t id, const std::string& op, std::vector<uint64_t> origins, double flops = 0, double bytes = 0) {
    return b.add_node({id, op + "_" + std::to_string(id), op, std::move(origins), "", flops, bytes});
  }
  uint32_t op(int32_t n, int64_t ts, int64_t dur, int it = 0) {
    Event e;
    e.ts_ns = ts;
    e.dur_ns = dur;
    e.track = host;
    e.kind = EventKind::Op;
    e.node = n;
    e.iteration = it;
    e.name = b.intern(b.raw().nodes[static_cast<size_t>(n)].op);
    return b.add_event(e);
  }
  void kernel(int32_t n, int64_t ts, int64_t dur) {
    Event e;
    e.ts_ns = ts;
    e.dur_ns = dur;
    e.track = kern;
    e.kind = EventKind::Kernel;
    e.node = n;
    e.name = b.intern(b.raw().nodes[static_cast<size_t>(n)].op);
    b.add_event(e);
  }
  void run(int64_t ts, int64_t dur, int it) {
    Event e;
    e.ts_ns = ts;
    e.dur_ns = dur;
    e.track = host;
    e.kind = EventKind::Run;
    e.iteration = it;
    e.name = b.intern("iteration " + std::to_string(it));
    b.add_event(e);
  }
};

TEST(OpStats, SelfTimeSharesAndThroughput) {
  Hand h;
  const int32_t a = h.node(1, "If", {1});
  const int32_t c = h.node(2, "MatMul", {2}, 2e6, 4e6);
  h.run(0, 100 * us, 0);
  h.op(a, 10 * us, 40 * us);
  h.op(c, 20 * us, 10 * us);  // nested in the If
  h.kernel(c, 22 * us, 8 * us);
  h.op(c, 60 * us, 10 * us);
  h.kernel(c, 61 * us, 8 * us);
  TracePtr t = h.b.finish();
  const OpTable tab = op_stats(*t);
  EXPECT_EQ(tab.iterations, 1);
  EXPECT_DOUBLE_EQ(tab.run_ms, 0.1);
  ASSERT_EQ(tab.by_op.size(), 2u);
  const OpStat& iff = tab.by_op[0].op == "If" ? tab.by_op[0] : tab.by_op[1];
  const OpStat& mm = tab.by_op[0].op == "MatMul" ? tab.by_op[0] : tab.by_op[1];
  EXPECT_EQ(iff.count, 1);
  EXPECT_NEAR(iff.total_ms, 0.040, 1e-12);
  EXPECT_NEAR(iff.self_ms, 0.030, 1e-12);
  EXPECT_EQ(mm.count, 2);
  EXPECT_NEAR(mm.self_ms, 0.020, 1e-12);
  EXPECT_NEAR(mm.mean_us, 10, 1e-9);
  EXPECT_NEAR(mm.share, 0.4, 1e-12);
  EXPECT_EQ(mm.kernels, 2);
  EXPECT_NEAR(mm.flops_per_s, 4e6 / 16e-6, 1e3);  // two executions over 16 us of kernels
  EXPECT_NEAR(mm.bytes_per_s, 8e6 / 16e-6, 1e3);
  EXPECT_NEAR(tab.busy_ms, 0.050, 1e-12);
  EXPECT_EQ(tab.by_node.front().node_id, 1u);
  EXPECT_NE(format_op_table(tab).find("MatMul"), std::string::npos);
}

TEST(Memory, PeakFragmentationReuseAndTopContributors) {
  TraceBuilder b;
  b.add_node({5, "producer", "Conv", {5}, "", 0, 0});
  auto block = [&](uint64_t addr, uint64_t bytes, int64_t a, int64_t f, const char* v) {
    MemoryBlock m;
    m.address = addr;
    m.bytes = bytes;
    m.alloc_ns = a;
    m.free_ns = f;
    m.value = b.intern(v);
    m.producer = 5;
    b.add_block(m);
  };
  block(0, 100, 0, 10, "a");
  block(256, 50, 5, 20, "b");
  block(0, 100, 12, 30, "c");  // the first region again
  block(1024, 200, 40, 50, "d");
  TracePtr t = b.finish();
  const MemoryAnalysis m = analyze_memory(*t);
  EXPECT_EQ(m.peak_live_bytes, 200u);
  EXPECT_EQ(m.peak_ns, 40);
  EXPECT_EQ(m.lower_bound_bytes, 200u);
  EXPECT_EQ(m.footprint_bytes, 350u);
  EXPECT_NEAR(m.fragmentation, 150.0 / 350.0, 1e-12);
  EXPECT_EQ(m.regions, 3);
  EXPECT_EQ(m.blocks, 4);
  ASSERT_FALSE(m.top_regions.empty());
  EXPECT_EQ(m.top_regions[0].address, 0u);
  EXPECT_EQ(m.top_regions[0].uses, 2);
  ASSERT_EQ(m.top_at_peak.size(), 1u);
  EXPECT_EQ(m.top_at_peak[0].value, "d");
  EXPECT_EQ(m.top_at_peak[0].producer_name, "producer");
  EXPECT_EQ(to_json(m)["peak_live_bytes"], 200);
}

TEST(Memory, ArenaFootprintComesFromThePlan) {
  TraceBuilder b;
  b.set_meta("arena_bytes", "512");
  MemoryBlock m;
  m.arena = true;
  m.bytes = 128;
  m.alloc_ns = 0;
  m.free_ns = 10;
  b.add_block(m);
  const MemoryAnalysis a = analyze_memory(*b.finish());
  EXPECT_EQ(a.footprint_bytes, 512u);
  EXPECT_NEAR(a.fragmentation, 384.0 / 512.0, 1e-12);
}

// Eager: Conv(1) BN(2) Relu(3) Add(4); Graph: one node with origins {1,2,3} and Add(4).
void eager_side(Hand& h) {
  const int32_t conv = h.node(1, "Conv", {1}, 1e6, 1e5), bn = h.node(2, "BatchNormalization", {2}),
                relu = h.node(3, "Relu", {3}), add = h.node(4, "Add", {4});
  for (int it = 0; it < 2; ++it) {
    const int64_t t0 = it * 100 * us;
    h.run(t0, 25 * us, it);
    h.op(conv, t0 + 1 * us, 10 * us, it);
    h.kernel(conv, t0 + 2 * us, 8 * us);
    h.op(bn, t0 + 12 * us, 5 * us, it);
    h.kernel(bn, t0 + 13 * us, 4 * us);
    h.op(relu, t0 + 18 * us, 3 * us, it);
    h.kernel(relu, t0 + 19 * us, 2 * us);
    h.op(add, t0 + 22 * us, 2 * us, it);
    h.kernel(add, t0 + 22 * us, 1 * us);
  }
}

TracePtr graph_side(double iter_us, double compile_ms, const std::string& cpu_wait_share = "") {
  Hand h;
  const int32_t fused = h.node(10, "FusedConv", {1, 2, 3}), add = h.node(11, "Add", {4});
  for (int it = 0; it < 2; ++it) {
    const int64_t t0 = it * 100 * us;
    h.run(t0, static_cast<int64_t>(iter_us * us), it);
    h.op(fused, t0 + 1 * us, 8 * us, it);
    h.kernel(fused, t0 + 2 * us, 7 * us);
    h.op(add, t0 + 9 * us, 1 * us, it);
    h.kernel(add, t0 + 9 * us, 1 * us);
  }
  h.b.set_meta("compile_ms", std::to_string(compile_ms));
  if (!cpu_wait_share.empty()) h.b.set_meta("cpu_wait_share", cpu_wait_share);
  return h.b.finish();
}

TEST(Compare, FusedNodeCoversItsOriginsEagerOps) {
  Hand e;
  eager_side(e);
  TracePtr eager = e.b.finish();
  TracePtr graph = graph_side(10, 0.15);
  const Comparison c = compare_runs(*eager, *graph);
  ASSERT_EQ(c.rows.size(), 2u);
  const CompareRow& f = c.rows[0];
  EXPECT_EQ(f.origins, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(f.label, "Conv+BatchNormalization+Relu");
  EXPECT_EQ(f.graph_ops, "FusedConv");
  EXPECT_TRUE(f.fused);
  EXPECT_NEAR(f.eager_ms, 0.018, 1e-12);
  EXPECT_NEAR(f.graph_ms, 0.008, 1e-12);
  EXPECT_NEAR(f.eager_kernels, 3, 1e-12);
  EXPECT_NEAR(f.graph_kernels, 1, 1e-12);
  EXPECT_NEAR(f.eager_ops, 3, 1e-12);
  EXPECT_NEAR(f.eager_bytes, 1e5, 1e-6);
  const CompareRow& a = c.rows[1];
  EXPECT_EQ(a.origins, std::vector<uint64_t>{4});
  EXPECT_FALSE(a.fused);
  const CompareSummary& s = c.summary;
  EXPECT_NEAR(s.eager_iter_ms, 0.025, 1e-12);
  EXPECT_NEAR(s.graph_iter_ms, 0.010, 1e-12);
  EXPECT_NEAR(s.saving_ms, 0.015, 1e-12);
  EXPECT_NEAR(s.break_even_iterations, 10, 1e-6);
  EXPECT_NEAR(s.eager_kernels_per_iter, 4, 1e-12);
  EXPECT_NEAR(s.graph_kernels_per_iter, 2, 1e-12);
  EXPECT_NEAR(s.eager_overhead_ms, 0.005, 1e-12);
  EXPECT_NEAR(s.graph_overhead_ms, 0.001, 1e-12);
  // Saving: fusion 10 us, Add 1 us, overhead 4 us -> the fusion is 67% of 15 us.
  EXPECT_TRUE(c.verdict.graph_pays_off);
  EXPECT_EQ(c.verdict.main_source, "Conv+BatchNormalization+Relu fusion");
  EXPECT_NEAR(c.verdict.main_share, 10.0 / 15.0, 1e-9);
  EXPECT_EQ(c.verdict.text,
            "Graph mode pays off after 10 iterations (compile 0.1 ms, saves 0.015 ms per iteration); 67% of the gain "
            "is from Conv+BatchNormalization+Relu fusion.");
  const auto j = to_json(c);
  EXPECT_EQ(j["rows"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["summary"]["break_even_iterations"].get<double>(), s.break_even_iterations);
  const std::string table = format_compare_table(c);
  EXPECT_NE(table.find("FusedConv [fused]"), std::string::npos) << table;
}

TEST(Compare, SlowerGraphModeSaysStayInPyNative) {
  Hand e;
  eager_side(e);
  TracePtr eager = e.b.finish();
  TracePtr graph = graph_side(30, 5);
  const Comparison c = compare_runs(*eager, *graph);
  EXPECT_FALSE(c.verdict.graph_pays_off);
  EXPECT_EQ(c.verdict.text.rfind("Stay in PyNative mode", 0), 0u) << c.verdict.text;
  EXPECT_TRUE(std::isinf(c.summary.break_even_iterations));
  EXPECT_TRUE(to_json(c)["summary"]["break_even_iterations"].is_null());
}

// A run whose threads waited for a CPU (the run's "cpu_wait_share") measured the machine as much as
// the model: after the verdict from the figures, the text says so, naming the run and the share.
TEST(Compare, DisturbedRunsSaySoAfterTheVerdict) {
  Hand e;
  eager_side(e);
  TracePtr eager = e.b.finish();
  const Comparison quiet = compare_runs(*eager, *graph_side(10, 0.15, "0.04"));
  EXPECT_FALSE(quiet.verdict.disturbed);
  EXPECT_NEAR(quiet.summary.graph_cpu_wait_share, 0.04, 1e-12);
  EXPECT_NEAR(quiet.summary.eager_cpu_wait_share, -1, 1e-12);  // unknown
  EXPECT_EQ(quiet.verdict.text.rfind("Graph mode pays off after 10 iterations", 0), 0u) << quiet.verdict.text;

  Comparison c = compare_runs(*eager, *graph_side(10, 0.15, "0.38"));
  EXPECT_TRUE(c.verdict.disturbed);
  EXPECT_TRUE(c.verdict.graph_pays_off);  // the figures' verdict is unchanged
  EXPECT_EQ(c.verdict.text.rfind(quiet.verdict.text, 0), 0u) << c.verdict.text;
  EXPECT_NE(c.verdict.text.find(" But the timings are disturbed: the Graph-mode run's threads waited for a CPU 38% of "
                                "the time"),
            std::string::npos)
      << c.verdict.text;

  // Retimed from other runs: their shares replace the profiled ones where known.
  retime(c, 0.030, 0.035, 0.1, 0.12, -1);
  EXPECT_NE(c.verdict.text.find("the PyNative and Graph-mode runs' threads waited for a CPU 12% and 38% of the time"),
            std::string::npos)
      << c.verdict.text;
  EXPECT_EQ(c.verdict.text.rfind("Stay in PyNative mode", 0), 0u) << c.verdict.text;
  retime(c, 0.030, 0.035, 0.1, 0.01, 0.02);
  EXPECT_FALSE(c.verdict.disturbed);
  EXPECT_EQ(c.verdict.text.find("disturbed"), std::string::npos) << c.verdict.text;

  // A report keeps the shares and advises the same again; reports from before them read as unknown.
  retime(c, 0.030, 0.035, 0.1, 0.2, 0.02);
  const auto j = to_json(c);
  EXPECT_TRUE(j["verdict"]["disturbed"].get<bool>());
  auto back = comparison_from_json(j);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_NEAR(back->summary.eager_cpu_wait_share, 0.2, 1e-12);
  EXPECT_EQ(back->verdict.text, c.verdict.text);
  auto old = j;
  old["summary"].erase("eager_cpu_wait_share");
  old["summary"].erase("graph_cpu_wait_share");
  auto old_back = comparison_from_json(old);
  ASSERT_TRUE(old_back) << old_back.status().message();
  EXPECT_FALSE(old_back->verdict.disturbed);
  EXPECT_NEAR(old_back->summary.graph_cpu_wait_share, -1, 1e-12);
  old["summary"]["graph_cpu_wait_share"] = "busy";
  auto bad = comparison_from_json(old);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("summary.graph_cpu_wait_share"), std::string::npos) << bad.status().message();
}

// A Graph run that found its graph compiled still costs that compile: the trace says it was cached,
// the summary keeps the compile time for the break-even, and the report carries both.
TEST(Compare, CachedCompileKeepsItsTimeAndSaysSo) {
  Hand e;
  eager_side(e);
  TracePtr eager = e.b.finish();
  Hand h;
  const int32_t add = h.node(11, "Add", {4});
  h.run(0, 10 * us, 0);
  h.op(add, 1 * us, 1 * us, 0);
  h.b.set_meta("compile_ms", "0.15");
  h.b.set_meta("compile_cached", "true");
  TracePtr graph = h.b.finish();
  const Comparison c = compare_runs(*eager, *graph);
  EXPECT_TRUE(c.summary.compile_cached);
  EXPECT_NEAR(c.summary.compile_ms, 0.15, 1e-12);
  EXPECT_NEAR(c.summary.break_even_iterations, 10, 1e-6);
  const auto j = to_json(c);
  EXPECT_TRUE(j["summary"]["compile_cached"].get<bool>());
  auto back = comparison_from_json(j);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_TRUE(back->summary.compile_cached);
  EXPECT_FALSE(compare_runs(*eager, *graph_side(10, 0.15)).summary.compile_cached);
  // Reports from before the field read as not cached; a wrong type is named.
  auto old = j;
  old["summary"].erase("compile_cached");
  auto old_back = comparison_from_json(old);
  ASSERT_TRUE(old_back) << old_back.status().message();
  EXPECT_FALSE(old_back->summary.compile_cached);
  old["summary"]["compile_cached"] = "yes";
  auto bad = comparison_from_json(old);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("summary.compile_cached"), std::string::npos) << bad.status().message();
}

TEST(Compare, RecordedRunsAlignEveryEagerNode) {
  TracePtr eager = test::record(runtime::ExecMode::PyNative, 2);
  TracePtr graph = test::record(runtime::ExecMode::Graph, 2);
  ASSERT_TRUE(eager && graph);
  const Comparison c = compare_runs(*eager, *graph);
  std::set<uint64_t> covered;
  for (const CompareRow& r : c.rows)
    for (uint64_t o : r.origins) EXPECT_TRUE(covered.insert(o).second) << "node " << o << " in two rows";
  for (const NodeInfo& n : eager->nodes) EXPECT_TRUE(covered.count(n.id)) << n.name;
  EXPECT_GT(c.summary.eager_iter_ms, 0);
  EXPECT_GT(c.summary.graph_iter_ms, 0);
  EXPECT_FALSE(c.verdict.text.empty());
}

}  // namespace
}  // namespace ms::prof
