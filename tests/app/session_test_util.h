// For the session file tests: a small session made from real runs (the MNIST MLP template in both
// modes, profiled, with its pass snapshots and memory plan, a comparison, a training curve and UI
// state), and a field-by-field comparison of two sessions.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "app/session/mode_run.h"
#include "app/session/model_inputs.h"
#include "app/session/session_file.h"
#include "engine/ir/graph.h"
#include "tests/temp_dir.h"

namespace ms::session::test {

inline constexpr const char* kSmallModel = "zoo:mnist_mlp?batch=2&size=8&hidden=16";

// A folder of its own under the temp folder, removed by the destructor.
using TempDir = ms::testing::TempDir;

inline std::string read_bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void write_bytes(const std::string& p, const std::string& b) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << b;
}

// What schema 8 added (the traces' totals by kind and name of event), schema 7 (the snapshots' nested
// constants) and schema 6 (the snapshots' constants), dropped with their digests by the tests that
// turn a file into what an older schema wrote: MS_DROP_SCHEMA_7_SQL drops what schemas 7 and 8
// added, MS_DROP_SCHEMA_6_SQL what schemas 6 to 8 added.
#define MS_DROP_SCHEMA_8_SQL "DROP TABLE trace_name_totals; DELETE FROM digests WHERE tbl = 'trace_name_totals';"
#define MS_DROP_SCHEMA_7_SQL \
  MS_DROP_SCHEMA_8_SQL "DROP TABLE snapshot_nested_values; DELETE FROM digests WHERE tbl = 'snapshot_nested_values';"
#define MS_DROP_SCHEMA_6_ONLY_SQL                                                                   \
  "DROP TABLE snapshot_constants; DROP TABLE snapshot_values; DROP TABLE snapshot_constant_budget;" \
  "DELETE FROM digests WHERE tbl IN ('snapshot_constants', 'snapshot_values', 'snapshot_constant_budget');"
#define MS_DROP_SCHEMA_6_SQL MS_DROP_SCHEMA_7_SQL MS_DROP_SCHEMA_6_ONLY_SQL

