// Optional values (optional(tensor(T)), optional(seq(...))): Optional, OptionalHasElement,
// OptionalGetElement, optionals through Identity and If, in PyNative and Graph mode; the ONNX
// importer and exporter keep the types (TypeProto optional_type / sequence_type, the 'type' attribute).
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/executor.h"
#include "tests/engine/value_kinds_test_util.h"
#include "tests/temp_dir.h"

namespace ms {
namespace {

// opt = Optional(x); none = Optional() {type}; has/has_none; got = OptionalGetElement(opt);
// same = Identity(opt).
ir::Graph optional_model() {
  ir::Graph g;
  g.opsets[""] = 18;
  g.inputs = {"x"};
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{3}, {""}}, {}, std::nullopt});
  g.add_node(test::value_node("Optional", {"x"}, {"opt"}));
  g.add_node(test::value_node("Optional", {}, {"none"}, {{"type", std::string("seq(i64[*])")}}));
  g.add_node(test::value_node("OptionalHasElement", {"opt"}, {"has"}));
  g.add_node(test::value_node("OptionalHasElement", {"none"}, {"has_none"}));
  g.add_node(test::value_node("OptionalHasElement", {""}, {"has_missing"}));
  g.add_node(test::value_node("OptionalGetElement", {"opt"}, {"got"}));
  g.add_node(test::value_node("Identity", {"none"}, {"same"}));
  g.outputs = {"has", "has_none", "has_missing", "got", "same"};
  return g;
}

void expect_optional_results(const std::vector<Tensor>& out) {
  ASSERT_EQ(out.size(), 5u);
  EXPECT_TRUE(out[0].data<bool>()[0]);
  EXPECT_FALSE(out[1].data<bool>()[0]);
  EXPECT_FALSE(out[2].data<bool>()[0]);
  ASSERT_TRUE(out[3].is_tensor());
  EXPECT_EQ(out[3].shape(), (Shape{3}));
  EXPECT_EQ(out[3].data<float>()[2], 3.0f);
  ASSERT_EQ(out[4].kind(), ValueKind::Optional);
  EXPECT_TRUE(out[4].items().empty());
  EXPECT_EQ(ir::type_of(out[4]).to_string(), "optional(seq(i64[*]))");
}

TEST(OptionalOps, PyNativeAndGraphModeAgree) {
  auto be = backends::create_cpu_backend(1);
  const ir::Graph g = optional_model();
  const runtime::TensorMap in{{"x", Tensor::from_vector<float>({1, 2, 3}, {3})}};
  runtime::EagerExecutor eager(g, *be);
  auto a = eager.run(in);
  ASSERT_TRUE(a) << a.status().message();
  expect_optional_results(*a);
  compiler::CompileOptions o;
  o.verify_passes = true;
  auto c = compiler::compile_executor(g, *be, {{"x", g.value("x")->type}}, o);
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ((*c)->graph().value("opt")->type.to_string(), "optional(f32[3])");
  auto b = (*c)->run(in);
  ASSERT_TRUE(b) << b.status().message();
  expect_optional_results(*b);
}

TEST(OptionalOps, GetElementOfAnEmptyOptionalIsAnErrorNamingTheNode) {
  ir::Graph g;
  g.opsets[""] = 18;
  g.add_node(test::value_node("Optional", {}, {"none"}, {{"type", std::string("f32[*]")}}));
  ir::Node get = test::value_node("OptionalGetElement", {"none"}, {"y"});
  get.name = "unwrap";
  g.add_node(get);
  g.outputs = {"y"};
  auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor exe(g, *be);
  auto out = exe.run({});
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("unwrap"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("empty"), std::string::npos) << out.status().message();
}

TEST(OptionalOps, IfBranchesCarryOptionals) {
  auto branch = [](bool empty) {
    auto b = std::make_shared<ir::Graph>();
    b->name = empty ? "else" : "then";
    if (empty)
      b->add_node(test::value_node("Optional", {}, {"o"}, {{"type", std::string("f32[*]")}}));
    else
      b->add_node(test::value_node("Optional", {"x"}, {"o"}));
    b->outputs = {"o"};
    return b;
  };
  ir::Graph g;
  g.opsets[""] = 18;
  g.inputs = {"c", "x"};
  g.add_value(ir::Value{"c", ir::ValueType{DType::Bool, std::vector<int64_t>{}, {}}, {}, std::nullopt});
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{2}, {""}}, {}, std::nullopt});
  g.add_node(test::value_node("If", {"c"}, {"o"}, {{"then_branch", branch(false)}, {"else_branch", branch(true)}}));
  g.add_node(test::value_node("OptionalHasElement", {"o"}, {"has"}));
  g.outputs = {"has"};
  auto be = backends::create_cpu_backend(1);
  auto c = compiler::compile_executor(g, *be, {{"c", g.value("c")->type}, {"x", g.value("x")->type}});
  ASSERT_TRUE(c) << c.status().message();
  for (bool cond : {true, false}) {
    auto out = (*c)->run({{"c", Tensor::scalar<bool>(cond)}, {"x", Tensor::from_vector<float>({1, 2}, {2})}});
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ((*out)[0].data<bool>()[0], cond);
  }
}

TEST(OptionalOps, OnnxRoundTripKeepsSequenceAndOptionalTypes) {
  ir::Graph g = optional_model();
  g.outputs.push_back("opt");
  g.value("opt")->type = ir::ValueType::optional_of(g.value("x")->type);
  const ms::testing::TempDir tmp("optional_roundtrip");
  const std::string path = tmp.file("model.onnx");
  ASSERT_TRUE(onnx_io::save_model(g, path).is_ok());
  auto back = onnx_io::load_model(path);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->value("opt")->type.to_string(), "optional(f32[3])");
  const ir::Node* none = nullptr;
  for (const auto& n : back->nodes())
    if (n.outputs[0] == "none") none = &n;
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->attr_string("type", ""), "seq(i64[*])");
}

}  // namespace
}  // namespace ms
