// Model-local functions (ModelProto.functions): calls are expanded into the functions' bodies at
// import, with attribute references, defaults (IR 9, read from unknown fields), nested calls,
// omitted inputs and outputs, calls inside subgraphs; and the refusals, each one line.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>

#include "engine/backends/select.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/executor.h"

namespace ms::onnx_io {
namespace {

onnx::NodeProto* add_node(google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes, const std::string& op,
                          std::vector<std::string> in, std::vector<std::string> out, const std::string& domain = "",
                          const std::string& name = "") {
  onnx::NodeProto* n = nodes->Add();
  n->set_op_type(op);
  n->set_domain(domain);
  n->set_name(name);
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

void set_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void set_ref(onnx::NodeProto* n, const std::string& name, const std::string& ref) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_ref_attr_name(ref);
}

void add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name) {
  auto* v = list->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_value(4);
}

void add_opset(google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>* list, const std::string& domain,
               int64_t version) {
  auto* o = list->Add();
  o->set_domain(domain);
  o->set_version(version);
}

// custom.Leaky(X) = LeakyRelu(X, alpha = the call's 'alpha') + 1 (a Constant and an Add).
onnx::FunctionProto* add_leaky(onnx::ModelProto& m) {
  onnx::FunctionProto* f = m.add_functions();
  f->set_name("Leaky");
  f->set_domain("custom");
  f->add_input("X");
  f->add_output("Y");
  f->add_attribute("alpha");
  add_opset(f->mutable_opset_import(), "", 18);
  set_ref(add_node(f->mutable_node(), "LeakyRelu", {"X"}, {"l"}), "alpha", "alpha");
  onnx::NodeProto* one = add_node(f->mutable_node(), "Constant", {}, {"one"});
  auto* v = one->add_attribute();
  v->set_name("value_float");
  v->set_type(onnx::AttributeProto::FLOAT);
  v->set_f(1.0f);
  add_node(f->mutable_node(), "Add", {"l", "one"}, {"Y"});
  return f;
}

onnx::ModelProto model_with(const std::vector<std::string>& outputs) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  add_opset(m.mutable_opset_import(), "", 18);
  add_opset(m.mutable_opset_import(), "custom", 1);
  add_value(m.mutable_graph()->mutable_input(), "x");
  for (const auto& o : outputs) add_value(m.mutable_graph()->mutable_output(), o);
  return m;
}

Expected<ir::Graph> load(const onnx::ModelProto& m) {
  return load_model_from_bytes(m.SerializeAsString(), "", "fn.onnx");
}

std::vector<float> run_eager(const ir::Graph& g, std::vector<float> x) {
  auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor eager(g, *be);
  auto out = eager.run({{"x", Tensor::from_vector<float>(x, {4})}});
  EXPECT_TRUE(out.has_value()) << out.status().message();
  if (!out) return {};
  const float* p = (*out)[0].data<float>();
  return std::vector<float>(p, p + 4);
}

const std::vector<float> kX = {-2, -0.5f, 0.5f, 3};

TEST(OnnxFunctions, CallsBecomeTheBodyWithTheCallsAttributes) {
  onnx::ModelProto m = model_with({"y"});
  add_leaky(m);
  auto* call = add_node(m.mutable_graph()->mutable_node(), "Leaky", {"x"}, {"y"}, "custom", "act");
  set_float(call, "alpha", 0.25f);
  auto g = load(m);
  ASSERT_TRUE(g.has_value()) << g.status().message();
  ASSERT_EQ(g->nodes().size(), 3u);
  EXPECT_EQ(g->nodes()[0].op_type, "LeakyRelu");
  EXPECT_EQ(g->nodes()[0].name, "act/LeakyRelu");  // grouped under the call in the graph view
  EXPECT_FLOAT_EQ(g->nodes()[0].attr_float("alpha", 0), 0.25f);
  EXPECT_EQ(g->nodes()[2].outputs[0], "y");
  const std::vector<float> y = run_eager(*g, kX);
  ASSERT_EQ(y.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], (kX[i] < 0 ? 0.25f * kX[i] : kX[i]) + 1);
}

