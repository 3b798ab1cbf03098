// Widget tests on the offscreen platform: the graph view, search, inspector, export; the job
// tracker's delivery rules; item models under QAbstractItemModelTester.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QImage>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "tests/views/test_graphs.h"
#include "views/graph/graph_view.h"
#include "views/graph/inspector.h"
#include "views/graph/search_bar.h"
#include "views/jobs/job_tracker.h"
#include "views/models/node_info_model.h"
#include "views/models/pass_list_model.h"

namespace ms::views {
namespace {

struct Fixture : ::testing::Test {
  void SetUp() override { test::qt_app(); }
};

using GraphViewTest = Fixture;
using JobTrackerTest = Fixture;
using ModelsTest = Fixture;

// Waits until `done()` or the timeout, serving events.
template <class F> bool wait_for(F done, int ms = 10000) { return QTest::qWaitFor(done, ms); }

TEST_F(GraphViewTest, ShowsEveryVisibleItemAndSelects) {
  JobTracker jobs;
  GraphView view(&jobs);
  view.resize(900, 700);
  view.show();
  auto model = GraphModel::build(test::scoped_graph());
  auto prepared = prepare_view(*model, {});
  ASSERT_TRUE(prepared);
  const size_t items = prepared->visible.items.size();
  view.show_prepared(model, std::move(*prepared));
  int boxes = 0;
  for (QGraphicsItem* it : view.canvas()->scene()->items()) boxes += it->data(kRoleKind).toInt() == kKindNode;
  EXPECT_EQ(boxes, model->drawn_nodes);
  EXPECT_EQ(view.prepared()->visible.items.size(), items);
  QSignalSpy selected(&view, &GraphView::node_selected);
  view.select_node(2);
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.at(0).at(0).toInt(), 2);
  EXPECT_EQ(view.canvas()->scene()->selectedItems().size(), 1);
  EXPECT_TRUE(view.dot_text().startsWith("digraph"));
}

TEST_F(GraphViewTest, FirstPaintIsSignalled) {
  JobTracker jobs;
  GraphView view(&jobs);
  view.resize(600, 400);
  QSignalSpy painted(&view, &GraphView::first_paint);
  view.show();
  auto model = GraphModel::build(test::scoped_graph());
  view.set_model(model);  // laid out in a job
  EXPECT_TRUE(wait_for([&] { return painted.count() > 0; }));
}

TEST_F(GraphViewTest, DoubleClickLogicExpandsAndRevealSelectsInsideCollapsedGroup) {
  JobTracker jobs;
  GraphView view(&jobs);
  view.resize(900, 700);
  view.show();
  auto model = GraphModel::build(test::big_graph(60));  // 240 nodes
  view.set_model(model);
  ASSERT_TRUE(wait_for([&] { return view.prepared() && !view.layout_busy(); }));
  view.set_collapsed(default_collapsed(*model, 20));
  ASSERT_TRUE(wait_for([&] { return !view.layout_busy() && view.prepared()->collapsed.size() > 1; }));
  const int target = 4 * 57 + 2;  // a node deep inside a collapsed stage
  const std::string key_before = visible_key(*model, view.prepared()->collapsed, target);
  ASSERT_EQ(key_before[0], 'g');
  view.reveal_node(target);
  ASSERT_TRUE(wait_for([&] {
    return !view.layout_busy() && view.selected_node() == target &&
           visible_key(*model, view.prepared()->collapsed, target)[0] == 'n';
  }));
  // Toggling the group back closes it again.
  const int group = model->nodes[static_cast<size_t>(target)].group;
  view.toggle_group(group);
  ASSERT_TRUE(wait_for([&] { return !view.layout_busy() && view.prepared()->collapsed.count(group) == 1; }));
}

TEST_F(GraphViewTest, SearchFindsByNameOpTypeAndRegex) {
  auto model = GraphModel::build(test::scoped_graph());
  EXPECT_EQ(find_nodes(*model, "relu", false).size(), 2u);
  EXPECT_EQ(find_nodes(*model, "Conv", false).size(), 3u);
  EXPECT_EQ(find_nodes(*model, "layer1\\.1/.*Conv", true).size(), 1u);
  QString error;
  EXPECT_TRUE(find_nodes(*model, "([", true, &error).empty());
  EXPECT_FALSE(error.isEmpty());

  JobTracker jobs;
  GraphView view(&jobs);
  view.show();
  auto prepared = prepare_view(*model, {});
  ASSERT_TRUE(prepared);
  view.show_prepared(model, std::move(*prepared));
  view.show_search();
  QSignalSpy went(view.search_bar(), &SearchBar::go_to);
  view.search_bar()->line_edit()->setText("gemm");
  view.search_bar()->next();
  ASSERT_EQ(went.count(), 1);
  EXPECT_EQ(view.selected_node(), model->index_of(test::scoped_graph()->nodes().back().id));
}

TEST_F(GraphViewTest, ExportsSvgPngAndDot) {
  JobTracker jobs;
  GraphView view(&jobs);
  view.show();
  auto model = GraphModel::build(test::scoped_graph());
  auto prepared = prepare_view(*model, {});
  ASSERT_TRUE(prepared);
  view.show_prepared(model, std::move(*prepared));
  QTemporaryDir dir;
  ASSERT_TRUE(view.export_svg(dir.filePath("g.svg")));
  ASSERT_TRUE(view.export_png(dir.filePath("g.png")));
  QFile svg(dir.filePath("g.svg"));
  ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
  const QByteArray text = svg.readAll();
  EXPECT_TRUE(text.contains("<svg"));
  EXPECT_TRUE(text.contains("Gemm"));
  const QImage png(dir.filePath("g.png"));
  ASSERT_FALSE(png.isNull());
  // The whole graph at 1.5x: at least as large as the laid-out graph.
  EXPECT_GE(png.height(), static_cast<int>(view.prepared()->layout.height));
}

TEST_F(GraphViewTest, InspectorShowsWeightsAndCost) {
  auto model = GraphModel::build(test::scoped_graph());
  Inspector inspector;
  inspector.show_node(model.get(), 0);
  NodeInfoModel* info = inspector.info();
  EXPECT_GE(info->section("Weights"), 0);
  EXPECT_GE(info->section("Cost"), 0);
  ASSERT_EQ(info->weights().size(), 1u);
  EXPECT_EQ(info->weights()[0].count, 8 * 8 * 3 * 3);
  inspector.show_node(nullptr, -1);
  EXPECT_EQ(info->rowCount(), 0);
}

// A node of a model with a free batch dim shows its cost with that dim taken as 1, and says so;
// with every dim known it says nothing more.
TEST_F(ModelsTest, NodeCostTakesUnknownDimsAsOne) {
  auto cost_of = [](std::shared_ptr<ir::Graph> g) {
    auto model = GraphModel::build(g);
    NodeInfoModel info;
    info.set_node(model.get(), 0);
    EXPECT_GE(info.section("Cost"), 0);
    int row = 0;  // the section's top-level row
    while (row < info.rowCount() && info.data(info.index(row, 0)).toString() != "Cost") ++row;
    const QModelIndex cost = info.index(row, 0);
    std::pair<QString, QString> out{info.data(info.index(row, 1)).toString(), ""};
    for (int r = 0; r < info.rowCount(cost); ++r)
      if (info.data(info.index(r, 0, cost)).toString() == "FLOPs")
        out.second = info.data(info.index(r, 1, cost)).toString();
    return out;
  };
  auto known = test::scoped_graph();
  const auto [known_note, known_flops] = cost_of(known);
  EXPECT_EQ(known_note, "");
  auto free_batch = test::scoped_graph();
  for (const char* v : {"x", "/stem/conv/Conv:0"}) {
    ir::Value* val = free_batch->value(v);
    ASSERT_NE(val, nullptr) << v;
    (*val->type.dims)[0] = -1;
    val->type.dim_params[0] = "batch";
  }
  const auto [note, flops] = cost_of(free_batch);
  EXPECT_EQ(note, "with ? = 1");
  EXPECT_FALSE(flops.isEmpty());
  EXPECT_NE(flops, "0");
  EXPECT_EQ(flops, known_flops);  // the batch-1 model's figure
}

TEST(WeightStats, MinMaxMeanStdHistogram) {
  const Tensor t = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7}, {8});
  const WeightStats s = weight_stats("w", t, 4);
  EXPECT_EQ(s.count, 8);
  EXPECT_DOUBLE_EQ(s.min, 0);
  EXPECT_DOUBLE_EQ(s.max, 7);
  EXPECT_DOUBLE_EQ(s.mean, 3.5);
  EXPECT_NEAR(s.std, 2.2913, 1e-3);
  EXPECT_EQ(s.histogram, (std::vector<int>{2, 2, 2, 2}));
}

