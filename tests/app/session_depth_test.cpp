// What a session file answers about a trace left in it equals what the whole trace gives: each
// event's nesting depth (the timeline's rows), each track's depths and the ops of the first
// iterations (what the memory views read), in a file of this schema, in a schema-2 file opened
// through the migration and in a copy saved from there; and the comparison a session stores comes
// back exactly.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "app/session/session_file.h"
#include "profiler/analysis/compare.h"
#include "profiler/analysis/nesting.h"
#include "profiler/analysis/report.h"
#include "tests/app/session_test_util.h"
#include "tests/views/result_traces.h"

namespace ms::session {
namespace {

using test::TempDir;

void expect_depths_and_first_iterations(const SessionReader& reader, const prof::Trace& t) {
  const std::vector<int32_t> depth = prof::nesting_depths(t);
  EXPECT_EQ(*std::max_element(depth.begin(), depth.end()), 2);
  auto tracks = reader.track_depths(0);
  ASSERT_TRUE(tracks.has_value()) << tracks.status().message();
  ASSERT_EQ(tracks->size(), t.tracks.size());
  for (uint32_t track = 0; track < t.tracks.size(); ++track) {
    std::vector<int32_t> want;
    int depths = 0;
    for (size_t i = 0; i < t.events.size(); ++i)
      if (t.events[i].track == track) want.push_back(depth[i]), depths = std::max(depths, depth[i] + 1);
    std::vector<int32_t> got;
    auto events = reader.events_in_window(0, track, t.begin_ns(), t.end_ns() + 1, &got);
    ASSERT_TRUE(events.has_value()) << events.status().message();
    EXPECT_EQ(got, want) << "track " << track;
    EXPECT_EQ((*tracks)[track], depths) << "track " << track;
  }
  auto first = reader.trace_first_iterations(0);
  ASSERT_TRUE(first.has_value() && *first) << first.status().message();
  std::vector<std::pair<int64_t, int64_t>> want, got;
  for (const prof::Event& e : t.events)
    if (e.kind == prof::EventKind::Op && e.iteration == 0) want.emplace_back(e.ts_ns, e.dur_ns);
  for (const prof::Event& e : (*first)->events) got.emplace_back(e.ts_ns, e.dur_ns);
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(got, want);
  EXPECT_EQ((*first)->blocks.size(), t.blocks.size());
  EXPECT_EQ((*first)->nodes.size(), t.nodes.size());
}

// Turns the file into what schema 2 wrote: without schema 3's depths and iteration spans and
// schema 4's fallback nodes and schema 5's ranks, user_version 2 (the trace tables' digests then no longer hold).
void downgrade_to_schema_2(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* sql =
      "ALTER TABLE trace_events DROP COLUMN depth; ALTER TABLE trace_tracks DROP COLUMN depths;"
      "DROP TABLE trace_iterations; DROP TABLE IF EXISTS run_fallback_nodes;"
      "DELETE FROM digests WHERE tbl IN ('trace_iterations', 'run_fallback_nodes');" MS_DROP_SCHEMA_6_SQL
      "DROP TABLE rank_lanes; DROP TABLE rank_steps; DROP TABLE rank_collectives;"
      "DELETE FROM digests WHERE tbl IN ('rank_lanes', 'rank_steps', 'rank_collectives');"
      "PRAGMA user_version = 2; PRAGMA journal_mode = DELETE; VACUUM;";
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST(SessionDepth, DepthsAndFirstIterationsComeFromTheFile) {
  TempDir dir("session_depth");
  SessionData d;
  SessionRun r;
  r.label = "graph";
  r.outcome.mode = "graph";
  r.outcome.trace = views::test::nested_trace();
  d.runs.push_back(r);
  d.model = {"zoo:mnist_mlp", "spec", "", "", 0};
  const std::string path = dir.file("n.modescope");
  ASSERT_TRUE(save_session(path, d).is_ok());
  auto reader = SessionReader::open(path);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  expect_depths_and_first_iterations(*reader, *r.outcome.trace);
  // A schema-2 file: the migration derives them from its events; the file is not written.
  downgrade_to_schema_2(path);
  const std::string bytes = test::read_bytes(path);
  auto old = SessionReader::open(path, Verify::Header);
  ASSERT_TRUE(old.has_value()) << old.status().message();
  EXPECT_EQ(old->schema_version(), 2);
  expect_depths_and_first_iterations(*old, *r.outcome.trace);
  EXPECT_EQ(test::read_bytes(path), bytes);
  // Saved from there with the trace kept in the old file: the copy derives them too.
  auto light = old->load(10);
  ASSERT_TRUE(light.has_value()) << light.status().message();
  ASSERT_FALSE(light->runs[0].outcome.trace);
  const std::string copy = dir.file("copy.modescope");
  ASSERT_TRUE(save_session(copy, *light).is_ok());
  auto again = SessionReader::open(copy);
  ASSERT_TRUE(again.has_value()) << again.status().message();
  EXPECT_EQ(again->schema_version(), kSessionSchemaVersion);
  expect_depths_and_first_iterations(*again, *r.outcome.trace);
}

// The comparison comes back exactly (JSON keeps every digit), its verdict advised again, from the
// app's form and the CLI's (verdict as text); a report with a field missing is refused naming it.
TEST(SessionDepth, StoredComparisonComesBackExactly) {
  const prof::Comparison c =
      prof::compare_runs(*views::test::generated_trace(false, 3), *views::test::generated_trace(true, 3));
  ASSERT_FALSE(c.rows.empty());
  auto back = prof::comparison_from_json(nlohmann::json::parse(prof::to_json(c).dump()));
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(prof::to_json(*back), prof::to_json(c));
  EXPECT_EQ(back->verdict.text, c.verdict.text);
  nlohmann::json cli = prof::to_json(c);
  cli["verdict"] = c.verdict.text;
  auto from_cli = prof::comparison_from_json(cli);
  ASSERT_TRUE(from_cli.has_value()) << from_cli.status().message();
  EXPECT_EQ(prof::to_json(*from_cli), prof::to_json(c));
  cli["rows"][1].erase("graph_ms");
  auto bad = prof::comparison_from_json(cli);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("rows[1].graph_ms"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(prof::comparison_from_json(nlohmann::json::array()).has_value());
}

}  // namespace
}  // namespace ms::session