// The first column of the first row `sql` gives on the file (a COUNT), or -1 when there is none.
inline int64_t query_count(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  const int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

// An f32 tensor's values.
inline std::vector<float> f32_values_of(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (!out.empty()) std::memcpy(out.data(), t.raw(), t.nbytes());
  return out;
}

// Runs `sql` on the file (what an older schema wrote, a damaged row), failing the test on an error.
inline void exec_sql(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// `d` saved, then `sql` run on the file (a damaged row of the snapshots' constants; digests left as
// they were, so only the header is checked on open): loading fails with one line that names the
// file, `table` and `what`, and with every check the digests catch the same change first.
inline void expect_damaged_row(const SessionData& d, const std::string& sql, const std::string& table,
                               const std::string& what) {
  TempDir dir("session_damaged_row");
  const std::string path = dir.file("bad.modescope");
  ASSERT_TRUE(save_session(path, d).is_ok());
  exec_sql(path, sql.c_str());
  auto reader = SessionReader::open(path, Verify::Header);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  auto got = reader->load();
  ASSERT_FALSE(got.has_value()) << sql;
  const std::string m = got.status().message();
  EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
  EXPECT_NE(m.find(table), std::string::npos) << m;
  EXPECT_NE(m.find(what), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  auto checked = load_session(path);
  ASSERT_FALSE(checked.has_value());
  EXPECT_NE(checked.status().message().find("snapshot_"), std::string::npos) << checked.status().message();
}

inline SessionRun small_run(const ir::Graph& g, const std::string& mode) {
  ModeRun req;
  req.mode = mode;
  req.threads = 1;
  req.iterations = 2;
  req.warmup = 0;
  RunCallbacks none;
  auto out = run_mode(g, req, none);
  EXPECT_TRUE(out.has_value()) << out.status().message();
  SessionRun r;
  r.label = mode;
  r.request = req;
  if (out) r.outcome = std::move(*out);
  return r;
}

// Made once per test program: both runs take a few hundred milliseconds.
inline const SessionData& small_session() {
  static const SessionData data = [] {
    SessionData d;
    auto model = describe_model(kSmallModel);
    EXPECT_TRUE(model.has_value());
    d.model = *model;
    auto g = load_model_arg(kSmallModel);
    EXPECT_TRUE(g.has_value()) << g.status().message();
    d.runs.push_back(small_run(*g, "pynative"));
    d.runs.push_back(small_run(*g, "graph"));
    d.comparisons.push_back({"pynative vs graph", 0, 1, R"({"speedup": 1.5})"});
    d.training.push_back({"graph", "graph", {2.3, 1.9, 1.2}, {0.1, 0.1, 0.05}, {5.0, 1.0, 1.1}, R"({"steps": 3})"});
    d.ui_state = {{"pass", "3"}, {"selection", "12"}, {"tab", "Timeline"}};
    d.runs[1].outcome.fallbacks = {{"Where", 2, "no cuda kernel: runs on the CPU", {3, 5}},
                                   {"*", 1, "no CUDA device"},
                                   {"Cast", 1, "computed in f32: runs on the CPU", {5}}};
    SessionNumerics n;
    n.diff.tol = 1e-4;
    n.diff.values.push_back({"y", "fc1", "Gemm", ir::NodeId{7}, "y", "fc1", ir::NodeId{7}, "same node", "", true,
                             2.5e-7, 1e-7, 0, false, 0});
    n.diff.values.push_back({"z", "fused", "FusedGemm", ir::NodeId{40}, "z0", "relu", ir::NodeId{8}, "last origin", "",
                             true, 0.5, 0.01, 1, true, 1});
    n.diff.first_divergence = 1;
    n.diff.compared = 2;
    n.diff.diverged = 1;
    n.diff.max_rel = 0.01;
    n.diff_ms = 1.25;
    n.bisect = "pass 'fuse-elementwise' (#4) leaves the tolerance";
    d.numerics = n;
    d.environment = {{"producer", "modescope tests"}, {"threads", "1"}};
    return d;
  }();
  return data;
}

inline void expect_same_trace(const prof::Trace& a, const prof::Trace& b) {
  EXPECT_EQ(a.metadata, b.metadata);
  EXPECT_EQ(a.strings, b.strings);
  EXPECT_EQ(a.foreign, b.foreign);
  EXPECT_EQ(a.dropped_events, b.dropped_events);
  ASSERT_EQ(a.tracks.size(), b.tracks.size());
  for (size_t i = 0; i < a.tracks.size(); ++i) {
    EXPECT_EQ(a.tracks[i].kind, b.tracks[i].kind);
    EXPECT_EQ(a.tracks[i].name, b.tracks[i].name);
    EXPECT_EQ(a.tracks[i].process_name, b.tracks[i].process_name);
    EXPECT_EQ(a.tracks[i].pid, b.tracks[i].pid);
    EXPECT_EQ(a.tracks[i].tid, b.tracks[i].tid);
    EXPECT_EQ(a.tracks[i].sort_index, b.tracks[i].sort_index);
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].id, b.nodes[i].id);
    EXPECT_EQ(a.nodes[i].name, b.nodes[i].name);
    EXPECT_EQ(a.nodes[i].op, b.nodes[i].op);
    EXPECT_EQ(a.nodes[i].origins, b.nodes[i].origins);
    EXPECT_EQ(a.nodes[i].shapes, b.nodes[i].shapes);
    EXPECT_EQ(a.nodes[i].flops, b.nodes[i].flops);
    EXPECT_EQ(a.nodes[i].bytes, b.nodes[i].bytes);
  }
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const prof::Event &x = a.events[i], &y = b.events[i];
    EXPECT_TRUE(x.ts_ns == y.ts_ns && x.dur_ns == y.dur_ns && x.track == y.track && x.kind == y.kind &&
                x.node == y.node && x.iteration == y.iteration && x.name == y.name && x.category == y.category &&
                x.impl == y.impl && x.args == y.args)
        << "event " << i;
  }
  ASSERT_EQ(a.counters.size(), b.counters.size());
  for (size_t i = 0; i < a.counters.size(); ++i) {
    EXPECT_TRUE(a.counters[i].track == b.counters[i].track && a.counters[i].name == b.counters[i].name &&
                a.counters[i].ts_ns == b.counters[i].ts_ns && a.counters[i].value == b.counters[i].value);
  }
  ASSERT_EQ(a.flows.size(), b.flows.size());
  for (size_t i = 0; i < a.flows.size(); ++i) {
    EXPECT_TRUE(a.flows[i].id == b.flows[i].id && a.flows[i].from == b.flows[i].from && a.flows[i].to == b.flows[i].to);
  }
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (size_t i = 0; i < a.blocks.size(); ++i) {
    const prof::MemoryBlock &x = a.blocks[i], &y = b.blocks[i];
    EXPECT_TRUE(x.address == y.address && x.bytes == y.bytes && x.value == y.value && x.producer == y.producer &&
                x.alloc_ns == y.alloc_ns && x.free_ns == y.free_ns && x.iteration == y.iteration && x.arena == y.arena);
  }
}

