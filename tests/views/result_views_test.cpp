// The result views on generated traces: timeline draw lists (culling, folding), range statistics,
// the memory heatmap's panels, the comparison table under QAbstractItemModelTester, offscreen
// renders checked not blank, and the timeline's frame time on a million events.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QImage>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include <chrono>
#include <cstdio>

#include "profiler/analysis/compare.h"
#include "profiler/io/chrome_trace.h"
#include "tests/views/result_traces.h"
#include "tests/views/test_graphs.h"
#include "views/compare/compare_model.h"
#include "views/compare/compare_view.h"
#include "views/memory/memory_view.h"
#include "views/timeline/timeline_view.h"

namespace ms::views {
namespace {

class ResultViews : public ::testing::Test {
 protected:
  void SetUp() override { test::qt_app(); }
};

// Distinct colours in a grab: a blank (single-colour) render has one.
int distinct_colours(const QImage& img) {
  QSet<QRgb> seen;
  for (int y = 0; y < img.height(); y += 3)
    for (int x = 0; x < img.width(); x += 3) {
      seen.insert(img.pixel(x, y));
      if (seen.size() > 64) return static_cast<int>(seen.size());
    }
  return static_cast<int>(seen.size());
}

TEST_F(ResultViews, TimelineRowsNestAndStackRuns) {
  TimelineModel m;
  m.set_runs({{"PyNative", test::generated_trace(false)}, {"Graph", test::generated_trace(true)}});
  ASSERT_EQ(m.runs().size(), 2u);
  // Per run: host depth 0 (iterations) and 1 (ops), kernels, one counter row.
  int run0 = 0, counters = 0;
  for (const auto& r : m.rows()) {
    run0 += r.run == 0;
    counters += r.counter;
  }
  EXPECT_EQ(run0, 4);
  EXPECT_EQ(counters, 2);
  // Both runs start at 0 on the shared scale.
  for (const auto& r : m.rows()) {
    if (!r.starts.empty()) {
      EXPECT_GE(r.starts.front(), 0);
    }
  }
}

TEST_F(ResultViews, TimelineFoldsSubPixelEventsAndKeepsWideOnes) {
  TimelineModel m;
  m.set_runs({{"big", test::large_trace(200000)}});
  // Whole trace on 1000 px: 100k events per track fold into at most about a pixel each.
  DrawList zoomed_out = m.build(0, static_cast<double>(m.span_ns()), 1000);
  uint64_t folded = 0;
  for (const auto& it : zoomed_out.items) folded += it.count;
  EXPECT_EQ(folded, 200000u);
  EXPECT_LE(zoomed_out.items.size(), 2u * 1001u);
  // 10 µs on 1000 px: every event is wider than a pixel and drawn alone; culling visits few.
  DrawList zoomed_in = m.build(50'000'000, 50'010'000, 1000);
  ASSERT_FALSE(zoomed_in.items.empty());
  for (const auto& it : zoomed_in.items) EXPECT_EQ(it.count, 1u);
  EXPECT_LT(zoomed_in.visited, 100u);
}

TEST_F(ResultViews, TimelineRangeStatsShareByOpType) {
  TimelineModel m;
  m.set_runs({{"PyNative", test::generated_trace(false)}, {"Graph", test::generated_trace(true)}});
  const RangeStats st = m.stats(0, m.span_ns());
  ASSERT_EQ(st.per_run.size(), 2u);
  double share = 0;
  int64_t convs = 0;
  for (const auto& o : st.per_run[0]) {
    share += o.share;
    if (o.name == "Conv") convs = o.count;
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_EQ(convs, 4);  // two per iteration, two iterations
  bool fused = false;
  for (const auto& o : st.per_run[1]) fused |= o.name == "FusedConv";
  EXPECT_TRUE(fused);
}

TEST_F(ResultViews, TimelineRendersZoomsAndSelects) {
  TimelineView v;
  v.resize(1200, 500);
  v.set_runs({{"PyNative", test::generated_trace(false)}, {"Graph", test::generated_trace(true)}});
  const QImage img = v.grab().toImage();
  EXPECT_GT(distinct_colours(img), 8);
  TimelineCanvas* c = v.canvas();
  const double span = c->t1() - c->t0();
  c->zoom_at(TimelineCanvas::kLabel + c->time_width() / 2, 0.5);
  EXPECT_NEAR(c->t1() - c->t0(), span / 2, span * 1e-9);
  v.select_range(0, v.model().span_ns());
  EXPECT_TRUE(v.stats_text().contains(QStringLiteral("Conv")));
  v.set_selected_node(1);
  QTemporaryDir dir;
  EXPECT_TRUE(v.export_png(dir.filePath(QStringLiteral("t.png"))));
}

TEST_F(ResultViews, MemoryPanelsFromTraceAndPlan) {
  auto eager = test::generated_trace(false);
  const MemPanel pool = memory_panel_from_trace(*eager, "PyNative");
  EXPECT_FALSE(pool.arena);
  EXPECT_EQ(pool.blocks.size(), 6u);  // the first iteration only
  EXPECT_GT(pool.peak_bytes, 0u);
  EXPECT_GE(pool.size_bytes, pool.peak_bytes);
  // Scattered addresses are stacked: three regions of at most 12 KiB each.
  EXPECT_LE(pool.size_bytes, 3u * 12288u);
  for (const auto& b : pool.blocks) {
    EXPECT_LT(b.x0, b.x1);
    EXPECT_FALSE(b.op.empty());
  }
  runtime::MemoryPlan plan;
  plan.arena_bytes = 8192;
  plan.lower_bound = 6144;
  plan.slots.push_back({"a", ir::NodeId{1}, 0, 4096, 0, 1, "", 0});
  plan.slots.push_back({"b", ir::NodeId{3}, 4096, 2048, 1, 2, "", 0});
  plan.slots.push_back({"c", ir::NodeId{4}, 0, 4096, 2, 3, "", 0});
  auto graph = test::generated_trace(true);
  const MemPanel planned = memory_panel_from_plan(plan, graph.get(), "planned");
  EXPECT_TRUE(planned.arena);
  EXPECT_EQ(planned.size_bytes, 8192u);
  EXPECT_EQ(planned.lower_bound, 6144u);
  EXPECT_EQ(planned.peak_bytes, 6144u);
  EXPECT_EQ(planned.blocks[0].op, "Conv");
  EXPECT_EQ(planned.blocks[0].reuse, 2);  // offset 0 holds a and c
}

TEST_F(ResultViews, MemoryViewRendersAndHovers) {
  MemoryView v;
  v.resize(1200, 600);
  v.set_panels({memory_panel_from_trace(*test::generated_trace(false), "PyNative · recorded"),
                memory_panel_from_trace(*test::generated_trace(true), "Graph · recorded")});
  EXPECT_GT(distinct_colours(v.grab().toImage()), 8);
  // Some point of the first heatmap hits a block.
  bool hit = false;
  for (int y = 30; y < 400 && !hit; y += 2)
    for (int x = 80; x < 600 && !hit; x += 4) hit = v.block_at(QPoint(x, y)) != nullptr;
  EXPECT_TRUE(hit);
  v.set_color_by(MemoryView::ColorBy::Reuse);
  v.set_selected_node(1);
  EXPECT_GT(distinct_colours(v.grab().toImage()), 4);
}

TEST_F(ResultViews, CompareModelSortsFiltersAndExports) {
  const prof::Comparison c = prof::compare_runs(*test::generated_trace(false), *test::generated_trace(true));
  ASSERT_FALSE(c.rows.empty());
  CompareModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_rows(c.rows);
  QSortFilterProxyModel proxy;
  QAbstractItemModelTester proxy_tester(&proxy, QAbstractItemModelTester::FailureReportingMode::Fatal);
  proxy.setSourceModel(&model);
  proxy.setSortRole(Qt::UserRole);
  proxy.sort(CompareModel::SavingMs, Qt::DescendingOrder);
  for (int r = 1; r < proxy.rowCount(); ++r) {
    EXPECT_GE(proxy.index(r - 1, CompareModel::SavingMs).data(Qt::UserRole).toDouble(),
              proxy.index(r, CompareModel::SavingMs).data(Qt::UserRole).toDouble());
  }
  proxy.setFilterKeyColumn(-1);
  proxy.setFilterFixedString(QStringLiteral("MaxPool"));
  EXPECT_EQ(proxy.rowCount(), 1);
  EXPECT_GE(model.row_of_node(2), 0);  // Relu 2 is in the fused group
  const QString csv = model.to_csv();
  EXPECT_EQ(csv.count('\n'), model.rowCount() + 1);
  EXPECT_TRUE(csv.startsWith(QStringLiteral("Group,")));
}

TEST_F(ResultViews, CompareViewSummaryChartAndSelection) {
  CompareView v;
  v.resize(1200, 600);
  v.set_comparison(prof::compare_runs(*test::generated_trace(false), *test::generated_trace(true)));
  EXPECT_TRUE(v.summary_text().contains(QStringLiteral("Verdict")));
  EXPECT_FALSE(v.chart()->bars().empty());
  v.set_selected_node(2);
  ASSERT_TRUE(v.table()->currentIndex().isValid() || !v.table()->selectionModel()->selectedRows().isEmpty());
  v.set_filter(QStringLiteral("Gemm"));
  EXPECT_EQ(v.proxy()->rowCount(), 1);
  EXPECT_GT(distinct_colours(v.grab().toImage()), 8);
  QTemporaryDir dir;
  EXPECT_TRUE(v.export_csv(dir.filePath(QStringLiteral("c.csv"))));
}

TEST_F(ResultViews, TimelineShowsImportedForeignTraces) {
  // A Chrome trace from another producer: nested X events on one thread, a counter.
  const std::string json = R"({"traceEvents":[
    {"ph":"X","name":"step","pid":1,"tid":7,"ts":0,"dur":100},
    {"ph":"X","name":"aten::conv2d","pid":1,"tid":7,"ts":10,"dur":40},
    {"ph":"X","name":"aten::relu","pid":1,"tid":7,"ts":60,"dur":20},
    {"ph":"C","name":"memory","pid":1,"tid":7,"ts":10,"args":{"bytes":1024}}]})";
  auto imported = prof::import_chrome_trace_string(json);
  ASSERT_TRUE(imported) << imported.status().message();
  TimelineView v;
  v.resize(900, 300);
  v.set_runs({{"foreign", imported->trace}});
  int event_rows = 0;
  for (const auto& r : v.model().rows()) event_rows += !r.counter;
  EXPECT_EQ(event_rows, 2);  // step, and the two ops nested under it
  EXPECT_EQ(v.model().event_count(), 3u);
  EXPECT_FALSE(v.canvas()->draw_list().items.empty());
  v.select_range(0, v.model().span_ns());
  EXPECT_TRUE(v.stats_text().contains(QStringLiteral("aten::conv2d")));
  // Our own traces survive export and import.
  auto again = prof::import_chrome_trace_string(prof::to_chrome_json(*test::generated_trace(true)));
  ASSERT_TRUE(again);
  v.set_runs({{"Graph", again->trace}});
  EXPECT_GT(v.model().event_count(), 0u);
}

