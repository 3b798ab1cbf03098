// Fallback marks: the nodes a run reported as run on a fallback carry a badge and the reason in
// their tooltip (kept through a new layout), so do the nodes a fused one that fell back stands for,
// the inspector says it, and the timeline marks those nodes' events and names the reason when
// hovered. A fallback that names no nodes (an older session) marks every node of its op type.
#include <gtest/gtest.h>

#include <QGraphicsItem>
#include <QImage>
#include <QLabel>

#include "tests/views/result_traces.h"
#include "tests/views/test_graphs.h"
#include "views/graph/graph_view.h"
#include "views/graph/inspector.h"
#include "views/jobs/job_tracker.h"
#include "views/timeline/timeline_view.h"

namespace ms::views {
namespace {

int index_of_op(const GraphModel& m, const std::string& op) {
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (m.nodes[i].node && m.nodes[i].node->op_type == op) return static_cast<int>(i);
  return -1;
}

std::vector<uint64_t> ids_of_op(const GraphModel& m, const std::string& op) {
  std::vector<uint64_t> ids;
  for (const auto& n : m.nodes)
    if (n.node && n.node->op_type == op) ids.push_back(n.node->id.value);
  return ids;
}

// Lays `g` out (nothing collapsed) and shows it in `view`; null when the layout fails.
std::shared_ptr<const GraphModel> show_graph(GraphView& view, std::shared_ptr<const ir::Graph> g) {
  view.resize(900, 700);
  view.show();
  auto model = GraphModel::build(std::move(g));
  auto prepared = prepare_view(*model, {});
  if (!prepared) return nullptr;
  view.show_prepared(model, std::move(*prepared));
  return model;
}

TEST(FallbackMarks, GraphBadgesOnlyTheNodesThatFellBack) {
  test::qt_app();
  JobTracker jobs;
  GraphView view(&jobs);
  auto model = show_graph(view, test::scoped_graph());
  ASSERT_TRUE(model);
  const std::vector<uint64_t> relus = ids_of_op(*model, "Relu");
  ASSERT_EQ(relus.size(), 2u);
  // Two Relu nodes; the second one fell back.
  FallbackMarks marks;
  marks.add_nodes({relus[1]}, QStringLiteral("no cuda kernel: runs on the CPU (graph run)"));
  view.set_fallbacks(marks);
  EXPECT_EQ(view.badged_nodes(), 1);
  const int first = model->index_of(ir::NodeId{relus[0]}), second = model->index_of(ir::NodeId{relus[1]});
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  EXPECT_TRUE(view.fallback_reason(first).isEmpty());
  EXPECT_EQ(view.fallback_reason(second), QStringLiteral("no cuda kernel: runs on the CPU (graph run)"));
  // A new layout keeps exactly that mark.
  auto again = prepare_view(*model, {});
  view.show_prepared(model, std::move(*again));
  EXPECT_EQ(view.badged_nodes(), 1);
  EXPECT_FALSE(view.fallback_reason(second).isEmpty());

  // A fused node of the compiled graph fell back: in the input graph, the nodes it stands for (its
  // origins) carry the mark, and nothing else does.
  const std::vector<uint64_t> convs = ids_of_op(*model, "Conv");
  ASSERT_EQ(convs.size(), 3u);
  ir::Graph compiled(model->graph->ids());  // ids unique across both, as a compile's are
  ir::Node fused;
  fused.op_type = "FusedConv";
  fused.name = "fused";
  fused.origins = {ir::NodeId{convs[1]}, ir::NodeId{relus[0]}};
  const uint64_t fused_id = compiled.add_node(fused).id.value;
  FallbackMarks through;
  through.add_nodes({fused_id}, QStringLiteral("no cuda kernel: runs on the CPU (graph run)"), &compiled);
  view.set_fallbacks(through);
  EXPECT_EQ(view.badged_nodes(), 2);
  EXPECT_FALSE(view.fallback_reason(model->index_of(ir::NodeId{convs[1]})).isEmpty());
  EXPECT_FALSE(view.fallback_reason(first).isEmpty());
  EXPECT_TRUE(view.fallback_reason(second).isEmpty());
  EXPECT_TRUE(view.fallback_reason(model->index_of(ir::NodeId{convs[0]})).isEmpty());

  // A later snapshot where a node was rewritten from the one that fell back (its origins name it):
  // the rewritten node carries the mark, its twin of the same op type does not.
  auto later = std::make_shared<ir::Graph>(*test::scoped_graph());
  for (ir::Node& n : later->nodes())
    if (n.id.value == relus[1]) n.id = later->ids()->next();  // a new id, origins still the old node
  auto later_model = show_graph(view, later);
  ASSERT_TRUE(later_model);
  view.set_fallbacks(marks);
  EXPECT_EQ(view.badged_nodes(), 1);
  for (size_t i = 0; i < later_model->nodes.size(); ++i) {
    const ir::Node* n = later_model->nodes[i].node;
    if (!n || n->op_type != "Relu") continue;
    EXPECT_EQ(view.fallback_reason(static_cast<int>(i)).isEmpty(), n->origins[0].value != relus[1]) << n->name;
  }
}

TEST(FallbackMarks, GraphBadgesTheOpsNodesInspectorSaysWhy) {
  test::qt_app();
  JobTracker jobs;
  GraphView view(&jobs);
  auto model = show_graph(view, test::scoped_graph());
  ASSERT_TRUE(model);
  EXPECT_EQ(view.badged_nodes(), 0);
  // A fallback that names no nodes (a session written before they were named): by op type.
  FallbackMarks by_op;
  by_op.add_op("Relu", QStringLiteral("no cuda kernel: runs on the CPU"));
  view.set_fallbacks(by_op);
  EXPECT_EQ(view.badged_nodes(), 2);  // the two Relu nodes, not the Convs or the Gemm
  const int relu = index_of_op(*model, "Relu"), conv = index_of_op(*model, "Conv");
  ASSERT_GE(relu, 0);
  EXPECT_EQ(view.fallback_reason(relu), QStringLiteral("no cuda kernel: runs on the CPU"));
  EXPECT_TRUE(view.fallback_reason(conv).isEmpty());
  bool tip = false;
  for (QGraphicsItem* it : view.canvas()->scene()->items())
    tip |= it->toolTip().contains(QStringLiteral("Ran on a fallback: no cuda kernel"));
  EXPECT_TRUE(tip);
  // A new layout (another snapshot) keeps the marks.
  auto again = prepare_view(*model, {});
  view.show_prepared(model, std::move(*again));
  EXPECT_EQ(view.badged_nodes(), 2);
  view.set_fallbacks({});
  EXPECT_EQ(view.badged_nodes(), 0);

  Inspector inspector;
  inspector.show_node(model.get(), relu);
  inspector.show_fallback(QStringLiteral("no cuda kernel: runs on the CPU"));
  EXPECT_TRUE(inspector.fallback_text().contains(QStringLiteral("Ran on a fallback")));
  inspector.show_node(model.get(), conv);  // another node: the note goes
  EXPECT_TRUE(inspector.fallback_text().isEmpty());
}

TEST(FallbackMarks, TimelineMarksOnlyTheEventsOfTheNodesThatFellBack) {
  test::qt_app();
  TimelineView v;
  v.resize(1200, 500);
  v.set_runs({{"PyNative", test::generated_trace(false)}});
  const prof::Trace& t = *v.model().runs()[0].trace;
  // Nodes 1 and 4 are both Convs; node 4 fell back.
  v.set_fallbacks({}, {{4, "no cuda kernel: runs on the CPU"}});
  int marked = 0, of_four = 0;
  for (const prof::Event& e : t.events) {
    const prof::NodeInfo* n = t.node_of(e);
    const bool four = n && n->id == 4 && (e.kind == prof::EventKind::Op || e.kind == prof::EventKind::Kernel);
    of_four += four;
    const std::string* why = v.canvas()->fallback_of(t, e);
    marked += why != nullptr;
    EXPECT_EQ(why != nullptr, four) << (n ? n->name : std::string("?"));
  }
  EXPECT_GT(of_four, 0);
  EXPECT_EQ(marked, of_four);
  EXPECT_GT(v.canvas()->fallback_items(), 0);
  v.set_fallbacks({}, {});
  EXPECT_EQ(v.canvas()->fallback_items(), 0);
}

TEST(FallbackMarks, TimelineMarksTheOpsEvents) {
  test::qt_app();
  TimelineView v;
  v.resize(1200, 500);
  v.set_runs({{"Graph", test::generated_trace(false)}});
  EXPECT_EQ(v.canvas()->fallback_items(), 0);
  const QImage plain = v.grab().toImage();
  v.set_fallbacks({{"Conv", "no cuda kernel: runs on the CPU"}});
  const int marked = v.canvas()->fallback_items();
  EXPECT_GT(marked, 0);
  const prof::Trace& t = *v.model().runs()[0].trace;
  int convs = 0;
  for (const prof::Event& e : t.events) {
    const prof::NodeInfo* n = t.node_of(e);
    const bool conv = n && n->op == "Conv" && (e.kind == prof::EventKind::Op || e.kind == prof::EventKind::Kernel);
    convs += conv;
    EXPECT_EQ(v.canvas()->fallback_of(t, e) != nullptr, conv);
  }
  EXPECT_LE(marked, convs);
  EXPECT_NE(v.grab().toImage(), plain);  // the marks are drawn
}

}  // namespace
}  // namespace ms::views