inline void expect_same_plan(const runtime::MemoryPlan& a, const runtime::MemoryPlan& b) {
  EXPECT_EQ(a.arena_bytes, b.arena_bytes);
  EXPECT_EQ(a.lower_bound, b.lower_bound);
  EXPECT_EQ(a.naive_bytes, b.naive_bytes);
  EXPECT_EQ(a.live, b.live);
  ASSERT_EQ(a.slots.size(), b.slots.size());
  for (size_t i = 0; i < a.slots.size(); ++i) {
    const runtime::MemorySlot &x = a.slots[i], &y = b.slots[i];
    EXPECT_TRUE(x.value == y.value && x.producer == y.producer && x.offset == y.offset && x.bytes == y.bytes &&
                x.first_step == y.first_step && x.last_step == y.last_step && x.reuses == y.reuses &&
                x.thread == y.thread && x.within == y.within && x.within_offset == y.within_offset)
        << "slot " << i;
  }
}

inline void expect_same_run(const SessionRun& a, const SessionRun& b) {
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.request.mode, b.request.mode);
  EXPECT_EQ(a.request.device, b.request.device);
  EXPECT_EQ(a.request.jit_level, b.request.jit_level);
  EXPECT_EQ(a.request.threads, b.request.threads);
  EXPECT_EQ(a.request.iterations, b.request.iterations);
  EXPECT_EQ(a.request.warmup, b.request.warmup);
  EXPECT_EQ(a.request.batch, b.request.batch);
  EXPECT_EQ(a.request.disabled_passes, b.request.disabled_passes);
  const ModeRunOutcome &x = a.outcome, &y = b.outcome;
  EXPECT_EQ(x.mode, y.mode);
  EXPECT_EQ(x.backend, y.backend);
  EXPECT_EQ(x.note, y.note);
  EXPECT_EQ(x.median_ms, y.median_ms);
  EXPECT_EQ(x.min_ms, y.min_ms);
  EXPECT_EQ(x.mean_ms, y.mean_ms);
  EXPECT_EQ(x.compile_ms, y.compile_ms);
  EXPECT_EQ(x.peak_bytes, y.peak_bytes);
  EXPECT_EQ(x.kernels, y.kernels);
  EXPECT_EQ(x.outputs, y.outputs);
  EXPECT_EQ(x.gpu_records, y.gpu_records);
  EXPECT_EQ(x.gpu_note, y.gpu_note);
  ASSERT_EQ(x.fallbacks.size(), y.fallbacks.size());
  for (size_t i = 0; i < x.fallbacks.size(); ++i) {
    EXPECT_TRUE(x.fallbacks[i].op == y.fallbacks[i].op && x.fallbacks[i].count == y.fallbacks[i].count &&
                x.fallbacks[i].reason == y.fallbacks[i].reason && x.fallbacks[i].nodes == y.fallbacks[i].nodes)
        << "fallback " << i;
  }
  EXPECT_EQ(x.compiles, y.compiles);
  EXPECT_EQ(x.cache_hits, y.cache_hits);
  EXPECT_EQ(x.bucket, y.bucket);
  EXPECT_EQ(x.buckets, y.buckets);
  ASSERT_EQ(x.passes.size(), y.passes.size());
  for (size_t i = 0; i < x.passes.size(); ++i) {
    const PassOutcome &p = x.passes[i], &q = y.passes[i];
    EXPECT_TRUE(p.pass == q.pass && p.description == q.description && p.ran == q.ran && p.changed == q.changed &&
                p.nodes_after == q.nodes_after && p.added == q.added && p.removed == q.removed && p.fused == q.fused &&
                p.ms == q.ms)
        << "pass " << i;
    ASSERT_EQ(p.graph == nullptr, q.graph == nullptr);
    if (p.graph) {
      EXPECT_EQ(ir::to_json(*p.graph, false), ir::to_json(*q.graph, false)) << "pass " << i;
    }
  }
  ASSERT_EQ(x.plan == nullptr, y.plan == nullptr);
  if (x.plan) expect_same_plan(*x.plan, *y.plan);
  ASSERT_EQ(x.trace == nullptr, y.trace == nullptr);
  if (x.trace) expect_same_trace(*x.trace, *y.trace);
}