// Linked selection: each view reports the node under a click and outlines what it is told to select.
TEST_F(ResultViews, ViewsReportAndTakeTheSelectedNode) {
  auto eager = test::generated_trace(false), graph = test::generated_trace(true);
  MemoryView mem;
  mem.resize(1200, 600);
  mem.set_panels({memory_panel_from_trace(*eager, "PyNative")});
  QSignalSpy mem_spy(&mem, &MemoryView::node_selected);
  QPoint hit;
  for (int y = 50; y < 400 && hit.isNull(); y += 2)
    for (int x = 80; x < 1100 && hit.isNull(); x += 3)
      if (mem.block_at(QPoint(x, y))) hit = QPoint(x, y);
  ASSERT_FALSE(hit.isNull());
  QTest::mouseClick(&mem, Qt::LeftButton, {}, hit);
  ASSERT_EQ(mem_spy.count(), 1);
  EXPECT_EQ(mem_spy.at(0).at(0).value<uint64_t>(), mem.block_at(hit)->origins.front());
  EXPECT_EQ(mem.selected_node(), mem.block_at(hit)->origins.front());

  TimelineView tl;
  tl.resize(1200, 400);
  tl.set_runs({{"Graph", graph}});
  QSignalSpy tl_spy(&tl, &TimelineView::node_selected);
  // Click the middle of the first op event of the first row that holds ops.
  TimelineCanvas* c = tl.canvas();
  c->resize(1200, 360);
  bool clicked = false;
  for (int r = 0; r < static_cast<int>(tl.model().rows().size()) && !clicked; ++r)
    for (uint32_t ev : tl.model().rows()[static_cast<size_t>(r)].events) {
      const prof::Event& e = graph->events[ev];
      if (e.kind != prof::EventKind::Op) continue;
      const double t = static_cast<double>(e.ts_ns - graph->begin_ns()) + static_cast<double>(e.dur_ns) / 2;
      const int x = static_cast<int>(TimelineCanvas::kLabel + (t - c->t0()) / (c->t1() - c->t0()) * c->time_width());
      for (int y = TimelineCanvas::kAxis; y < c->height() && !clicked; y += 2)
        if (c->row_at(y) == r) {
          QTest::mouseClick(c, Qt::LeftButton, {}, QPoint(x, y + 3));
          clicked = true;
        }
      break;
    }
  ASSERT_TRUE(clicked);
  ASSERT_EQ(tl_spy.count(), 1);
  EXPECT_NE(tl_spy.at(0).at(0).value<uint64_t>(), 0u);

  CompareView cmp;
  cmp.set_comparison(prof::compare_runs(*eager, *graph));
  QSignalSpy cmp_spy(&cmp, &CompareView::node_selected);
  cmp.table()->selectRow(0);
  ASSERT_EQ(cmp_spy.count(), 1);
  // Told to select a node, the table selects its row without echoing the signal.
  cmp.set_selected_node(6);
  EXPECT_EQ(cmp_spy.count(), 1);
}

