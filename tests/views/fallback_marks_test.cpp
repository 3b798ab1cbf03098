// Fallback marks: nodes of the op types a run reported as run on a fallback carry a badge and the
// reason in their tooltip (kept through a new layout), the inspector says it, and the timeline marks
// those ops' events and names the reason when hovered.
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

TEST(FallbackMarks, GraphBadgesTheOpsNodesInspectorSaysWhy) {
  test::qt_app();
  JobTracker jobs;
  GraphView view(&jobs);
  view.resize(900, 700);
  view.show();
  auto model = GraphModel::build(test::scoped_graph());
  auto prepared = prepare_view(*model, {});
  ASSERT_TRUE(prepared);
  view.show_prepared(model, std::move(*prepared));
  EXPECT_EQ(view.badged_nodes(), 0);
  view.set_fallbacks({{"Relu", QStringLiteral("no cuda kernel: runs on the CPU")}});
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