inline void expect_same_session(const SessionData& a, const SessionData& b) {
  EXPECT_EQ(a.model.source, b.model.source);
  EXPECT_EQ(a.model.kind, b.model.kind);
  EXPECT_EQ(a.model.bytes, b.model.bytes);
  EXPECT_EQ(a.model.hash, b.model.hash);
  EXPECT_EQ(a.model.size, b.model.size);
  ASSERT_EQ(a.runs.size(), b.runs.size());
  for (size_t i = 0; i < a.runs.size(); ++i) expect_same_run(a.runs[i], b.runs[i]);
  ASSERT_EQ(a.comparisons.size(), b.comparisons.size());
  for (size_t i = 0; i < a.comparisons.size(); ++i) {
    EXPECT_EQ(a.comparisons[i].name, b.comparisons[i].name);
    EXPECT_EQ(a.comparisons[i].run_a, b.comparisons[i].run_a);
    EXPECT_EQ(a.comparisons[i].run_b, b.comparisons[i].run_b);
    EXPECT_EQ(a.comparisons[i].report, b.comparisons[i].report);
  }
  ASSERT_EQ(a.training.size(), b.training.size());
  for (size_t i = 0; i < a.training.size(); ++i) {
    EXPECT_EQ(a.training[i].name, b.training[i].name);
    EXPECT_EQ(a.training[i].mode, b.training[i].mode);
    EXPECT_EQ(a.training[i].losses, b.training[i].losses);
    EXPECT_EQ(a.training[i].lrs, b.training[i].lrs);
    EXPECT_EQ(a.training[i].step_ms, b.training[i].step_ms);
    EXPECT_EQ(a.training[i].report, b.training[i].report);
  }
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  ASSERT_EQ(a.numerics.has_value(), b.numerics.has_value());
  if (a.numerics) {
    const runtime::ModeDiff &x = a.numerics->diff, &y = b.numerics->diff;
    EXPECT_EQ(x.tol, y.tol);
    EXPECT_EQ(x.first_divergence, y.first_divergence);
    EXPECT_EQ(x.compared, y.compared);
    EXPECT_EQ(x.diverged, y.diverged);
    EXPECT_EQ(x.max_rel, y.max_rel);
    EXPECT_EQ(a.numerics->diff_ms, b.numerics->diff_ms);
    EXPECT_EQ(a.numerics->bisect, b.numerics->bisect);
    ASSERT_EQ(x.values.size(), y.values.size());
    for (size_t i = 0; i < x.values.size(); ++i) {
      const runtime::ValueDiff &p = x.values[i], &q = y.values[i];
      EXPECT_TRUE(p.value == q.value && p.node == q.node && p.op == q.op && p.node_id == q.node_id &&
                  p.ref_value == q.ref_value && p.ref_node == q.ref_node && p.ref_node_id == q.ref_node_id &&
                  p.match == q.match && p.note == q.note && p.compared == q.compared && p.max_abs == q.max_abs &&
                  p.max_rel == q.max_rel && p.nonfinite_mismatches == q.nonfinite_mismatches &&
                  p.diverged == q.diverged && p.order == q.order)
          << "value " << i;
    }
  }
  EXPECT_EQ(a.ui_state, b.ui_state);
  EXPECT_EQ(a.environment, b.environment);
}

}  // namespace ms::session::test