TEST_F(JobTrackerTest, DeliversQueuedOnTheReceiversThread) {
  JobTracker jobs;
  QObject receiver;
  int got = 0;
  Qt::HANDLE thread = nullptr;
  jobs.start(
      "k", "t", &receiver, [](JobContext&) { return 41; },
      [&](int v) {
        got = v + 1;
        thread = QThread::currentThreadId();
      });
  ASSERT_TRUE(wait_for([&] { return got != 0; }));
  EXPECT_EQ(got, 42);
  EXPECT_EQ(thread, QThread::currentThreadId());
}

TEST_F(JobTrackerTest, DropsStaleCancelledAndOrphanedResults) {
  JobTracker jobs;
  QSignalSpy finished(&jobs, &JobTracker::finished);
  std::atomic<bool> release{false};
  int delivered = 0;
  QObject receiver;
  // Stale: a newer job of the same kind starts before the first finishes.
  jobs.start(
      "layout", "old", &receiver,
      [&](JobContext&) {
        while (!release) QThread::msleep(1);
        return 1;
      },
      [&](int) { delivered += 1; });
  jobs.start(
      "layout", "new", &receiver, [](JobContext&) { return 2; }, [&](int) { delivered += 10; });
  // Cancelled.
  const JobId c = jobs.start(
      "run", "cancel me", &receiver,
      [&](JobContext& ctx) {
        while (!ctx.cancelled()) QThread::msleep(1);
        return 3;
      },
      [&](int) { delivered += 100; });
  jobs.cancel(c);
  // Orphaned: the receiver is deleted before delivery.
  auto* gone = new QObject;
  jobs.start(
      "other", "orphan", gone,
      [&](JobContext&) {
        while (!release) QThread::msleep(1);
        return 4;
      },
      [&](int) { delivered += 1000; });
  delete gone;
  release = true;
  ASSERT_TRUE(wait_for([&] { return finished.count() == 4; }));
  EXPECT_EQ(delivered, 10);
  EXPECT_EQ(jobs.active_count(), 0);
}

