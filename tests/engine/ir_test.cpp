#include <gtest/gtest.h>

#include "engine/ir/graph.h"

namespace ms::ir {
namespace {

Graph tiny() {
  Graph g;
  g.name = "tiny";
  g.inputs = {"x"};
  g.add_value(Value{"x", ValueType{DType::F32, std::vector<int64_t>{1, 4}, {"", ""}}, {}, std::nullopt});
  g.add_initializer("w", Tensor::zeros(DType::F32, {1, 4}));
  Node add;
  add.op_type = "Add";
  add.name = "add0";
  add.inputs = {"x", "w"};
  add.outputs = {"y"};
  g.add_node(add);
  Node relu;
  relu.op_type = "Relu";
  relu.inputs = {"y"};
  relu.outputs = {"z"};
  g.add_node(relu);
  g.outputs = {"z"};
  return g;
}

TEST(Ir, IdsAreStableAndOriginsDefaultToSelf) {
  Graph g = tiny();
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].id.value, 1u);
  EXPECT_EQ(g.nodes()[1].id.value, 2u);
  EXPECT_EQ(g.nodes()[1].origins, std::vector<NodeId>{NodeId{2}});
}

TEST(Ir, VerifyAcceptsWellFormedGraph) { EXPECT_TRUE(verify(tiny()).is_ok()); }

TEST(Ir, VerifyRejectsDanglingInput) {
  Graph g = tiny();
  g.nodes()[1].inputs[0] = "nope";
  Status s = verify(g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("'nope'"), std::string::npos) << s.message();
  EXPECT_EQ(s.node_id(), 2u);
}

TEST(Ir, VerifyRejectsCycle) {
  Graph g = tiny();
  g.nodes()[0].inputs[0] = "z";  // Add reads Relu's output: a cycle
  EXPECT_FALSE(verify(g).is_ok());
}

TEST(Ir, TextDumpIsOneNodeALine) {
  const std::string text = dump_text(tiny());
  EXPECT_EQ(text,
            "graph tiny (%x: f32[1,4])\n"
            "  init %w: f32[1,4]\n"
            "  #1 %y = Add(%x, %w) name=\"add0\" : undefined[*]\n"
            "  #2 %z = Relu(%y) : undefined[*]\n"
            "  return %z\n");
}

TEST(Ir, FingerprintChangesWithContent) {
  Graph a = tiny();
  Graph b = tiny();
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  b.nodes()[1].op_type = "Sigmoid";
  EXPECT_NE(a.fingerprint(), b.fingerprint());
}

}  // namespace
}  // namespace ms::ir
