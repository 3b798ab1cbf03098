// ONNX Runtime's QOperator contrib ops (QLinearAdd, QGemm, ...) are expanded at import into
// DequantizeLinear, the float op and QuantizeLinear (engine/frontend/onnx/import_contrib.cpp; their
// outputs against ONNX Runtime are in contrib_ops_test.cpp). Here: the made nodes' names and types,
// and the refusals, each one line naming the node.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <sstream>

#include "engine/compiler/infer.h"
#include "engine/frontend/onnx/onnx_io.h"

namespace ms::onnx_io {
namespace {

const std::string kDir = std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/contrib/";

onnx::ModelProto read(const std::string& name) {
  std::ifstream f(kDir + name, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(s.str())) << name;
  return m;
}

std::string import_error(const onnx::ModelProto& m) {
  auto g = load_model_from_bytes(m.SerializeAsString(), "", "q.onnx");
  return g ? std::string("(no error)") : g.status().message();
}

void set_int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

TEST(OnnxContribQuant, NodesAreNamedUnderTheOpAndKeepItsOutput) {
  onnx::ModelProto m = read("qlinear_add.onnx");
  m.mutable_graph()->mutable_node(0)->set_name("residual");
  auto g = load_model_from_bytes(m.SerializeAsString(), "", "q.onnx");
  ASSERT_TRUE(g) << g.status().message();
  std::vector<std::string> names, ops;
  for (const auto& n : g->nodes()) {
    names.push_back(n.name);
    ops.push_back(n.op_type);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"DequantizeLinear", "DequantizeLinear", "Add", "QuantizeLinear"}));
  EXPECT_EQ(names.front(), "residual/DequantizeLinear_A");
  EXPECT_EQ(g->nodes().back().outputs[0], "y");
  ASSERT_TRUE(compiler::infer_graph_types(*g, nullptr).is_ok());
  EXPECT_EQ(g->value("y")->type.dtype, DType::U8);
}

TEST(OnnxContribQuant, AnInt8OutputWithoutAZeroPointStaysInt8) {
  onnx::ModelProto m = read("qlinear_leaky_relu_int8.onnx");
  onnx::NodeProto* n = m.mutable_graph()->mutable_node(0);
  n->mutable_input()->RemoveLast();  // Y_zero_point
  auto g = load_model_from_bytes(m.SerializeAsString(), "", "q.onnx");
  ASSERT_TRUE(g) << g.status().message();
  ASSERT_TRUE(compiler::infer_graph_types(*g, nullptr).is_ok());
  EXPECT_EQ(g->value("y")->type.dtype, DType::I8);
}

TEST(OnnxContribQuant, Refusals) {
  onnx::ModelProto pool = read("qlinear_global_pool.onnx");
  pool.mutable_graph()->mutable_node(0)->set_name("gap");
  set_int_attr(pool.mutable_graph()->mutable_node(0), "channels_last", 1);
  EXPECT_EQ(import_error(pool),
            "q.onnx: node 'gap' (com.microsoft.QLinearGlobalAveragePool): channels_last = 1 is not "
            "supported");

  onnx::ModelProto add = read("qlinear_add.onnx");
  add.mutable_graph()->mutable_node(0)->mutable_input()->DeleteSubrange(5, 3);
  EXPECT_NE(import_error(add).find("(com.microsoft.QLinearAdd) has 5 inputs, it takes 7 to 8"), std::string::npos)
      << import_error(add);

  onnx::ModelProto soft = read("qlinear_softmax.onnx");
  soft.mutable_graph()->mutable_node(0)->clear_attribute();
  EXPECT_NE(import_error(soft).find("attribute 'opset' is required"), std::string::npos) << import_error(soft);

  onnx::ModelProto old = read("qlinear_sigmoid.onnx");
  for (auto& o : *old.mutable_opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") o.set_version(9);
  EXPECT_NE(import_error(old).find("needs the model to import ai.onnx opset 10 or newer"), std::string::npos)
      << import_error(old);

  onnx::ModelProto concat = read("qlinear_concat.onnx");
  concat.mutable_graph()->mutable_node(0)->mutable_input()->RemoveLast();
  EXPECT_NE(import_error(concat).find("a triple (X, X_scale, X_zero_point) per input"), std::string::npos)
      << import_error(concat);

  onnx::ModelProto gemm = read("qgemm.onnx");
  gemm.mutable_graph()->mutable_node(0)->set_input(3, "");
  EXPECT_NE(import_error(gemm).find("input 3 is required"), std::string::npos) << import_error(gemm);
}

}  // namespace
}  // namespace ms::onnx_io
