// The rest of the pass stepper and the heatmap's axes: removed nodes laid out in place as ghosts
// (union graph), a fused node's origins outlined and listed, the "what did this pass buy me" table
// under QAbstractItemModelTester with its CSV, and the memory heatmap on a µs axis with three
// colourings whose legend follows.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>

#include "tests/views/result_traces.h"
#include "tests/views/test_graphs.h"
#include "views/compare/pass_delta_view.h"
#include "views/graph/graph_view.h"
#include "views/graph/inspector.h"
#include "views/layout/ghost_graph.h"
#include "views/memory/memory_view.h"
#include "views/models/pass_delta_model.h"

namespace ms::views {
namespace {

// `before` with the first layer's Relu gone: its reader reads the conv instead.
std::shared_ptr<ir::Graph> without_relu(const ir::Graph& before, ir::NodeId* removed) {
  auto after = std::make_shared<ir::Graph>(before);
  auto& nodes = after->nodes();
  auto relu = std::find_if(nodes.begin(), nodes.end(), [](const ir::Node& n) { return n.op_type == "Relu"; });
  *removed = relu->id;
  const std::string in = relu->inputs[0], out = relu->outputs[0];
  nodes.erase(relu);
  after->erase_value(out);
  for (auto& n : nodes)
    for (auto& i : n.inputs)
      if (i == out) i = in;
  return after;
}

TEST(PassEffect, GhostGraphPutsRemovedNodesBackBetweenTheirNeighbours) {
  auto before = test::scoped_graph();
  ir::NodeId gone;
  auto after = without_relu(*before, &gone);
  const GhostGraph g = ghost_graph(*before, *after, {gone});
  ASSERT_EQ(g.ghosts.size(), 1u);
  EXPECT_TRUE(g.ghosts.count(gone.value));
  EXPECT_EQ(g.graph->nodes().size(), after->nodes().size() + 1);
  const ir::Node* ghost = g.graph->find_node(gone);
  ASSERT_NE(ghost, nullptr);
  // It still reads the conv (a live node), so the layout puts it right under it.
  EXPECT_TRUE(g.graph->value(ghost->inputs[0]) && g.graph->value(ghost->inputs[0])->producer.valid());
  // The Relu's reader (still live) is tied to the ghost: the layout puts the ghost between them.
  ASSERT_EQ(g.links.size(), 1u);
  EXPECT_EQ(g.links[0].first, gone);
  auto model = GraphModel::build(g.graph, g.links);
  ASSERT_EQ(model->links.size(), 1u);
  const VisibleGraph v = make_visible(*model, {});
  const std::string ghost_key = "n" + std::to_string(model->index_of(gone));
  int in = 0, out = 0;
  for (const auto& e : v.edges) {
    in += e.to == ghost_key;
    out += e.from == ghost_key;
  }
  EXPECT_EQ(in, 1);
  EXPECT_EQ(out, 1);
  // Ids `after` still has are no ghosts; nothing changes for them.
  const GhostGraph none = ghost_graph(*before, *after, {before->nodes().front().id});
  EXPECT_TRUE(none.ghosts.empty());
}

TEST(PassEffect, GhostOutputsAfterStillProducesAreRenamed) {
  auto before = test::scoped_graph();
  ir::NodeId gone;
  auto after = without_relu(*before, &gone);
  // A fused node took over the Relu's output name.
  const ir::Node* relu = before->find_node(gone);
  for (auto& n : after->nodes())
    if (n.inputs.size() && n.inputs[0] == relu->inputs[0] && n.op_type == "Conv") {
      n.outputs = {relu->outputs[0]};
      after->add_value({relu->outputs[0], test::f32({1, 8, 4, 4}), n.id, {}});
      break;
    }
  const GhostGraph g = ghost_graph(*before, *after, {gone});
  const ir::Node* ghost = g.graph->find_node(gone);
  ASSERT_NE(ghost, nullptr);
  EXPECT_NE(ghost->outputs[0], relu->outputs[0]);
  EXPECT_EQ(g.graph->value(relu->outputs[0])->producer.value, after->value(relu->outputs[0])->producer.value);
}

TEST(PassEffect, GhostsAreDrawnInPlaceDashedAndNotSelectable) {
  test::qt_app();
  auto before = test::scoped_graph();
  ir::NodeId gone;
  auto after = without_relu(*before, &gone);
  const GhostGraph g = ghost_graph(*before, *after, {gone});
  JobTracker jobs;
  GraphView view(&jobs);
  view.resize(900, 700);
  view.show();
  auto model = GraphModel::build(g.graph, g.links);
  auto prepared = prepare_view(*model, {});
  ASSERT_TRUE(prepared);
  view.show_prepared(model, std::move(*prepared));
  std::unordered_map<uint64_t, GraphView::DiffMark> marks{{gone.value, GraphView::DiffMark::Ghost}};
  view.set_diff(std::move(marks), {}, QStringLiteral("simplify"));
  EXPECT_EQ(view.ghost_count(), 1);
  int ghosts = 0, dashed = 0;
  for (QGraphicsItem* it : view.canvas()->scene()->items()) {
    if (it->data(kRoleKind).toInt() == kKindGhost) {
      ++ghosts;
      EXPECT_FALSE(it->flags() & QGraphicsItem::ItemIsSelectable);
      EXPECT_LT(it->opacity(), 1.0);
      EXPECT_TRUE(it->toolTip().contains(QStringLiteral("removed by simplify")));
    }
    if (auto* p = dynamic_cast<QGraphicsPathItem*>(it); p && it->data(kRoleKind).toInt() == kKindEdge)
      dashed += p->pen().style() == Qt::DashLine;
  }
  EXPECT_EQ(ghosts, 1);
  EXPECT_GE(dashed, 2);  // from the conv it read, to the node that read it
  // Selecting the ghost's index selects nothing live.
  view.select_node(model->index_of(gone));
  EXPECT_TRUE(view.canvas()->scene()->selectedItems().isEmpty());
  // The legend says they are in place.
  bool legend = false;
  for (QLabel* l : view.findChildren<QLabel*>()) legend |= l->text().contains(QStringLiteral("drawn in place"));
  EXPECT_TRUE(legend);
}

TEST(PassEffect, FusedOriginsAreLinkedAndListed) {
  test::qt_app();
  JobTracker jobs;
  GraphView view(&jobs);
  view.resize(800, 600);
  auto model = GraphModel::build(test::scoped_graph());
  auto prepared = prepare_view(*model, {});
  ASSERT_TRUE(prepared);
  view.show_prepared(model, std::move(*prepared));
  const uint64_t a = model->nodes[1].node->id.value, b = model->nodes[2].node->id.value;
  view.set_linked({a, b});
  EXPECT_EQ(view.linked().size(), 2u);
  // Kept across a relayout of the same model; cleared by a new one.
  view.set_collapsed({});
  EXPECT_EQ(view.linked().size(), 2u);
  auto again = prepare_view(*model, {});
  ASSERT_TRUE(again);
  view.show_prepared(model, std::move(*again));
  EXPECT_TRUE(view.linked().empty());

  Inspector inspector;
  inspector.show_node(model.get(), 1);
  inspector.show_fused_origins({QStringLiteral("Conv 'conv1'"), QStringLiteral("Relu 'relu'")});
  EXPECT_TRUE(inspector.fused_origins_text().contains(QStringLiteral("Fused from 2 nodes")));
  EXPECT_TRUE(inspector.fused_origins_text().contains(QStringLiteral("Relu &#39;relu&#39;")) ||
              inspector.fused_origins_text().contains(QStringLiteral("Relu 'relu'")));
  inspector.show_node(model.get(), 2);  // another node: the section goes
  EXPECT_TRUE(inspector.fused_origins_text().isEmpty());
}

PipelineFigures figures(double ms, uint64_t peak, int64_t kernels, double compile) {
  PipelineFigures f;
  f.latency_ms = ms;
  f.peak_bytes = peak;
  f.arena_bytes = peak;
  f.kernels = kernels;
  f.nodes = static_cast<int>(kernels);
  f.compile_ms = compile;
  return f;
}

TEST(PassEffect, DeltaTableColoursWhatEachPassBuys) {
  test::qt_app();
  PassDeltaModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  EXPECT_EQ(m.rowCount(), 0);
  PipelineFigures failed;
  failed.error = QStringLiteral("verifier: bad graph");
  m.set_results(figures(2.0, 1000, 50, 10), {{QStringLiteral("fuse-ops"), figures(3.0, 1500, 80, 8)},
                                             {QStringLiteral("cse"), figures(2.01, 1000, 50, 9.9)},
                                             {QStringLiteral("broken"), failed}});
  ASSERT_EQ(m.rowCount(), 4);
  EXPECT_EQ(m.data(m.index(0, PassDeltaModel::kPipeline)).toString(), QStringLiteral("full pipeline"));
  EXPECT_NEAR(m.delta(1, PassDeltaModel::kLatency), 0.5, 1e-9);
  EXPECT_TRUE(m.data(m.index(1, PassDeltaModel::kLatency)).toString().contains(QStringLiteral("+50.0%")));
  // Leaving fuse-ops out costs time: the pass saves it (green); it costs compile time (red).
  const QColor saves = m.data(m.index(1, PassDeltaModel::kLatency), Qt::ForegroundRole).value<QColor>();
  const QColor costs = m.data(m.index(1, PassDeltaModel::kCompile), Qt::ForegroundRole).value<QColor>();
  EXPECT_GT(saves.green(), saves.red());
  EXPECT_GT(costs.red(), costs.green());
  // cse: within the noise, not coloured.
  EXPECT_FALSE(m.data(m.index(2, PassDeltaModel::kLatency), Qt::ForegroundRole).isValid());
  EXPECT_TRUE(m.data(m.index(3, PassDeltaModel::kLatency)).toString().contains(QStringLiteral("failed")));
  EXPECT_EQ(m.delta(3, PassDeltaModel::kLatency), 0.0);
  const QString csv = m.to_csv();
  EXPECT_EQ(csv.count(QLatin1Char('\n')), 5);
  EXPECT_TRUE(csv.contains(QStringLiteral("without fuse-ops,3,50.00,1500,50.00")));
  // Sorted through the view's proxy by the raw numbers.
  PassDeltaView view;
  view.model()->set_results(m.full(), m.rows());
  auto* proxy = qobject_cast<QSortFilterProxyModel*>(view.table()->model());
  ASSERT_NE(proxy, nullptr);
  QAbstractItemModelTester proxy_tester(proxy, QAbstractItemModelTester::FailureReportingMode::Fatal);
  proxy->sort(PassDeltaModel::kLatency, Qt::DescendingOrder);
  EXPECT_TRUE(proxy->index(0, 0).data().toString().contains(QStringLiteral("fuse-ops")));
  QTemporaryDir dir;
  ASSERT_TRUE(view.export_csv(dir.filePath(QStringLiteral("p.csv"))));
  view.resize(900, 300);
  ASSERT_TRUE(view.export_png(dir.filePath(QStringLiteral("p.png"))));
  view.model()->clear();
  EXPECT_EQ(view.model()->rowCount(), 0);
}

TEST(PassEffect, HeatmapOnAMicrosecondAxisWithThreeColourings) {
  test::qt_app();
  const MemPanel pool = memory_panel_from_trace(*test::generated_trace(false), "PyNative");
  ASSERT_TRUE(pool.timed);
  EXPECT_GT(pool.t_max, 0);
  for (const auto& b : pool.blocks) {
    EXPECT_GE(b.t0, 0);
    EXPECT_LT(b.t0, b.t1);
    EXPECT_LE(b.t1, pool.t_max + 1e-9);
  }
  ASSERT_FALSE(pool.live_t.empty());
  uint64_t peak_t = 0;
  for (const auto& [t, v] : pool.live_t) peak_t = std::max(peak_t, v);
  EXPECT_EQ(peak_t, pool.peak_bytes);  // the same blocks, the same peak on either axis
  runtime::MemoryPlan plan;
  plan.arena_bytes = 8192;
  plan.slots.push_back({"a", ir::NodeId{1}, 0, 4096, 0, 1, "", 0});
  plan.slots.push_back({"b", ir::NodeId{3}, 4096, 2048, 1, 2, "", 0});
  auto graph = test::generated_trace(true);
  const MemPanel planned = memory_panel_from_plan(plan, graph.get(), "planned");
  EXPECT_TRUE(planned.timed);  // steps mapped onto the Graph run's op starts
  const MemPanel bare = memory_panel_from_plan(plan, nullptr, "planned");
  EXPECT_FALSE(bare.timed);

  MemoryView v;
  v.resize(1300, 640);
  v.set_panels({pool, bare});
  v.grab();
  EXPECT_TRUE(v.x_axis_title(0).contains(QStringLiteral("op order")));
  EXPECT_TRUE(v.legend_entries().contains(QStringLiteral("Conv")));
  v.set_x_axis(MemoryView::XAxis::Time);
  v.grab();
  EXPECT_TRUE(v.x_axis_title(0).contains(QStringLiteral("time (µs")));  // a few µs: read in µs
  EXPECT_TRUE(v.x_axis_title(1).contains(QStringLiteral("no timestamps")));
  // Hover still finds blocks on the time axis.
  bool hit = false;
  for (int y = 50; y < 400 && !hit; y += 2)
    for (int x = 80; x < 600 && !hit; x += 3) hit = v.block_at(QPoint(x, y)) != nullptr;
  EXPECT_TRUE(hit);
  v.set_color_by(MemoryView::ColorBy::Node);
  v.grab();
  EXPECT_TRUE(v.legend_entries().contains(QStringLiteral("Conv_1")));
  v.set_color_by(MemoryView::ColorBy::Reuse);
  v.grab();
  EXPECT_TRUE(v.legend_entries().contains(QStringLiteral("used once")));
}

}  // namespace
}  // namespace ms::views
