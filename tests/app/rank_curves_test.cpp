// Each rank's loss curve of a data-parallel training run (session/rank_curves.h): made from the
// rank's train report, named by mode and rank, refused in one line naming the report and the field
// when the report lacks it, and kept by a session with its rank.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "app/session/rank_curves.h"
#include "tests/app/session_test_util.h"

namespace ms::session {
namespace {

nlohmann::json rank_report_json(int rank, const std::string& mode) {
  return {{"mode", mode},
          {"rank", rank},
          {"world_size", 2},
          {"losses", {2.30 - 0.1 * rank, 2.20, 2.05 + 0.01 * rank}},
          {"step_ms_all", {4.0, 1.5, 1.25}}};
}

TEST(RankCurves, ACurveFromEachRanksReport) {
  auto c = rank_curve_from_report(rank_report_json(1, "graph").dump(), "r1.json", {0.05, 0.04});
  ASSERT_TRUE(c.has_value()) << c.status().message();
  EXPECT_EQ(c->name, "Graph rank 1");
  EXPECT_EQ(c->mode, "graph");
  EXPECT_EQ(c->losses, rank_report_json(1, "graph")["losses"].get<std::vector<double>>());
  EXPECT_EQ(c->step_ms, (std::vector<double>{4.0, 1.5, 1.25}));
  EXPECT_EQ(c->lrs, (std::vector<double>{0.05, 0.04, 0.04}));  // one per step
  EXPECT_EQ(rank_of_curve(*c), 1);
  const auto report = nlohmann::json::parse(c->report);
  EXPECT_EQ(report["summary"], "rank 1 of 2");
  EXPECT_EQ(report["losses"], rank_report_json(1, "graph")["losses"]);
  EXPECT_EQ(rank_curve_name("pynative", 0), "PyNative rank 0");
}

TEST(RankCurves, ACurveFromWhatATraceRecorded) {
  const TrainingCurve c = rank_curve("pynative", 3, 4, {2.5, 2.0}, {0.1, 0.1}, {7.0, 2.0});
  EXPECT_EQ(c.name, "PyNative rank 3");
  EXPECT_EQ(c.mode, "pynative");
  EXPECT_EQ(c.losses, (std::vector<double>{2.5, 2.0}));
  EXPECT_EQ(c.step_ms, (std::vector<double>{7.0, 2.0}));
  EXPECT_EQ(rank_of_curve(c), 3);
  EXPECT_EQ(nlohmann::json::parse(c.report)["summary"], "rank 3 of 4");
}

TEST(RankCurves, AReportWithoutWhatACurveNeedsIsRefusedNamingItAndTheField) {
  auto refused = [](nlohmann::json j, const std::string& expect) {
    auto c = rank_curve_from_report(j.dump(), "r0.json");
    ASSERT_FALSE(c.has_value()) << expect;
    EXPECT_EQ(c.status().message().rfind("r0.json: ", 0), 0u) << c.status().message();
    EXPECT_NE(c.status().message().find(expect), std::string::npos) << c.status().message();
  };
  nlohmann::json j = rank_report_json(0, "pynative");
  j.erase("losses");
  refused(j, "'losses'");
  j = rank_report_json(0, "pynative");
  j["step_ms_all"][1] = "slow";
  refused(j, "'step_ms_all' holds a value that is not a number");
  j = rank_report_json(0, "pynative");
  j["step_ms_all"].erase(2);
  refused(j, "'step_ms_all' has 2 steps, 'losses' 3");
  j = rank_report_json(0, "pynative");
  j.erase("rank");
  refused(j, "'rank'");
  auto c = rank_curve_from_report("[1, 2", "r0.json");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.status().message(), "r0.json: not a train report (JSON object)");
}

TEST(RankCurves, ASessionKeepsEachRanksCurve) {
  test::TempDir dir("rank_curves");
  SessionData data;
  for (int r = 0; r < 2; ++r) {
    auto c = rank_curve_from_report(rank_report_json(r, "pynative").dump(), "r.json", {0.05});
    ASSERT_TRUE(c.has_value()) << c.status().message();
    data.training.push_back(*c);
  }
  data.training.push_back({"PyNative", "pynative", {1.0}, {0.1}, {2.0}, R"({"summary":"one process"})"});
  const std::string path = dir.file("r.modescope");
  ASSERT_TRUE(save_session(path, data).is_ok());
  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  ASSERT_EQ(back->training.size(), 3u);
  for (int r = 0; r < 2; ++r) {
    const TrainingCurve& c = back->training[static_cast<size_t>(r)];
    EXPECT_EQ(c.name, "PyNative rank " + std::to_string(r));
    EXPECT_EQ(rank_of_curve(c), r);
    EXPECT_EQ(c.losses, data.training[static_cast<size_t>(r)].losses);
  }
  EXPECT_EQ(rank_of_curve(back->training[2]), -1);  // a one-process curve has no rank
}

}  // namespace
}  // namespace ms::session
