// Graph -> hierarchy -> visible graph -> DOT, tested as data and strings; Graphviz layout results.
#include <gtest/gtest.h>

#include "tests/views/test_graphs.h"
#include "views/layout/graph_model.h"
#include "views/layout/graphviz_layout.h"
#include "views/layout/pipeline.h"
#include "views/layout/visible_graph.h"

namespace ms::views {
namespace {

int group_named(const GraphModel& m, const std::string& title) {
  for (size_t i = 0; i < m.groups.size(); ++i)
    if (m.groups[i].title == title) return static_cast<int>(i);
  return -1;
}

TEST(ScopeParts, SplitsTorchStyleNames) {
  EXPECT_EQ(scope_parts("/layer1/layer1.0/conv1/Conv"), (std::vector<std::string>{"layer1", "layer1.0", "conv1"}));
  EXPECT_EQ(scope_parts("encoder.layers.0/attn/MatMul"), (std::vector<std::string>{"encoder.layers.0", "attn"}));
  EXPECT_TRUE(scope_parts("Conv_12").empty());
  EXPECT_EQ(scope_parts("layer1.0.conv1"), (std::vector<std::string>{"layer1", "layer1.0"}));
  EXPECT_EQ(scope_parts("encoder.layers.11.attn.q"),
            (std::vector<std::string>{"encoder", "layers", "layers.11", "attn"}));
  EXPECT_TRUE(scope_parts("").empty());
}

TEST(GraphModel, GroupsFromNameScopesDropSingletons) {
  auto m = GraphModel::build(test::scoped_graph());
  // stem (one node) and every conv1/relu scope (one node each) are dropped; layer1 keeps its two
  // blocks; head has Flatten and Gemm.
  EXPECT_EQ(group_named(*m, "stem"), -1);
  EXPECT_EQ(group_named(*m, "conv1"), -1);
  const int layer1 = group_named(*m, "layer1");
  ASSERT_GE(layer1, 0);
  EXPECT_EQ(m->groups[static_cast<size_t>(layer1)].total_nodes, 4);
  EXPECT_EQ(m->groups[static_cast<size_t>(layer1)].groups.size(), 2u);
  const int block = group_named(*m, "layer1.0");
  ASSERT_GE(block, 0);
  EXPECT_EQ(m->groups[static_cast<size_t>(block)].parent, layer1);
  EXPECT_EQ(m->groups[static_cast<size_t>(block)].nodes.size(), 2u);
  EXPECT_GE(group_named(*m, "head"), 0);
  EXPECT_EQ(m->drawn_nodes, 7);
  EXPECT_EQ(m->nodes[0].short_name, "Conv");
}

TEST(GraphModel, WrapperGroupMergesIntoItsOnlyChild) {
  auto g = std::make_shared<ir::Graph>();
  const auto t = test::f32({1});
  g->add_value({"x", t, {}, {}});
  g->inputs = {"x"};
  std::string cur = test::add(*g, "Relu", "/model/body/a/Relu", {"x"}, t);
  cur = test::add(*g, "Relu", "/model/body/b/Relu", {cur}, t);
  cur = test::add(*g, "Relu", "/model/body/Relu", {cur}, t);
  g->outputs = {cur};
  auto m = GraphModel::build(g);
  // "model" holds nothing but "body": one group titled "model/body".
  ASSERT_EQ(m->groups.size(), 2u);
  EXPECT_EQ(m->groups[1].title, "model/body");
  EXPECT_EQ(m->groups[1].nodes.size(), 3u);
}

TEST(GraphModel, InitializersAndConstantsFoldIntoReaders) {
  auto g = test::scoped_graph();
  auto m = GraphModel::build(g);
  EXPECT_EQ(m->nodes[0].weights, (std::vector<std::string>{"W"}));
  auto v = make_visible(*m, {});
  for (const auto& e : v.edges) EXPECT_NE(e.value, "W");
  // Terminals: the input x and the output.
  ASSERT_EQ(m->terminals.size(), 2u);
  EXPECT_TRUE(m->terminals[0].input);
  EXPECT_FALSE(m->terminals[1].input);
}

TEST(GraphModel, IfBranchesBecomeSubgraphGroups) {
  auto g = std::make_shared<ir::Graph>();
  const auto t = test::f32({2});
  g->add_value({"x", t, {}, {}});
  g->add_value({"c", ir::ValueType{DType::Bool, std::vector<int64_t>{}, {}}, {}, {}});
  g->inputs = {"x", "c"};
  auto branch = [&](const char* op) {
    auto b = std::make_shared<ir::Graph>(g->ids());
    b->name = op;
    std::string o = test::add(*b, op, std::string(op) + "_a", {"x"}, t);
    o = test::add(*b, "Neg", std::string(op) + "_b", {o}, t);
    b->outputs = {o};
    return b;
  };
  ir::Node n;
  n.op_type = "If";
  n.name = "choose";
  n.inputs = {"c"};
  n.outputs = {"y"};
  n.attrs["then_branch"] = ir::Attribute::GraphPtr(branch("Relu"));
  n.attrs["else_branch"] = ir::Attribute::GraphPtr(branch("Sigmoid"));
  const ir::NodeId id = g->add_node(std::move(n)).id;
  g->add_value({"y", t, id, {}});
  g->outputs = {"y"};
  auto m = GraphModel::build(g);
  const int then_group = group_named(*m, "If choose: then_branch");
  ASSERT_GE(then_group, 0);
  EXPECT_TRUE(m->groups[static_cast<size_t>(then_group)].subgraph);
  EXPECT_EQ(m->groups[static_cast<size_t>(then_group)].nodes.size(), 2u);
  const std::string dot = to_dot(*m, make_visible(*m, {}));
  EXPECT_NE(dot.find("label=\"▾ If choose: else_branch  \""), std::string::npos) << dot;
  // Each body hangs off its If node by a dashed, arrowless edge.
  EXPECT_NE(dot.find("n0 -> n1 [id=e"), std::string::npos) << dot;
  EXPECT_NE(dot.find("style=dashed arrowhead=none"), std::string::npos) << dot;
  // The branch reads x from the outer graph: an edge from the input terminal into the cluster.
  auto v = make_visible(*m, {});
  bool from_input = false;
  for (const auto& e : v.edges) from_input |= e.from == "t0" && e.value == "x";
  EXPECT_TRUE(from_input);
  // Outer names resolve through the model's own scopes, not the branches' parent pointers (a copy
  // of a graph keeps its original's, which may be gone): here they point to an unrelated graph.
  ir::Graph elsewhere;
  for (const char* key : {"then_branch", "else_branch"}) g->nodes()[0].attr_graph(key)->set_parent(&elsewhere);
  auto m2 = GraphModel::build(g);
  for (const auto& node : m2->nodes)
    if (node.graph != g.get()) {
      const ir::Value* x = m2->value(node, "x");
      ASSERT_NE(x, nullptr) << node.node->label();
      EXPECT_EQ(x, g->value("x"));
    }
}

TEST(Dot, SmallGraphText) {
  auto g = std::make_shared<ir::Graph>();
  const auto t = test::f32({1, 4});
  g->add_value({"x", t, {}, {}});
  g->inputs = {"x"};
  g->outputs = {test::add(*g, "Relu", "act", {"x"}, t)};
  auto m = GraphModel::build(g);
  const std::string dot = to_dot(*m, make_visible(*m, {}));
  EXPECT_EQ(
      dot,
      "digraph modescope {\n"
      "  graph [rankdir=TB newrank=true nodesep=0.25 ranksep=0.3 fontname=\"Helvetica\" fontsize=11 labeljust=l];\n"
      "  node [shape=box fixedsize=true fontname=\"Helvetica\" fontsize=10];\n"
      "  edge [fontname=\"Helvetica\" fontsize=8 arrowsize=0.6];\n"
      "  n0 [label=\"Relu\\nact\" width=1.333 height=0.556];\n"
      "  t0 [label=\"x\\nf32[1,4]\" width=1.250 height=0.556 shape=ellipse];\n"
      "  t1 [label=\"act:0\\nf32[1,4]\" width=1.250 height=0.556 shape=ellipse];\n"
      "  t0 -> n0 [id=e0 label=\"f32[1,4]\"];\n"
      "  n0 -> t1 [id=e1 label=\"f32[1,4]\"];\n"
      "}\n");
}

TEST(Dot, ClustersNestAndCollapsedGroupsAreBoxes) {
  auto m = GraphModel::build(test::scoped_graph());
  const int layer1 = group_named(*m, "layer1");
  const std::string open = to_dot(*m, make_visible(*m, {}));
  EXPECT_NE(open.find("subgraph cluster_g" + std::to_string(layer1) + " {"), std::string::npos);
  EXPECT_NE(open.find("    subgraph cluster_g"), std::string::npos) << "blocks nest inside layer1";
  auto v = make_visible(*m, {layer1});
  const std::string closed = to_dot(*m, v);
  EXPECT_EQ(closed.find("cluster_g" + std::to_string(layer1)), std::string::npos);
  const std::string key = "g" + std::to_string(layer1);
  EXPECT_NE(closed.find(key + " [label=\"layer1\\n4 nodes\""), std::string::npos) << closed;
  // Edges into and out of the collapsed group, one each (deduplicated).
  int in = 0, out = 0;
  for (const auto& e : v.edges) {
    in += e.to == key;
    out += e.from == key;
  }
  EXPECT_EQ(in, 1);
  EXPECT_EQ(out, 1);
  EXPECT_EQ(visible_key(*m, {layer1}, 2), key);
  EXPECT_EQ(visible_key(*m, {}, 2), "n2");
}

TEST(Dot, QuotesLabels) { EXPECT_EQ(dot_quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\""); }

TEST(DefaultCollapsed, KeepsTheVisibleCountUnderTheBudget) {
  auto m = GraphModel::build(test::big_graph(200));  // 800 nodes, 20 stages of 10 blocks
  EXPECT_TRUE(default_collapsed(*m, 10000).empty());
  const auto collapsed = default_collapsed(*m, 100);
  EXPECT_FALSE(collapsed.empty());
  const auto v = make_visible(*m, collapsed);
  EXPECT_LE(v.items.size(), 100u);
  EXPECT_GE(v.items.size(), 20u);
}

TEST(GraphModel, FlatHugeGraphIsCutIntoChunks) {
  auto g = std::make_shared<ir::Graph>();
  const auto t = test::f32({1});
  g->add_value({"x", t, {}, {}});
  g->inputs = {"x"};
  std::string cur = "x";
  for (int i = 0; i < 1000; ++i) cur = test::add(*g, "Relu", "Relu_" + std::to_string(i), {cur}, t);
  g->outputs = {cur};
  auto m = GraphModel::build(g);
  EXPECT_TRUE(m->groups[0].nodes.empty());
  ASSERT_EQ(m->groups[0].groups.size(), 10u);
  EXPECT_EQ(m->groups[static_cast<size_t>(m->groups[0].groups[0])].title, "nodes 1–100");
  EXPECT_EQ(m->drawn_nodes, 1000);
  EXPECT_LE(make_visible(*m, default_collapsed(*m)).items.size(), 300u);
  std::set<int> all;
  for (int c : m->groups[0].groups) all.insert(c);
  // Collapsed chunks chain: 9 edges between the 10 chunks plus input and output.
  EXPECT_EQ(make_visible(*m, all).edges.size(), 11u);
}

TEST(GraphvizLayout, PlacesEveryItemTopToBottom) {
  auto m = GraphModel::build(test::scoped_graph());
  auto p = prepare_view(*m, {});
  ASSERT_TRUE(p) << p.status().message();
  const Layout& L = p->layout;
  EXPECT_EQ(L.nodes.size(), p->visible.items.size());
  EXPECT_EQ(L.edges.size(), p->visible.edges.size());
  EXPECT_GT(L.width, 0);
  EXPECT_GT(L.height, 0);
  double y_in = -1, y_out = -1;
  for (const auto& b : L.nodes) {
    EXPECT_GE(b.x - b.w / 2, -0.5);
    EXPECT_GE(b.y - b.h / 2, -0.5);
    if (b.key == "t0") y_in = b.y;
    if (b.key == "t1") y_out = b.y;
  }
  EXPECT_LT(y_in, y_out) << "input above output";
  for (const auto& e : L.edges) {
    EXPECT_GE(e.index, 0);
    EXPECT_GE(e.points.size(), 4u);
    EXPECT_EQ((e.points.size() - 1) % 3, 0u);
    EXPECT_TRUE(e.has_arrow);
    EXPECT_TRUE(e.has_label);
  }
  EXPECT_FALSE(L.clusters.empty());
  // Boxes do not overlap.
  for (size_t i = 0; i < L.nodes.size(); ++i)
    for (size_t j = i + 1; j < L.nodes.size(); ++j) {
      const auto& a = L.nodes[i];
      const auto& b = L.nodes[j];
      const bool apart = std::abs(a.x - b.x) >= (a.w + b.w) / 2 - 0.5 || std::abs(a.y - b.y) >= (a.h + b.h) / 2 - 0.5;
      EXPECT_TRUE(apart) << a.key << " overlaps " << b.key;
    }
}

TEST(GraphvizLayout, BadDotIsAnError) {
  auto r = layout_dot("digraph { a -> ");
  EXPECT_FALSE(r);
}

}  // namespace
}  // namespace ms::views
