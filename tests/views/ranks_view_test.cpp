// The Ranks view's data from per-rank training traces as `train --profile 'DIR{rank}'` writes them
// (imported from Chrome JSON): steps and collectives per rank from the first step, the median step
// time, the all-reduce wait per step, the collectives of one sequence lined up, the straggler; and
// the view renders and summarizes them; each step's loss and lr from the trace.
#include <gtest/gtest.h>

#include <QImage>

#include "profiler/io/chrome_trace.h"
#include "tests/views/test_graphs.h"
#include "views/timeline/ranks_view.h"

namespace ms::views {
namespace {

// How one rank's run went: `steps` steps of `step_us` (step 1 `step1_us` when given), each with two
// all-reduces that start `late_us` later on this rank; Graph mode compiles for `compile_us` first
// and its step 1's second all-reduce waits `step1_wait_us` longer.
struct RankRun {
  int rank = 0;
  double step_us = 1000, late_us = 0;
  std::string mode = "pynative";
  double compile_us = 0, step1_us = 0, step1_wait_us = 0;
  int steps = 3;
};

std::string rank_trace_json(const RankRun& r) {
  const std::string pid = std::to_string(r.rank + (r.mode == "graph" ? 11 : 1));
  std::string ev = R"({"ph":"M","pid":)" + pid + R"(,"name":"process_name","args":{"name":"train )" + r.mode +
                   " rank " + std::to_string(r.rank) + R"( of 2"}},{"ph":"M","pid":)" + pid +
                   R"(,"tid":1,"name":"thread_name","args":{"name":"steps"}},{"ph":"M","pid":)" + pid +
                   R"(,"tid":2,"name":"thread_name","args":{"name":"collectives"}})";
  if (r.compile_us > 0)
    ev += R"(,{"ph":"X","pid":)" + pid + R"(,"tid":1,"ts":0,"dur":)" + std::to_string(r.compile_us) +
          R"(,"name":"trace + compile step"})";
  double t = r.compile_us;
  for (int s = 1; s <= r.steps; ++s) {
    const double dur = s == 1 && r.step1_us > 0 ? r.step1_us : r.step_us;
    ev += R"(,{"ph":"X","pid":)" + pid + R"(,"tid":1,"ts":)" + std::to_string(t) + R"(,"dur":)" + std::to_string(dur) +
          R"(,"name":"step )" + std::to_string(s) + R"("})";
    for (int k = 0; k < 2; ++k) {
      const int seq = 2 * s + k;
      const double start = t + 100 + 300 * k + r.late_us,
                   end = t + 400 + 300 * k + (s == 1 && k == 1 ? r.step1_wait_us : 0);
      ev += R"(,{"ph":"X","pid":)" + pid + R"(,"tid":2,"ts":)" + std::to_string(start) + R"(,"dur":)" +
            std::to_string(end - start) + R"(,"name":"all-reduce #)" + std::to_string(seq) +
            R"(","args":{"sequence":)" + std::to_string(seq) + R"(,"bytes":4096,"step":)" + std::to_string(s) + "}}";
    }
    t += dur;
  }
  return R"({"traceEvents":[)" + ev + R"(],"otherData":{"rank":)" + std::to_string(r.rank) + R"(,"world_size":2}})";
}

