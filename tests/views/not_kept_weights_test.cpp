// The inspector and its tree for weights a session file did not keep (over its budget for
// snapshot constants): zeros stand in for their data, so the inspector says they were not kept
// instead of showing the zeros' statistics and histogram. A weight that was kept, and the same
// weights without the marks, show their statistics.
#include <gtest/gtest.h>

#include <QStringList>

#include "tests/views/test_graphs.h"
#include "views/graph/inspector.h"
#include "views/layout/graph_model.h"
#include "views/layout/visible_graph.h"
#include "views/models/node_info_model.h"

namespace ms::views {
namespace {

// x -> Conv(W, B) -> Mul(k) where k is a Constant: W and k's value hold zeros (not kept), B = 1 2 3.
struct NotKeptGraph {
  std::shared_ptr<ir::Graph> graph = std::make_shared<ir::Graph>();
  Tensor w = Tensor::zeros(DType::F32, {3, 2, 1, 1});
  Tensor k = Tensor::zeros(DType::F32, {3});
  NotKeptGraph() {
    const auto t = test::f32({1, 3, 4, 4});
    graph->add_value({"x", test::f32({1, 2, 4, 4}), {}, {}});
    graph->inputs = {"x"};
    graph->add_initializer("W", w);
    graph->add_initializer("B", Tensor::from_vector<float>({1, 2, 3}, {3}));
    ir::Node c;
    c.op_type = "Constant";
    c.name = "k";
    c.outputs = {"k:0"};
    c.attrs["value"] = ir::Attribute(k);
    const ir::Node& added = graph->add_node(std::move(c));
    graph->add_value({"k:0", test::f32({3}), added.id, {}});
    const std::string conv = test::add(*graph, "Conv", "conv", {"x", "W", "B"}, t);
    graph->outputs = {test::add(*graph, "Mul", "mul", {conv, "k:0"}, t)};
  }
};

int node_named(const GraphModel& m, const std::string& name) {
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (m.nodes[i].node->name == name) return static_cast<int>(i);
  return -1;
}

// Every row below `parent` as "key: value", depth first, children after their row.
void collect_rows(const NodeInfoModel& info, const QModelIndex& parent, QStringList& out) {
  for (int r = 0; r < info.rowCount(parent); ++r) {
    const QModelIndex key = info.index(r, 0, parent);
    out << info.data(key).toString() + QStringLiteral(": ") + info.data(info.index(r, 1, parent)).toString();
    collect_rows(info, key, out);
  }
}

// The rows of weight `name` (its own and its children's) in the Weights section.
QStringList weight_rows(const NodeInfoModel& info, const QString& name) {
  QStringList out;
  for (int r = 0; r < info.rowCount(); ++r) {
    const QModelIndex section = info.index(r, 0);
    if (info.data(section).toString() != QStringLiteral("Weights")) continue;
    for (int w = 0; w < info.rowCount(section); ++w) {
      const QModelIndex row = info.index(w, 0, section);
      if (info.data(row).toString() != name) continue;
      out << info.data(info.index(w, 1, section)).toString();
      collect_rows(info, row, out);
    }
  }
  return out;
}

const QString kNotKept = QStringLiteral("not kept in the session file (over the snapshot budget)");

TEST(NotKeptWeights, TheInspectorSaysAWeightWasNotKeptInsteadOfShowingZeros) {
  test::qt_app();
  NotKeptGraph g;
  auto model = GraphModel::build(g.graph);
  const int conv = node_named(*model, "conv"), mul = node_named(*model, "mul");
  ASSERT_GE(conv, 0);
  ASSERT_GE(mul, 0);

  Inspector inspector;
  inspector.set_constants_not_kept({g.w, g.k}, QStringLiteral("over the snapshot budget"));
  inspector.show_node(model.get(), conv);
  const NodeInfoModel& info = *inspector.info();
  const QStringList w = weight_rows(info, QStringLiteral("W"));
  ASSERT_FALSE(w.isEmpty()) << "no row for weight W";
  EXPECT_TRUE(w.front().contains(kNotKept)) << w.join(QStringLiteral(" | ")).toStdString();
  EXPECT_TRUE(w.contains(QStringLiteral("count: 6"))) << w.join(QStringLiteral(" | ")).toStdString();
  for (const QString& row : w) {
    EXPECT_FALSE(row.startsWith(QStringLiteral("min / max"))) << row.toStdString();
    EXPECT_FALSE(row.startsWith(QStringLiteral("mean ± std"))) << row.toStdString();
    EXPECT_FALSE(row.contains(QStringLiteral("0 / 0"))) << row.toStdString();
  }
  // B was kept: its statistics as ever.
  const QStringList b = weight_rows(info, QStringLiteral("B"));
  EXPECT_TRUE(b.contains(QStringLiteral("min / max: 1 / 3"))) << b.join(QStringLiteral(" | ")).toStdString();
  EXPECT_FALSE(b.front().contains(kNotKept));

  ASSERT_EQ(info.weights().size(), 2u);
  EXPECT_TRUE(info.weights()[0].not_kept);  // W, shown first: no histogram, a note instead
  EXPECT_TRUE(info.weights()[0].histogram.empty());
  EXPECT_FALSE(info.weights()[1].not_kept);
  EXPECT_TRUE(inspector.histogram()->bins().empty());
  EXPECT_FALSE(inspector.histogram()->note().isEmpty());

  // The Constant folded into Mul: its value was not kept either, as a weight and as an attribute.
  inspector.show_node(model.get(), mul);
  const QStringList k = weight_rows(info, QStringLiteral("k:0"));
  ASSERT_FALSE(k.isEmpty()) << "no row for the Constant's value";
  EXPECT_TRUE(k.front().contains(kNotKept)) << k.join(QStringLiteral(" | ")).toStdString();
  const int constant = node_named(*model, "k");
  ASSERT_GE(constant, 0);
  inspector.show_node(model.get(), constant);
  QStringList rows;
  collect_rows(info, {}, rows);
  EXPECT_TRUE(rows.filter(QStringLiteral("value: f32")).join(QString()).contains(kNotKept))
      << rows.join(QStringLiteral(" | ")).toStdString();
}

TEST(NotKeptWeights, WithoutTheMarksTheSameZerosShowAsStatistics) {
  test::qt_app();
  NotKeptGraph g;
  auto model = GraphModel::build(g.graph);
  Inspector inspector;
  inspector.show_node(model.get(), node_named(*model, "conv"));
  const QStringList w = weight_rows(*inspector.info(), QStringLiteral("W"));
  EXPECT_TRUE(w.contains(QStringLiteral("min / max: 0 / 0"))) << w.join(QStringLiteral(" | ")).toStdString();
  EXPECT_FALSE(w.join(QString()).contains(kNotKept));
  EXPECT_FALSE(inspector.info()->weights()[0].not_kept);
  // Marks set and then cleared (a fresh run's passes) no longer apply.
  inspector.set_constants_not_kept({g.w}, QStringLiteral("over the snapshot budget"));
  inspector.set_constants_not_kept({}, QStringLiteral("over the snapshot budget"));
  inspector.show_node(model.get(), node_named(*model, "conv"));
  EXPECT_FALSE(inspector.info()->weights()[0].not_kept);
}

// A node box shows a one-value weight's value ("= 0.5"): for a weight not kept it says so, instead of
// the stand-in zero; the same zero marked as known shows as a value.
TEST(NotKeptWeights, NodeBoxesShowNoValueForAScalarNotKept) {
  auto graph = std::make_shared<ir::Graph>();
  const Tensor s = Tensor::zeros(DType::F32, {1});
  graph->add_value({"x", test::f32({1, 3}), {}, {}});
  graph->inputs = {"x"};
  graph->add_initializer("s", s);
  graph->outputs = {test::add(*graph, "Mul", "scale", {"x", "s"}, test::f32({1, 3}))};
  const auto joined = [](const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += l + " | ";
    return out;
  };
  auto marked = GraphModel::build(graph, {}, {s});
  const int n = node_named(*marked, "scale");
  ASSERT_GE(n, 0);
  const std::string lines = joined(node_lines(*marked, n));
  EXPECT_NE(lines.find("= (not kept)"), std::string::npos) << lines;
  EXPECT_EQ(lines.find("= 0"), std::string::npos) << lines;
  auto plain = GraphModel::build(graph);
  const std::string known = joined(node_lines(*plain, node_named(*plain, "scale")));
  EXPECT_NE(known.find("= 0"), std::string::npos) << known;
}

}  // namespace
}  // namespace ms::views
