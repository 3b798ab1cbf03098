// Sessions keep the Ranks tab (schema 5): the lanes of a PyNative and a Graph run of two ranks
// come back field by field, and a schema-4 file (written before ranks were kept) opens through the
// migration with none, the file itself unchanged. A session of rank traces alone (no model) saves
// and opens; a model row or a file the app cannot open is one error naming the file and the field.
#include <gtest/gtest.h>

#include "app/session/session_file.h"
#include "tests/app/session_test_util.h"

namespace ms::session {
namespace {

// Rank `rank` of a run: Graph mode compiles before step 1, every step has two all-reduces.
prof::RankLane lane(const std::string& mode, int rank) {
  prof::RankLane l;
  l.rank = rank, l.world_size = 2;
  l.group = "train " + mode;
  l.label = l.group + " rank " + std::to_string(rank) + " of 2";
  const int64_t step = 1'000'000 + rank * 37'000;
  if (mode == "graph") l.compile = {-8 * step, -3 * step, 0};
  l.steps = {{-3 * step, 0, 1}, {0, step, 2}, {step, 2 * step, 3}};
  for (int s = 1; s <= 3; ++s)
    for (int k = 0; k < 2; ++k)
      l.collectives.push_back({2 * s + k, l.steps[static_cast<size_t>(s - 1)].t0 + 100'000 * (k + 1),
                               l.steps[static_cast<size_t>(s - 1)].t0 + 150'000 * (k + 1), s, 4096u << k});
  l.aligned_step = 2;
  l.first_step = mode == "graph" ? 2 : 1, l.last_step = 3;
  l.median_step_ms = static_cast<double>(step) / 1e6;
  l.allreduce_ms_per_step = 0.1 + rank * 0.0125;
  return l;
}

SessionData with_ranks() {
  SessionData d = test::small_session();
  for (const char* mode : {"graph", "pynative"})
    for (int r = 0; r < 2; ++r) d.ranks.push_back(lane(mode, r));
  return d;
}

void expect_same_ranks(const std::vector<prof::RankLane>& a, const std::vector<prof::RankLane>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const prof::RankLane &x = a[i], &y = b[i];
    EXPECT_TRUE(x.rank == y.rank && x.world_size == y.world_size && x.label == y.label && x.group == y.group)
        << "lane " << i;
    EXPECT_TRUE(x.compile.t0 == y.compile.t0 && x.compile.t1 == y.compile.t1) << "lane " << i;
    EXPECT_TRUE(x.aligned_step == y.aligned_step && x.first_step == y.first_step && x.last_step == y.last_step)
        << "lane " << i;
    EXPECT_EQ(x.median_step_ms, y.median_step_ms);
    EXPECT_EQ(x.allreduce_ms_per_step, y.allreduce_ms_per_step);
    ASSERT_EQ(x.steps.size(), y.steps.size());
    for (size_t k = 0; k < x.steps.size(); ++k) {
      EXPECT_TRUE(x.steps[k].t0 == y.steps[k].t0 && x.steps[k].t1 == y.steps[k].t1 &&
                  x.steps[k].step == y.steps[k].step)
          << "lane " << i << " step " << k;
    }
    ASSERT_EQ(x.collectives.size(), y.collectives.size());
    for (size_t k = 0; k < x.collectives.size(); ++k) {
      const prof::RankCollective &p = x.collectives[k], &q = y.collectives[k];
      EXPECT_TRUE(p.sequence == q.sequence && p.t0 == q.t0 && p.t1 == q.t1 && p.step == q.step && p.bytes == q.bytes)
          << "lane " << i << " collective " << k;
    }
  }
}

// `d` saved to `path` and read back (an empty session when either failed, with the failure reported).
SessionData ranks_round_trip(const SessionData& d, const std::string& path) {
  const Status saved = save_session(path, d);
  EXPECT_TRUE(saved.is_ok()) << saved.message();
  auto back = load_session(path);
  EXPECT_TRUE(back.has_value()) << back.status().message();
  return back ? *back : SessionData{};
}

TEST(SessionRanks, TheRanksComeBackAsSaved) {
  test::TempDir dir("session_ranks");
  const SessionData data = with_ranks();
  const SessionData back = ranks_round_trip(data, dir.file("r.modescope"));
  expect_same_ranks(data.ranks, back.ranks);
  test::expect_same_session(data, back);
  // Saved again from what came back: the same bytes' worth of ranks.
  ASSERT_TRUE(save_session(dir.file("r2.modescope"), back).is_ok());
  auto again = load_session(dir.file("r2.modescope"));
  ASSERT_TRUE(again.has_value()) << again.status().message();
  expect_same_ranks(data.ranks, again->ranks);
}

TEST(SessionRanks, AlteredRankRowsAreRefusedNamingTheFile) {
  test::TempDir dir("session_ranks_bad");
  const std::string path = dir.file("r.modescope");
  ASSERT_TRUE(save_session(path, with_ranks()).is_ok());
  test::exec_sql(path, "UPDATE rank_steps SET t1 = t1 + 1 WHERE lane = 1 AND idx = 2");
  auto back = load_session(path);
  ASSERT_FALSE(back.has_value());
  EXPECT_EQ(back.status().message().rfind(path + ": ", 0), 0u) << back.status().message();
}

TEST(SessionRanks, ASchemaFourFileOpensWithoutRanksAndStaysAsItWas) {
  test::TempDir dir("session_ranks_v4");
  const std::string path = dir.file("old.modescope");
  ASSERT_TRUE(save_session(path, with_ranks()).is_ok());
  // What schema 4 wrote: no rank tables.
  test::exec_sql(path, MS_DROP_SCHEMA_6_SQL
                 "DROP TABLE rank_lanes; DROP TABLE rank_steps; DROP TABLE rank_collectives;"
                 "DELETE FROM digests WHERE tbl IN ('rank_lanes', 'rank_steps', 'rank_collectives');"
                 "PRAGMA user_version = 4; PRAGMA journal_mode = DELETE; VACUUM;");
  const std::string bytes = test::read_bytes(path);
  auto reader = SessionReader::open(path);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  EXPECT_EQ(reader->schema_version(), 4);
  auto old = reader->load();
  ASSERT_TRUE(old.has_value()) << old.status().message();
  EXPECT_TRUE(old->ranks.empty());
  EXPECT_EQ(old->runs.size(), 2u);
  EXPECT_EQ(old->training.size(), 1u);
  EXPECT_EQ(test::read_bytes(path), bytes);  // opening wrote nothing
  // Saved from there, it is a schema-5 file that keeps ranks added later.
  SessionData now = *old;
  now.ranks.push_back(lane("graph", 0));
  ASSERT_TRUE(save_session(dir.file("new.modescope"), now).is_ok());
  auto back = load_session(dir.file("new.modescope"));
  ASSERT_TRUE(back.has_value()) << back.status().message();
  expect_same_ranks(now.ranks, back->ranks);
}

// File > Open Ranks with no model, saved: the lanes and each rank's loss curve, nothing else.
SessionData ranks_alone() {
  SessionData d;
  for (int r = 0; r < 2; ++r) d.ranks.push_back(lane("graph", r));
  for (int r = 0; r < 2; ++r) {
    TrainingCurve c;
    c.name = "Graph rank " + std::to_string(r);
    c.mode = "graph";
    c.losses = {2.3 - 0.1 * r, 2.2, 2.1 + 0.01 * r};
    c.report = R"({"rank": )" + std::to_string(r) + R"(, "world_size": 2})";
    d.training.push_back(c);
  }
  return d;
}

void expect_one_line_naming(const Status& s, const std::string& path, const std::string& what) {
  const std::string& m = s.message();
  EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
  EXPECT_NE(m.find(what), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(SessionRanks, RanksAloneWithoutAModelSaveAndOpen) {
  test::TempDir dir("session_ranks_alone");
  const SessionData data = ranks_alone();
  const std::string path = dir.file("ranks.modescope");
  const SessionData back = ranks_round_trip(data, path);
  EXPECT_TRUE(back.model.kind.empty());
  EXPECT_TRUE(back.runs.empty());
  expect_same_ranks(data.ranks, back.ranks);
  ASSERT_EQ(back.training.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.training[i].name, data.training[i].name);
    EXPECT_EQ(back.training[i].losses, data.training[i].losses);
    EXPECT_EQ(back.training[i].report, data.training[i].report);
  }
  EXPECT_TRUE(check_openable(path, back).is_ok()) << check_openable(path, back).message();
  // Saved again from what came back: still openable, the same lanes.
  ASSERT_TRUE(save_session(dir.file("again.modescope"), back).is_ok());
  auto again = load_session(dir.file("again.modescope"));
  ASSERT_TRUE(again.has_value()) << again.status().message();
  expect_same_ranks(data.ranks, again->ranks);
  EXPECT_TRUE(check_openable(dir.file("again.modescope"), *again).is_ok());
}

// What saves of ranks alone wrote before: a model row of kind spec with no source. It reads as no model.
TEST(SessionRanks, AnEmptySpecModelRowReadsAsNoModel) {
  test::TempDir dir("session_ranks_spec");
  const std::string path = dir.file("ranks.modescope");
  ASSERT_TRUE(save_session(path, ranks_alone()).is_ok());
  test::exec_sql(path, "INSERT INTO model VALUES('', 'spec', X'', '', 0)");
  auto reader = SessionReader::open(path, Verify::Header);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  auto back = reader->load();
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_TRUE(back->model.kind.empty());
  EXPECT_EQ(back->ranks.size(), 2u);
  EXPECT_TRUE(check_openable(path, *back).is_ok());
}

TEST(SessionRanks, AModelRowOrAFileTheAppCannotOpenIsOneLineNamingTheField) {
  test::TempDir dir("session_ranks_unopenable");
  const std::string path = dir.file("ranks.modescope");
  ASSERT_TRUE(save_session(path, ranks_alone()).is_ok());
  const std::pair<const char*, const char*> rows[] = {
      {"INSERT INTO model VALUES('m.onnx', 'embedded', X'', 'abc', 10)", "model.bytes"},
      {"INSERT INTO model VALUES('m.onnx', 'onnx', X'00', 'abc', 1)", "model.kind"},
      {"INSERT INTO model VALUES('', 'path', X'', 'abc', 1)", "model.source"},
  };
  for (const auto& [sql, what] : rows) {
    const std::string bad = dir.file(std::string("bad-") + std::to_string(&sql - &rows[0].first) + ".modescope");
    std::filesystem::copy_file(path, bad, std::filesystem::copy_options::overwrite_existing);
    test::exec_sql(bad, sql);
    auto reader = SessionReader::open(bad, Verify::Header);
    ASSERT_TRUE(reader.has_value()) << reader.status().message();
    auto got = reader->load();
    ASSERT_FALSE(got.has_value()) << sql;
    expect_one_line_naming(got.status(), bad, what);
  }
  // Runs without their model, and a file with nothing to open: check_openable names the tables.
  SessionData runs_only = test::small_session();
  runs_only.model = SessionModel{};
  expect_one_line_naming(check_openable(path, runs_only), path, "table model is empty, but table runs");
  expect_one_line_naming(check_openable(path, SessionData{}), path, "table model is empty");
  EXPECT_FALSE(check_openable(path, SessionData{}).is_ok());
}

}  // namespace
}  // namespace ms::session