TEST(OnnxFunctions, DefaultAttributesAndAbsentOnes) {
  // IR 9's attribute_proto (field 11 of FunctionProto, unknown to this protobuf): alpha = 0.5.
  onnx::ModelProto m = model_with({"y"});
  onnx::FunctionProto* f = add_leaky(m);
  onnx::AttributeProto def;
  def.set_name("alpha");
  def.set_type(onnx::AttributeProto::FLOAT);
  def.set_f(0.5f);
  f->GetReflection()->MutableUnknownFields(f)->AddLengthDelimited(11, def.SerializeAsString());
  add_node(m.mutable_graph()->mutable_node(), "Leaky", {"x"}, {"y"}, "custom", "act");
  auto g = load(m);
  ASSERT_TRUE(g.has_value()) << g.status().message();
  EXPECT_FLOAT_EQ(g->nodes()[0].attr_float("alpha", 0), 0.5f);
  // Without a default the attribute is absent: LeakyRelu's own default (0.01) holds.
  onnx::ModelProto m2 = model_with({"y"});
  add_leaky(m2);
  add_node(m2.mutable_graph()->mutable_node(), "Leaky", {"x"}, {"y"}, "custom", "act");
  auto g2 = load(m2);
  ASSERT_TRUE(g2.has_value()) << g2.status().message();
  EXPECT_FALSE(g2->nodes()[0].has_attr("alpha"));
  EXPECT_FLOAT_EQ(run_eager(*g2, kX)[0], -2 * 0.01f + 1);
}

TEST(OnnxFunctions, NestedCallsAndRepeatedCallsGetTheirOwnNames) {
  // custom.Twice(X) = Leaky(Leaky(X)), called twice.
  onnx::ModelProto m = model_with({"y"});
  add_leaky(m);
  onnx::FunctionProto* twice = m.add_functions();
  twice->set_name("Twice");
  twice->set_domain("custom");
  twice->add_input("X");
  twice->add_output("Y");
  add_opset(twice->mutable_opset_import(), "custom", 1);
  set_float(add_node(twice->mutable_node(), "Leaky", {"X"}, {"h"}, "custom", "first"), "alpha", 0.5f);
  set_float(add_node(twice->mutable_node(), "Leaky", {"h"}, {"Y"}, "custom", "second"), "alpha", 0.5f);
  add_node(m.mutable_graph()->mutable_node(), "Twice", {"x"}, {"t"}, "custom", "block");
  add_node(m.mutable_graph()->mutable_node(), "Twice", {"t"}, {"y"}, "custom", "block");  // the same name again
  auto g = load(m);
  ASSERT_TRUE(g.has_value()) << g.status().message();
  ASSERT_EQ(g->nodes().size(), 12u);
  EXPECT_EQ(g->nodes()[0].name, "block/first/LeakyRelu");
  EXPECT_EQ(g->nodes()[6].name, "block_2/first/LeakyRelu");
  const std::vector<float> y = run_eager(*g, kX);
  ASSERT_EQ(y.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    float v = kX[i];
    for (int k = 0; k < 4; ++k) v = (v < 0 ? 0.5f * v : v) + 1;
    EXPECT_FLOAT_EQ(y[i], v);
  }
}

TEST(OnnxFunctions, CallsInsideSubgraphs) {
  // If(cond) { Leaky(x) } else { Identity(x) }: the call in the branch reads x from the outer graph.
  onnx::ModelProto m = model_with({"y"});
  add_leaky(m);
  onnx::GraphProto then_g, else_g;
  then_g.set_name("then");
  set_float(add_node(then_g.mutable_node(), "Leaky", {"x"}, {"a"}, "custom", "in_branch"), "alpha", 0.25f);
  add_value(then_g.mutable_output(), "a");
  else_g.set_name("else");
  add_node(else_g.mutable_node(), "Identity", {"x"}, {"b"});
  add_value(else_g.mutable_output(), "b");
  onnx::NodeProto* c = add_node(m.mutable_graph()->mutable_node(), "Constant", {}, {"cond"});
  auto* v = c->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  v->mutable_t()->add_int32_data(1);
  onnx::NodeProto* iff = add_node(m.mutable_graph()->mutable_node(), "If", {"cond"}, {"y"}, "", "branch");
  auto* ta = iff->add_attribute();
  ta->set_name("then_branch");
  ta->set_type(onnx::AttributeProto::GRAPH);
  *ta->mutable_g() = then_g;
  auto* ea = iff->add_attribute();
  ea->set_name("else_branch");
  ea->set_type(onnx::AttributeProto::GRAPH);
  *ea->mutable_g() = else_g;
  auto g = load(m);
  ASSERT_TRUE(g.has_value()) << g.status().message();
  const std::vector<float> y = run_eager(*g, kX);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_FLOAT_EQ(y[0], -2 * 0.25f + 1);
  EXPECT_FLOAT_EQ(y[3], 4);
}

TEST(OnnxFunctions, OmittedOutputsGetNamesOfTheirOwn) {
  // custom.Pair(X) = (Relu(X), Neg(X)); the call keeps only the first.
  onnx::ModelProto m = model_with({"y"});
  onnx::FunctionProto* f = m.add_functions();
  f->set_name("Pair");
  f->set_domain("custom");
  f->add_input("X");
  f->add_output("A");
  f->add_output("B");
  add_opset(f->mutable_opset_import(), "", 18);
  add_node(f->mutable_node(), "Relu", {"X"}, {"A"});
  add_node(f->mutable_node(), "Neg", {"X"}, {"B"});
  add_node(m.mutable_graph()->mutable_node(), "Pair", {"x"}, {"y"}, "custom", "p");
  auto g = load(m);
  ASSERT_TRUE(g.has_value()) << g.status().message();
  EXPECT_EQ(g->nodes()[1].outputs[0], "p/B");
  EXPECT_FLOAT_EQ(run_eager(*g, kX)[3], 3);
}