// Benchmark: step one (cull + fold) and a full paint of a 1M-event trace, zoomed out and in.
TEST_F(ResultViews, TimelineFrameTimeOnAMillionEvents) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  auto trace = test::large_trace(1'000'000);
  TimelineView v;
  v.resize(1600, 600);
  v.set_runs({{"1M events", trace}});
  const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  QImage img(1600, 600, QImage::Format_ARGB32_Premultiplied);
  auto frame = [&] {
    const auto s = clock::now();
    v.canvas()->render(&img);
    return std::chrono::duration<double, std::milli>(clock::now() - s).count();
  };
  frame();
  double out_ms = 1e9, in_ms = 1e9;
  for (int i = 0; i < 3; ++i) out_ms = std::min(out_ms, frame());
  v.canvas()->set_window(2e8, 2e8 + 2e6);
  for (int i = 0; i < 3; ++i) in_ms = std::min(in_ms, frame());
  std::printf("timeline, 1M events: load %.0f ms, frame %.1f ms zoomed out, %.1f ms zoomed in\n", load_ms, out_ms,
              in_ms);
  // Generous bounds: the target is 16 ms on a desktop, this runs beside other builds.
  EXPECT_LT(out_ms, 250);
  EXPECT_LT(in_ms, 250);
}

// Not run by default (memory and about 10 s): the 10M-event figures. Run with
// --gtest_also_run_disabled_tests --gtest_filter='*TenMillion*'.
long rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  std::fclose(f);
  return kib;
}

TEST_F(ResultViews, DISABLED_TimelineLoadsTenMillionEvents) {
  using clock = std::chrono::steady_clock;
  const long before = rss_kib();
  const auto t0 = clock::now();
  TimelineView v;
  v.resize(1600, 600);
  v.set_runs({{"10M events", test::large_trace(10'000'000)}});
  const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  QImage img(1600, 600, QImage::Format_ARGB32_Premultiplied);
  const auto f0 = clock::now();
  v.canvas()->render(&img);
  const double frame_ms = std::chrono::duration<double, std::milli>(clock::now() - f0).count();
  std::printf("timeline, 10M events: generate+load %.0f ms, peak RSS +%.0f MiB, first frame %.0f ms\n", load_ms,
              static_cast<double>(rss_kib() - before) / 1024.0, frame_ms);
  EXPECT_LT(rss_kib() - before, 1536L * 1024);
}

}  // namespace
}  // namespace ms::views