TEST_F(ModelsTest, NodeInfoModelPassesTheModelTester) {
  auto model = GraphModel::build(test::scoped_graph());
  NodeInfoModel info;
  QAbstractItemModelTester tester(&info, QAbstractItemModelTester::FailureReportingMode::Fatal);
  for (int n = 0; n < static_cast<int>(model->nodes.size()); ++n) info.set_node(model.get(), n);
  info.set_node(nullptr, -1);
  info.set_node(model.get(), 0);
  EXPECT_EQ(info.columnCount(), 2);
  const QModelIndex attrs = info.index(0, 0);
  EXPECT_TRUE(attrs.isValid());
  EXPECT_FALSE(info.parent(attrs).isValid());
}

TEST_F(ModelsTest, PassListModelPassesTheModelTester) {
  PassListModel passes;
  QAbstractItemModelTester tester(&passes, QAbstractItemModelTester::FailureReportingMode::Fatal);
  EXPECT_EQ(passes.rowCount(), 0);
  PassRow fuse, dce;
  fuse.name = "fuse-conv-bn";
  fuse.changed = true;
  fuse.fused = 53;
  fuse.nodes_after = 120;
  dce.name = "dce";
  passes.set_passes({fuse, dce});
  EXPECT_EQ(passes.data(passes.index(0, PassListModel::kChanged)).toString(), "53 fused");
  EXPECT_EQ(passes.data(passes.index(1, PassListModel::kChanged)).toString(), "—");
  EXPECT_EQ(passes.rowCount(), 2);
  EXPECT_EQ(passes.data(passes.index(0, PassListModel::kName)).toString(), "fuse-conv-bn");
  passes.set_passes({});
  EXPECT_EQ(passes.rowCount(), 0);
}

}  // namespace
}  // namespace ms::views
