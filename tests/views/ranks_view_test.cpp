// The Ranks view's data from per-rank training traces as `train --profile 'DIR{rank}'` writes them
// (imported from Chrome JSON): steps and collectives per rank from the first step, the median step
// time, the all-reduce wait per step, the collectives of one sequence lined up, the straggler; and
// the view renders and summarizes them.
#include <gtest/gtest.h>

#include <QImage>

#include "profiler/io/chrome_trace.h"
#include "tests/views/test_graphs.h"
#include "views/timeline/ranks_view.h"

namespace ms::views {
namespace {

// Rank `rank` of 2: a compile slice, then 3 steps of `step_us`, each with two all-reduces that start
// `late_us` later on this rank.
std::string rank_trace_json(int rank, double step_us, double late_us) {
  const int pid = rank + 1;
  std::string ev = R"({"ph":"M","pid":)" + std::to_string(pid) +
                   R"(,"name":"process_name","args":{"name":"train pynative rank )" + std::to_string(rank) +
                   R"( of 2"}},{"ph":"M","pid":)" + std::to_string(pid) +
                   R"(,"tid":1,"name":"thread_name","args":{"name":"steps"}},{"ph":"M","pid":)" + std::to_string(pid) +
                   R"(,"tid":2,"name":"thread_name","args":{"name":"collectives"}},{"ph":"X","pid":)" +
                   std::to_string(pid) + R"(,"tid":1,"ts":0,"dur":500,"name":"trace + compile step"})";
  double t = 500;
  for (int s = 1; s <= 3; ++s) {
    ev += R"(,{"ph":"X","pid":)" + std::to_string(pid) + R"(,"tid":1,"ts":)" + std::to_string(t) + R"(,"dur":)" +
          std::to_string(step_us) + R"(,"name":"step )" + std::to_string(s) + R"("})";
    for (int k = 0; k < 2; ++k) {
      const int seq = 2 * s + k;
      const double start = t + 100 + 300 * k + late_us, end = t + 400 + 300 * k;
      ev += R"(,{"ph":"X","pid":)" + std::to_string(pid) + R"(,"tid":2,"ts":)" + std::to_string(start) + R"(,"dur":)" +
            std::to_string(end - start) + R"(,"name":"all-reduce #)" + std::to_string(seq) +
            R"(","args":{"sequence":)" + std::to_string(seq) + R"(,"bytes":4096,"step":)" + std::to_string(s) + "}}";
    }
    t += step_us;
  }
  return R"({"traceEvents":[)" + ev + R"(],"otherData":{"rank":)" + std::to_string(rank) + R"(,"world_size":2}})";
}

RankLane lane_of(const std::string& json, int fallback) {
  auto t = prof::import_chrome_trace_string(json);
  EXPECT_TRUE(t.has_value()) << t.status().message();
  auto lane = rank_lane(*t->trace, fallback, "test");
  EXPECT_TRUE(lane.has_value()) << lane.status().message();
  return lane ? *lane : RankLane{};
}

TEST(RanksView, LanesFromRankTracesAlignedWithWaitsAndStraggler) {
  test::qt_app();
  // Listed out of order: the lanes come back by rank.
  RanksData d = ranks_data({lane_of(rank_trace_json(1, 1000, 150), 0), lane_of(rank_trace_json(0, 1000, 0), 1)});
  ASSERT_EQ(d.lanes.size(), 2u);
  EXPECT_EQ(d.lanes[0].rank, 0);
  EXPECT_EQ(d.lanes[1].rank, 1);
  EXPECT_EQ(d.lanes[1].world_size, 2);
  for (const RankLane& l : d.lanes) {
    ASSERT_EQ(l.steps.size(), 3u);
    EXPECT_EQ(l.steps[0].t0, 0);  // from the first step, not the compile
    EXPECT_EQ(l.steps[2].step, 3);
    EXPECT_NEAR(l.median_step_ms, 1.0, 1e-9);
    ASSERT_EQ(l.collectives.size(), 6u);
    EXPECT_EQ(l.collectives[0].sequence, 2);
    EXPECT_EQ(l.collectives[0].step, 1);
    EXPECT_EQ(l.collectives[5].step, 3);
    EXPECT_EQ(l.collectives[0].bytes, 4096u);
  }
  // Rank 0 waits 300 µs per all-reduce, rank 1 (150 µs late) 150: two per step.
  EXPECT_NEAR(d.lanes[0].allreduce_ms_per_step, 0.6, 1e-9);
  EXPECT_NEAR(d.lanes[1].allreduce_ms_per_step, 0.3, 1e-9);
  EXPECT_EQ(d.straggler, 1);
  ASSERT_EQ(d.end_spread_ns.size(), 6u);
  for (const auto& [key, spread] : d.end_spread_ns) EXPECT_EQ(spread, 0) << key.second;  // they end together
  for (const auto& [key, rank] : d.last_to_start) EXPECT_EQ(rank, 1) << key.second;
  EXPECT_EQ(d.lanes[0].group, "train pynative");
  RanksView v;
  v.resize(1000, 300);
  const QImage empty = v.grab().toImage();
  v.set_data(d);
  EXPECT_NE(v.grab().toImage(), empty);
  EXPECT_TRUE(v.summary_text().contains(QStringLiteral("straggler: rank 1")));
  EXPECT_TRUE(v.summary_text().contains(
      QStringLiteral("train pynative · rank 0: step 1.00 ms (median), all-reduce wait 0.60 ms/step")))
      << v.summary_text().toStdString();
}

TEST(RanksView, ATraceWithoutStepsIsRefusedNamingTheFile) {
  auto t =
      prof::import_chrome_trace_string(R"({"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":5,"name":"a"}]})");
  ASSERT_TRUE(t.has_value());
  auto lane = rank_lane(*t->trace, 0, "r.json");
  ASSERT_FALSE(lane.has_value());
  EXPECT_NE(lane.status().message().find("r.json: no 'steps' track"), std::string::npos);
}

}  // namespace
}  // namespace ms::views