std::string rank_trace_json(int rank, double step_us, double late_us) {
  return rank_trace_json(RankRun{.rank = rank, .step_us = step_us, .late_us = late_us});
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
    EXPECT_EQ(l.aligned_step, 2);  // from step 2; step 1 before it
    EXPECT_EQ(l.steps[1].t0, 0);
    EXPECT_EQ(l.steps[0].t0, -1'000'000);
    EXPECT_EQ(l.compile.t1, l.compile.t0);  // PyNative: no compile, but step 1 is still warm-up
    EXPECT_EQ(l.first_step, 2);
    EXPECT_NEAR(warmup_step_ms(l), 1.0, 1e-9);
    EXPECT_EQ(l.last_step, 3);
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
  EXPECT_EQ(d.straggler("train pynative"), 1);
  EXPECT_EQ(d.stragglers.size(), 1u);
  EXPECT_EQ(d.start_ns, -1'000'000);
  ASSERT_EQ(d.end_spread_ns.size(), 6u);
  for (const auto& [key, spread] : d.end_spread_ns) EXPECT_EQ(spread, 0) << key.second;  // they end together
  for (const auto& [key, rank] : d.last_to_start) EXPECT_EQ(rank, 1) << key.second;
  EXPECT_EQ(d.lanes[0].group, "train pynative");
  RanksView v;
  v.resize(1000, 300);
  const QImage empty = v.grab().toImage();
  v.set_data(d);
  EXPECT_NE(v.grab().toImage(), empty);
  EXPECT_TRUE(v.summary_text().contains(QStringLiteral("train pynative · straggler: rank 1")));
  EXPECT_TRUE(v.summary_text().contains(
      QStringLiteral("train pynative · rank 0: step 1.00 ms (median), all-reduce wait 0.60 ms/step over steps 2–3, 6 "
                     "collectives (warm-up step 1: 1.00 ms)")))
      << v.summary_text().toStdString();
}

// A PyNative and a Graph run of the same two ranks: in PyNative rank 1 starts its all-reduces late,
// in Graph rank 0 does.
RanksData two_modes() {
  std::vector<RankLane> lanes;
  for (int r = 0; r < 2; ++r) {
    lanes.push_back(
        lane_of(rank_trace_json(RankRun{
                    .rank = r, .late_us = r == 1 ? 150.0 : 0.0, .step1_us = 4000, .step1_wait_us = 1000, .steps = 5}),
                r));
    lanes.push_back(lane_of(rank_trace_json(RankRun{.rank = r,
                                                    .late_us = r == 0 ? 50.0 : 0.0,
                                                    .mode = "graph",
                                                    .compile_us = 5000,
                                                    .step1_us = 3000,
                                                    .step1_wait_us = 1000,
                                                    .steps = 3}),
                            r));
  }
  return ranks_data(std::move(lanes));
}

TEST(RanksView, EachModeNamesItsOwnStraggler) {
  test::qt_app();
  const RanksData d = two_modes();
  ASSERT_EQ(d.lanes.size(), 4u);
  EXPECT_EQ(d.lanes[0].group, "train graph");
  EXPECT_EQ(d.lanes[2].group, "train pynative");
  ASSERT_EQ(d.stragglers.size(), 2u);
  // Counted over both modes together rank 1 would win (10 PyNative collectives against 4 Graph ones).
  EXPECT_EQ(d.straggler("train pynative"), 1);
  EXPECT_EQ(d.straggler("train graph"), 0);
  EXPECT_EQ(d.straggler("train other"), -1);
  RanksView v;
  v.set_data(d);
  const QString text = v.summary_text();
  EXPECT_TRUE(text.contains(QStringLiteral("train pynative · straggler: rank 1"))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("train graph · straggler: rank 0"))) << text.toStdString();
}