TEST(OnnxFunctions, ASubgraphInAFunctionCallsAnotherFunction) {
  // tests/data/models/functions_ref_if.onnx (its make_ script): Branch(c, x) = If(c) { Leaky(x, 0.25) }
  // else { Neg(x) }. The outputs are ONNX Runtime's for the same file.
  auto g = load_model(std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/models/functions_ref_if.onnx");
  ASSERT_TRUE(g.has_value()) << g.status().message();
  auto be = backends::create_cpu_backend(1);
  for (const bool c : {true, false}) {
    runtime::EagerExecutor eager(*g, *be);
    Tensor cond = Tensor::zeros(DType::Bool, Shape{});
    *static_cast<bool*>(cond.raw()) = c;
    auto out = eager.run({{"c", cond}, {"x", Tensor::from_vector<float>(kX, {4})}});
    ASSERT_TRUE(out.has_value()) << out.status().message();
    const std::vector<float> want =
        c ? std::vector<float>{-0.5f, -0.125f, 0.5f, 3} : std::vector<float>{2, 0.5f, -0.5f, -3};
    for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ((*out)[0].data<float>()[i], want[i]) << c << " " << i;
  }
}

std::string error_of(const onnx::ModelProto& m) {
  auto g = load(m);
  return g.has_value() ? std::string("(no error)") : g.status().message();
}

TEST(OnnxFunctions, RefusalsAreOneLineNamingTheFunction) {
  {  // a function that calls itself
    onnx::ModelProto m = model_with({"y"});
    onnx::FunctionProto* f = m.add_functions();
    f->set_name("Loop");
    f->set_domain("custom");
    f->add_input("X");
    f->add_output("Y");
    add_opset(f->mutable_opset_import(), "custom", 1);
    add_node(f->mutable_node(), "Loop", {"X"}, {"Y"}, "custom");
    add_node(m.mutable_graph()->mutable_node(), "Loop", {"x"}, {"y"}, "custom", "me");
    const std::string e = error_of(m);
    EXPECT_EQ(e, "fn.onnx: node 'me': function 'custom.Loop' calls itself (custom.Loop -> custom.Loop)");
  }
  {  // more inputs than the function takes
    onnx::ModelProto m = model_with({"y"});
    add_leaky(m);
    add_node(m.mutable_graph()->mutable_node(), "Leaky", {"x", "x"}, {"y"}, "custom", "two");
    EXPECT_NE(error_of(m).find("node 'two' passes 2 inputs and takes 1 outputs of function 'custom.Leaky', which has 1 "
                               "and 1"),
              std::string::npos)
        << error_of(m);
  }
  {  // a body reading a name from outside
    onnx::ModelProto m = model_with({"y"});
    onnx::FunctionProto* f = add_leaky(m);
    f->mutable_node(2)->set_input(1, "outer");
    add_node(m.mutable_graph()->mutable_node(), "Leaky", {"x"}, {"y"}, "custom", "c");
    EXPECT_NE(error_of(m).find("function 'custom.Leaky': node 'Add' reads 'outer', which the function neither takes "
                               "nor makes"),
              std::string::npos)
        << error_of(m);
  }
  {  // a different opset of a shared domain
    onnx::ModelProto m = model_with({"y"});
    add_leaky(m)->mutable_opset_import(0)->set_version(17);
    add_node(m.mutable_graph()->mutable_node(), "Leaky", {"x"}, {"y"}, "custom", "c");
    EXPECT_NE(error_of(m).find("function 'custom.Leaky' imports opset 17 of domain 'ai.onnx' while the model imports "
                               "opset 18"),
              std::string::npos)
        << error_of(m);
  }
  {  // defined twice
    onnx::ModelProto m = model_with({"y"});
    add_leaky(m);
    add_leaky(m);
    EXPECT_NE(error_of(m).find("function 'custom.Leaky' is defined twice"), std::string::npos) << error_of(m);
  }
  {  // a reference outside any function
    onnx::ModelProto m = model_with({"y"});
    set_ref(add_node(m.mutable_graph()->mutable_node(), "LeakyRelu", {"x"}, {"y"}, "", "r"), "alpha", "a");
    EXPECT_NE(error_of(m).find("references a function attribute (ref_attr_name) outside a function"), std::string::npos)
        << error_of(m);
  }
}

}  // namespace
}  // namespace ms::onnx_io
