// What a session holds, said in one line (the app's "Restored from the session: ..."), and the
// comparison of a PyNative and a Graph run made again from their traces when the file stored none
// (a schema-2 file, made here from a file of this schema): equal to the comparison of the whole
// traces; over the events limit or without a trace, one line naming the file says why not.
#include <gtest/gtest.h>

#include "app/session/session_file.h"
#include "profiler/analysis/compare.h"
#include "profiler/analysis/report.h"
#include "tests/app/session_test_util.h"

namespace ms::session {
namespace {

using test::TempDir;

// What schema 2 wrote: no depths, iteration spans, fallback nodes, ranks or snapshot constants, and
// the comparisons' row without its report (the trace tables' digests then no longer hold).
void contents_test_make_schema_2(const std::string& path) {
  test::exec_sql(path,
                 "ALTER TABLE trace_events DROP COLUMN depth; ALTER TABLE trace_tracks DROP COLUMN depths;"
                 "DROP TABLE trace_iterations; DROP TABLE run_fallback_nodes;"
                 "DELETE FROM digests WHERE tbl IN ('trace_iterations', 'run_fallback_nodes');" MS_DROP_SCHEMA_6_SQL
                 "DROP TABLE rank_lanes; DROP TABLE rank_steps; DROP TABLE rank_collectives;"
                 "DELETE FROM digests WHERE tbl IN ('rank_lanes', 'rank_steps', 'rank_collectives');"
                 "UPDATE comparisons SET report = '';"
                 "PRAGMA user_version = 2; PRAGMA journal_mode = DELETE; VACUUM;");
}

size_t contents_test_snapshots(const SessionData& d) {
  size_t n = 0;
  for (const SessionRun& r : d.runs)
    for (const PassOutcome& p : r.outcome.passes) n += p.graph ? 1 : 0;
  return n;
}

TEST(SessionContents, SaysWhatTheSessionHolds) {
  const SessionData& d = test::small_session();
  const size_t snapshots = contents_test_snapshots(d);
  ASSERT_GT(snapshots, 1u);
  EXPECT_EQ(describe_contents(d), "2 runs (PyNative, Graph), 2 traces, " + std::to_string(snapshots) +
                                      " pass snapshots, 1 training curve, the numerics");
  // Rank traces alone: nothing said of runs.
  SessionData ranks;
  ranks.ranks.resize(4);
  ranks.training = d.training;
  EXPECT_EQ(describe_contents(ranks), "4 rank traces, 1 training curve");
  EXPECT_EQ(describe_contents(SessionData{}), "nothing");
  // A trace left in the file counts as a trace, said so.
  SessionData kept;
  kept.runs.push_back(d.runs[1]);
  kept.runs[0].outcome.trace.reset();
  kept.runs[0].outcome.passes.resize(1);
  kept.runs[0].trace_file = "s.modescope";
  EXPECT_EQ(describe_contents(kept), std::string("1 run (Graph), 1 trace (1 kept in the file)") +
                                         (kept.runs[0].outcome.passes[0].graph ? ", 1 pass snapshot" : ""));
}

TEST(SessionContents, ComparisonMadeAgainForAnOldFile) {
  TempDir dir("session_contents");
  const std::string path = dir.file("old.modescope");
  ASSERT_TRUE(save_session(path, test::small_session()).is_ok());
  contents_test_make_schema_2(path);
  const std::string bytes = test::read_bytes(path);
  auto reader = SessionReader::open(path, Verify::Header);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  ASSERT_EQ(reader->schema_version(), 2);
  // What the comparison of the whole traces gives.
  auto whole = reader->load();
  ASSERT_TRUE(whole.has_value()) << whole.status().message();
  ASSERT_TRUE(whole->runs[0].outcome.trace && whole->runs[1].outcome.trace);
  const std::string want =
      prof::to_json(prof::compare_runs(*whole->runs[0].outcome.trace, *whole->runs[1].outcome.trace)).dump();
  ASSERT_EQ(whole->comparisons.size(), 1u);
  EXPECT_TRUE(whole->comparisons[0].report.empty());
  // Both traces loaded: the app compares them itself; nothing to do here.
  EXPECT_TRUE(complete_comparison(*reader, *whole, 1 << 30).note.empty());

  // Both traces left in the file: compared again from them.
  auto light = reader->load(0);
  ASSERT_TRUE(light.has_value()) << light.status().message();
  ASSERT_FALSE(light->runs[0].outcome.trace);
  const int64_t events = *reader->event_count(0) + *reader->event_count(1);
  SessionData over = *light;
  const CompletedComparison made = complete_comparison(*reader, *light, events);
  EXPECT_TRUE(made.compared) << made.note;
  EXPECT_EQ(made.note.rfind(path + ": the session (schema 2) stores no comparison", 0), 0u) << made.note;
  ASSERT_EQ(light->comparisons.size(), 1u);
  EXPECT_EQ(light->comparisons[0].report, want);
  auto back = prof::comparison_from_json(nlohmann::json::parse(light->comparisons[0].report));
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_FALSE(back->rows.empty());
  // Done once: the report is there now.
  EXPECT_TRUE(complete_comparison(*reader, *light, events).note.empty());

  // One event over the limit: not compared, one line naming the file and the events.
  const CompletedComparison skipped = complete_comparison(*reader, over, events - 1);
  EXPECT_FALSE(skipped.compared);
  EXPECT_EQ(skipped.note.rfind(path + ": ", 0), 0u) << skipped.note;
  EXPECT_NE(skipped.note.find(std::to_string(events) + " events"), std::string::npos) << skipped.note;
  EXPECT_EQ(skipped.note.find('\n'), std::string::npos);
  EXPECT_TRUE(over.comparisons[0].report.empty());
  EXPECT_EQ(test::read_bytes(path), bytes);  // opened, never written
}

TEST(SessionContents, ComparisonWithoutATraceSaysSo) {
  TempDir dir("session_contents_notrace");
  const std::string path = dir.file("old.modescope");
  ASSERT_TRUE(save_session(path, test::small_session()).is_ok());
  contents_test_make_schema_2(path);
  test::exec_sql(path, "DELETE FROM trace_info WHERE run = 1;");  // the Graph run's trace gone
  auto reader = SessionReader::open(path, Verify::Header);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  auto light = reader->load(0);
  ASSERT_TRUE(light.has_value()) << light.status().message();
  ASSERT_FALSE(light->runs[0].trace_file.empty());
  ASSERT_TRUE(light->runs[1].trace_file.empty() && !light->runs[1].outcome.trace);
  const CompletedComparison c = complete_comparison(*reader, *light, 1 << 30);
  EXPECT_FALSE(c.compared);
  EXPECT_EQ(c.note, path +
                        ": the session (schema 2) stores no comparison of its PyNative and Graph runs and its "
                        "Graph run has no trace to compare them again");
  EXPECT_TRUE(light->comparisons[0].report.empty());
}

// A file of this schema keeps the report: nothing to make again.
TEST(SessionContents, StoredComparisonIsKept) {
  TempDir dir("session_contents_new");
  const std::string path = dir.file("new.modescope");
  ASSERT_TRUE(save_session(path, test::small_session()).is_ok());
  auto reader = SessionReader::open(path);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  auto light = reader->load(0);
  ASSERT_TRUE(light.has_value()) << light.status().message();
  const CompletedComparison c = complete_comparison(*reader, *light, 1 << 30);
  EXPECT_FALSE(c.compared);
  EXPECT_TRUE(c.note.empty()) << c.note;
  EXPECT_EQ(light->comparisons[0].report, test::small_session().comparisons[0].report);
}

}  // namespace
}  // namespace ms::session