TEST(RanksView, LanesAlignAfterTheCompileStepAndItsFiguresLeaveItOut) {
  test::qt_app();
  const RanksData d = two_modes();
  const RankLane& g = d.lanes[0];  // train graph rank 0
  ASSERT_EQ(g.steps.size(), 3u);
  EXPECT_EQ(g.aligned_step, 2);
  EXPECT_EQ(g.steps[1].t0, 0);
  EXPECT_EQ(g.steps[0].t0, -3'000'000);  // step 1 (after the compile) still there, before 0
  EXPECT_EQ(g.compile.t0, -8'000'000);
  EXPECT_EQ(g.compile.t1, -3'000'000);
  EXPECT_EQ(d.start_ns, -8'000'000);
  EXPECT_EQ(g.first_step, 2);
  EXPECT_EQ(g.last_step, 3);
  // Steps 2-3: 1 ms each (with step 1, 3 ms, the median would still be 1 ms but the wait not):
  // rank 0 starts 50 µs late, so waits 250 + 250 µs per step; step 1's extra 1 ms is left out.
  EXPECT_NEAR(g.median_step_ms, 1.0, 1e-9);
  EXPECT_NEAR(g.allreduce_ms_per_step, 0.5, 1e-9);
  // train pynative rank 0: no compile, but its step 1 (4 ms, 1 ms more all-reduce wait) is warm-up
  // too, left out the same way (with it the wait would be 0.8 ms/step).
  const RankLane& p = d.lanes[2];
  EXPECT_EQ(p.aligned_step, 2);
  EXPECT_EQ(p.first_step, 2);
  EXPECT_EQ(p.last_step, 5);
  EXPECT_NEAR(p.allreduce_ms_per_step, 0.6, 1e-9);
  EXPECT_NEAR(p.median_step_ms, 1.0, 1e-9);
  EXPECT_NEAR(warmup_step_ms(p), 4.0, 1e-9);
  EXPECT_NEAR(warmup_step_ms(g), 3.0, 1e-9);
  // One step only: it stays the aligned step and the figures keep it.
  const RankLane one = lane_of(rank_trace_json(RankRun{.mode = "graph", .compile_us = 5000, .steps = 1}), 0);
  EXPECT_EQ(one.aligned_step, 1);
  EXPECT_EQ(one.steps[0].t0, 0);
  EXPECT_EQ(one.compile.t0, -5'000'000);
  EXPECT_EQ(one.first_step, 1);
  EXPECT_NEAR(one.median_step_ms, 1.0, 1e-9);
  EXPECT_EQ(warmup_step_ms(one), 0.0);
  // Drawn: the compile before step 1, in its own grey, and the summary says which steps count.
  RanksView v;
  v.resize(1000, 300);
  v.set_data(d);
  const QImage img = v.grab().toImage();
  const double w = 1000 - RanksView::kLabel - 8, span = (static_cast<double>(d.span_ns - d.start_ns)) * 1.01;
  const double x = RanksView::kLabel + (static_cast<double>((g.compile.t0 + g.compile.t1) / 2 - d.start_ns)) / span * w;
  const int y = RanksView::kAxis + 6 + 4 + 11;
  EXPECT_EQ(img.pixelColor(static_cast<int>(x), y), QColor(0x9a, 0x9a, 0x9a));
  EXPECT_TRUE(v.summary_text().contains(QStringLiteral(
      "train graph · rank 0: step 1.00 ms (median), all-reduce wait 0.50 ms/step over steps 2–3, 6 collectives "
      "(warm-up step 1: 3.00 ms, after the compile)")))
      << v.summary_text().toStdString();
}

TEST(RanksView, EachStepsLossAndLrComeFromTheTrace) {
  // As train --profile writes them: "step N" on the steps track with the loss and lr as arguments.
  auto step = [](int n, const std::string& args) {
    return R"(,{"ph":"X","pid":1,"tid":1,"ts":)" + std::to_string(n * 10) + R"(,"dur":5,"name":"step )" +
           std::to_string(n) + R"(","args":)" + args + "}";
  };
  const std::string head = R"({"traceEvents":[{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"steps"}})";
  auto t = prof::import_chrome_trace_string(head + step(2, R"({"loss":2.25,"lr":0.05})") +
                                            step(1, R"({"loss":2.5,"lr":1e-05})") +
                                            step(3, R"({"loss":-1.5e-3,"lr":0.04})") + "]}");
  ASSERT_TRUE(t.has_value()) << t.status().message();
  RankStepValues v = rank_step_values(*t->trace);
  EXPECT_EQ(v.losses, (std::vector<double>{2.5, 2.25, -1.5e-3}));  // by step, not by order in the file
  EXPECT_EQ(v.lrs, (std::vector<double>{1e-05, 0.05, 0.04}));
  // A step without a readable loss ends the curve there; a trace without losses has none.
  t = prof::import_chrome_trace_string(head + step(1, R"({"loss":2.5})") + step(2, R"({"loss":"high"})") +
                                       step(3, R"({"loss":2.0})") + "]}");
  ASSERT_TRUE(t.has_value());
  v = rank_step_values(*t->trace);
  EXPECT_EQ(v.losses, (std::vector<double>{2.5}));
  EXPECT_EQ(v.lrs, (std::vector<double>{0.0}));
  t = prof::import_chrome_trace_string(rank_trace_json(0, 1000, 0));
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(rank_step_values(*t->trace).losses.empty());
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
