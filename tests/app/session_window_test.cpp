// A session's trace read window by window (SessionReader's skeleton, span, counts and bucketed
// summaries), a trace left in its file on load and copied whole by the next save, and a schema-1
// file opened through the migration.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>

#include "app/session/model_inputs.h"
#include "app/session/session_file.h"
#include "profiler/trace/trace.h"
#include "tests/app/session_test_util.h"

namespace ms::session {
namespace {

using test::TempDir;

// Three tracks: back-to-back events of varying length, a few long ones, and an empty track.
prof::TracePtr window_test_trace(int per_track) {
  prof::TraceBuilder b;
  for (int k = 0; k < 3; ++k) b.add_track({prof::TrackKind::HostThread, 1, k, "p", "t" + std::to_string(k), k});
  const prof::StrId op = b.intern("Op"), wide = b.intern("Wide");
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < per_track; ++i) {
      prof::Event e;
      e.track = static_cast<uint32_t>(k);
      e.ts_ns = 1000 + int64_t{i} * 100 + (i % 7) * 3 + k;
      e.dur_ns = i % 97 == 0 ? 5000 : 40 + i % 50;
      e.name = i % 97 == 0 ? wide : op;
      b.add_event(e);
    }
  b.add_counter({0, b.intern("live bytes"), 1000, 64.0});
  return b.finish();
}

SessionData window_session(int per_track) {
  SessionData d;
  SessionRun r;
  r.label = "pynative";
  r.outcome.mode = "pynative";
  r.outcome.trace = window_test_trace(per_track);
  d.runs.push_back(r);
  d.model = {"zoo:mnist_mlp", "spec", "", "", 0};
  return d;
}

int64_t starts_in(const prof::Trace& t, uint32_t track, int64_t t0, int64_t t1) {
  return std::count_if(t.events.begin(), t.events.end(),
                       [&](const prof::Event& e) { return e.track == track && e.ts_ns >= t0 && e.ts_ns < t1; });
}

TEST(SessionWindow, SkeletonSpanCountsAndSummaryMatchTheTrace) {
  TempDir dir("session_window_q");
  const SessionData d = window_session(3000);
  const prof::Trace& t = *d.runs[0].outcome.trace;
  const std::string path = dir.file("w.modescope");
  ASSERT_TRUE(save_session(path, d).is_ok());
  auto reader = SessionReader::open(path, Verify::AllButEvents);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  auto skeleton = reader->trace_skeleton(0);
  ASSERT_TRUE(skeleton.has_value() && *skeleton) << skeleton.status().message();
  EXPECT_TRUE((*skeleton)->events.empty());
  EXPECT_EQ((*skeleton)->strings, t.strings);
  EXPECT_EQ((*skeleton)->tracks.size(), 3u);
  EXPECT_EQ((*skeleton)->counters.size(), 1u);
  auto span = reader->trace_span(0);
  ASSERT_TRUE(span.has_value());
  EXPECT_EQ(span->first, t.begin_ns());
  EXPECT_EQ(span->second, t.end_ns());
  for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, 2000}, {55'000, 56'050}, {1000, 400'000}, {-10, 0}}) {
    for (uint32_t track = 0; track < 3; ++track) {
      EXPECT_EQ(*reader->count_in_window(0, track, t0, t1), starts_in(t, track, t0, t1)) << t0 << ".." << t1;
    }
  }
  for (int buckets : {1, 7, 400}) {
    auto sum = reader->window_summary(0, 1, 900, 250'000, buckets);
    ASSERT_TRUE(sum.has_value()) << sum.status().message();
    ASSERT_EQ(static_cast<int>(sum->size()), buckets);
    int64_t total = 0;
    for (const WindowBucket& b : *sum) {
      EXPECT_EQ(b.count, starts_in(t, 1, b.t0, b.t1)) << b.t0;
      if (b.count > 0) {
        EXPECT_GE(b.first.ts_ns, b.t0);
        EXPECT_LT(b.first.ts_ns, b.t1);
        EXPECT_EQ(b.first.track, 1u);
      }
      total += b.count;
    }
    EXPECT_EQ(total, starts_in(t, 1, 900, 250'000));
  }
  EXPECT_EQ(reader->window_summary(0, 2, 0, 1000, 4)->at(0).count, 0);  // the empty track
}

TEST(SessionWindow, TraceLeftInTheFileIsCopiedByTheNextSave) {
  TempDir dir("session_window_copy");
  const SessionData d = window_session(500);
  const std::string first = dir.file("a.modescope"), second = dir.file("b.modescope");
  ASSERT_TRUE(save_session(first, d).is_ok());
  auto reader = SessionReader::open(first);
  ASSERT_TRUE(reader.has_value());
  auto light = reader->load(100);  // 1,000 events: more than that, so the trace stays in the file
  ASSERT_TRUE(light.has_value()) << light.status().message();
  ASSERT_FALSE(light->runs[0].outcome.trace);
  EXPECT_EQ(light->runs[0].trace_file, first);
  EXPECT_EQ(light->runs[0].trace_run, 0);
  // A run before it, so the trace is copied under another run index.
  SessionRun extra;
  extra.label = "graph";
  extra.outcome.mode = "graph";
  light->runs.insert(light->runs.begin(), extra);
  light->runs[1].trace_run = 0;
  ASSERT_TRUE(save_session(second, *light).is_ok());
  auto back = load_session(second);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  ASSERT_EQ(back->runs.size(), 2u);
  EXPECT_FALSE(back->runs[0].outcome.trace);
  ASSERT_TRUE(back->runs[1].outcome.trace);
  test::expect_same_trace(*d.runs[0].outcome.trace, *back->runs[1].outcome.trace);
  // A file the trace was left in that is gone: the save fails naming it, nothing written.
  light->runs[1].trace_file = dir.file("gone.modescope");
  const Status s = save_session(dir.file("c.modescope"), *light);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("gone.modescope"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(dir.file("c.modescope")));
}

// Turns a file into what schema 1 wrote: without the tables later schemas added, user_version 1.
void downgrade_to_schema_1(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* sql =
      "DROP TABLE run_details; DROP TABLE run_fallbacks; DROP TABLE numerics; DROP TABLE numerics_values;"
      "DROP TABLE run_fallback_nodes;"
      "DELETE FROM digests WHERE tbl IN ('run_details', 'run_fallbacks', 'numerics', 'numerics_values',"
      " 'run_fallback_nodes');"
      "ALTER TABLE trace_events DROP COLUMN depth; ALTER TABLE trace_tracks DROP COLUMN depths;"
      "DROP TABLE trace_iterations; DELETE FROM digests WHERE tbl = 'trace_iterations';" MS_DROP_SCHEMA_6_SQL
      "DROP TABLE rank_lanes; DROP TABLE rank_steps; DROP TABLE rank_collectives;"
      "DELETE FROM digests WHERE tbl IN ('rank_lanes', 'rank_steps', 'rank_collectives');"
      "PRAGMA user_version = 1; PRAGMA journal_mode = DELETE; VACUUM;";
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST(SessionWindow, SchemaOneFileOpensThroughTheMigrationUnchanged) {
  TempDir dir("session_v1");
  // Without traces: dropping schema 3's trace columns leaves the digests of empty tables as they were.
  SessionData data = test::small_session();
  for (SessionRun& r : data.runs) r.outcome.trace.reset();
  const std::string path = dir.file("old.modescope");
  ASSERT_TRUE(save_session(path, data).is_ok());
  downgrade_to_schema_1(path);
  const std::string bytes = test::read_bytes(path);
  auto reader = SessionReader::open(path);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  EXPECT_EQ(reader->schema_version(), 1);
  auto back = reader->load();
  ASSERT_TRUE(back.has_value()) << back.status().message();
  // What schema 1 held comes back; what it could not hold is empty.
  SessionData want = data;
  want.numerics.reset();
  for (auto& r : want.runs) r.outcome.fallbacks.clear(), r.outcome.compiles = 0, r.outcome.cache_hits = 0;
  for (auto& r : want.runs) r.outcome.bucket.clear(), r.outcome.buckets.clear();
  test::expect_same_session(want, *back);
  EXPECT_EQ(test::read_bytes(path), bytes);  // never written
}

TEST(SessionWindow, RunsCarryTheirCompiledGraphsAndFallbacks) {
  const SessionData& data = test::small_session();
  const ModeRunOutcome &eager = data.runs[0].outcome, &graph = data.runs[1].outcome;
  EXPECT_EQ(eager.compiles, 0);
  EXPECT_TRUE(eager.bucket.empty());
  // One compile for the inputs' shapes; the other iterations found it (warm-up 0, 2 iterations).
  EXPECT_EQ(graph.compiles, 1);
  EXPECT_EQ(graph.cache_hits, 1);
  EXPECT_NE(graph.bucket.find("f32["), std::string::npos) << graph.bucket;
  EXPECT_EQ(graph.buckets, std::vector<std::string>{graph.bucket});
  // Asked for CUDA where there is none: the whole run is a fallback, with the backend's note.
  auto g = load_model_arg(test::kSmallModel);
  ASSERT_TRUE(g.has_value());
  ModeRun req;
  req.mode = "pynative";
  req.device = "cuda";
  req.threads = 1;
  req.iterations = 1;
  req.warmup = 0;
  RunCallbacks none;
  auto out = run_mode(*g, req, none);
  ASSERT_TRUE(out.has_value()) << out.status().message();
  if (out->note.empty()) GTEST_SKIP() << "a CUDA device is present: the run is not a fallback";
  ASSERT_FALSE(out->fallbacks.empty());
  EXPECT_EQ(out->fallbacks[0].op, "*");
  EXPECT_EQ(out->fallbacks[0].reason, out->note);
}

}  // namespace
}  // namespace ms::session
