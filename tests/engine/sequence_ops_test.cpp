// Sequence values (seq(tensor(T))): the IR type (text, parse, JSON), the Sequence* ops,
// SplitToSequence / ConcatFromSequence and SequenceMap in PyNative mode, and one model with
// sequences compiled and run in Graph mode (sequences stay out of the memory plan).
#include <gtest/gtest.h>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/runtime/executor.h"
#include "tests/engine/value_kinds_test_util.h"

namespace ms {
namespace {

ir::ValueType f32(std::vector<int64_t> dims) {
  return ir::ValueType{DType::F32, dims, std::vector<std::string>(dims.size())};
}

std::vector<float> floats(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::F32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// a, b: f32[2]; s = [a, b]; s2 = insert c at 1; out: s2[-1], len(s2), concat(s2), erase(s2, 0).
ir::Graph sequence_model() {
  ir::Graph g;
  g.opsets[""] = 18;
  test::add_graph_input(g, "a", f32({2}));
  test::add_graph_input(g, "b", f32({2}));
  g.add_initializer("c", Tensor::from_vector<float>({5, 6}, {2}));
  g.add_initializer("one", Tensor::scalar<int64_t>(1));
  g.add_initializer("last", Tensor::scalar<int32_t>(-1));
  g.add_initializer("zero", Tensor::scalar<int64_t>(0));
  g.add_node(test::value_node("SequenceConstruct", {"a", "b"}, {"s"}));
  g.add_node(test::value_node("SequenceInsert", {"s", "c", "one"}, {"s2"}));
  g.add_node(test::value_node("SequenceAt", {"s2", "last"}, {"at"}));
  g.add_node(test::value_node("SequenceLength", {"s2"}, {"len"}));
  g.add_node(test::value_node("ConcatFromSequence", {"s2"}, {"cat"}, {{"axis", int64_t{0}}}));
  g.add_node(test::value_node("SequenceErase", {"s2", "zero"}, {"rest"}));
  g.add_node(test::value_node("Relu", {"at"}, {"at_relu"}));
  g.outputs = {"at_relu", "len", "cat", "rest"};
  return g;
}

runtime::TensorMap sequence_inputs() {
  return {{"a", Tensor::from_vector<float>({1, -2}, {2})}, {"b", Tensor::from_vector<float>({-3, 4}, {2})}};
}

void expect_sequence_results(const std::vector<Tensor>& out) {
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(floats(out[0]), (std::vector<float>{0, 4}));  // relu(b): the last of [a, c, b]
  EXPECT_EQ(out[1].at_int(0), 3);
  EXPECT_EQ(floats(out[2]), (std::vector<float>{1, -2, 5, 6, -3, 4}));
  ASSERT_EQ(out[3].kind(), ValueKind::Sequence);
  ASSERT_EQ(out[3].items().size(), 2u);
  EXPECT_EQ(floats(out[3].items()[0]), (std::vector<float>{5, 6}));
  EXPECT_EQ(floats(out[3].items()[1]), (std::vector<float>{-3, 4}));
}

TEST(SequenceValues, TypesPrintParseAndRoundTripThroughJson) {
  const ir::ValueType seq = ir::ValueType::sequence_of(f32({2, -1}));
  EXPECT_EQ(seq.to_string(), "seq(f32[2,?])");
  EXPECT_FALSE(seq.is_static());
  const ir::ValueType opt = ir::ValueType::optional_of(seq);
  EXPECT_EQ(opt.to_string(), "optional(seq(f32[2,?]))");
  EXPECT_EQ(opt.element(), seq);
  auto parsed = ir::parse_value_type("optional(seq(f32[2,?]))");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, opt);
  EXPECT_FALSE(ir::parse_value_type("seq(optional(f32[*]))"));
  EXPECT_FALSE(ir::parse_value_type("quux[1]"));

  ir::Graph g = sequence_model();
  g.value("s2")->type = seq;
  auto back = ir::from_json(ir::to_json(g));
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->value("s2")->type, seq);
  EXPECT_NE(ir::dump_text(*back).find("seq(f32[2,?])"), std::string::npos);
}

TEST(SequenceValues, RuntimeValueCarriesItsElements) {
  const Tensor s =
      Tensor::sequence({Tensor::from_vector<float>({1}, {1}), Tensor::from_vector<float>({2, 3}, {2})}, DType::F32);
  EXPECT_TRUE(s.defined());
  EXPECT_FALSE(s.is_tensor());
  EXPECT_EQ(s.nbytes(), 0u);
  const ir::ValueType t = ir::type_of(s);
  EXPECT_EQ(t.kind, ValueKind::Sequence);
  EXPECT_EQ(t.to_string(), "seq(f32[?])");
  const Tensor copy = s.clone();
  EXPECT_NE(copy.items()[0].raw(), s.items()[0].raw());
  EXPECT_NE(s.to_string().find("Sequence("), std::string::npos);
  const Tensor empty = Tensor::sequence({}, DType::I64);
  EXPECT_EQ(ir::type_of(empty).to_string(), "seq(i64[*])");
}

TEST(SequenceOps, PyNativeRunsEveryOp) {
  auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor exe(sequence_model(), *be);
  auto out = exe.run(sequence_inputs());
  ASSERT_TRUE(out) << out.status().message();
  expect_sequence_results(*out);
}

TEST(SequenceOps, GraphModeCompilesAndKeepsSequencesOutOfTheArena) {
  auto be = backends::create_cpu_backend(1);
  const ir::Graph g = sequence_model();
  std::map<std::string, ir::ValueType> sig{{"a", f32({2})}, {"b", f32({2})}};
  for (auto level : {compiler::JitLevel::O0, compiler::JitLevel::O2}) {
    compiler::CompileOptions o;
    o.jit_level = level;
    o.verify_passes = true;
    auto c = compiler::compile_executor(g, *be, sig, o);
    ASSERT_TRUE(c) << c.status().message();
    EXPECT_EQ((*c)->graph().value("s2")->type.to_string(), "seq(f32[2])");
    EXPECT_TRUE((*c)->graph().value("at")->type.is_static());  // all elements are f32[2]
    for (const auto& slot : (*c)->memory_plan().slots) {
      const ir::Value* v = (*c)->graph().value(slot.value);
      ASSERT_NE(v, nullptr);
      EXPECT_TRUE(v->type.is_tensor()) << slot.value << " is planned";
    }
    for (int run = 0; run < 2; ++run) {  // the second run takes the learned plan
      auto out = (*c)->run(sequence_inputs());
      ASSERT_TRUE(out) << out.status().message();
      expect_sequence_results(*out);
    }
  }
}

TEST(SequenceOps, SplitToSequenceAndConcatFromSequenceRoundTrip) {
  ir::Graph g;
  g.opsets[""] = 18;
  test::add_graph_input(g, "x", f32({2, 3}));
  g.add_initializer("split", Tensor::from_vector<int64_t>({1, 2}, {2}));
  g.add_node(test::value_node("SplitToSequence", {"x", "split"}, {"parts"}, {{"axis", int64_t{1}}}));
  g.add_node(test::value_node("ConcatFromSequence", {"parts"}, {"back"}, {{"axis", int64_t{1}}}));
  g.add_node(test::value_node("SplitToSequence", {"x"}, {"rows"}, {{"keepdims", int64_t{0}}}));
  g.add_node(
      test::value_node("ConcatFromSequence", {"rows"}, {"stacked"}, {{"axis", int64_t{-1}}, {"new_axis", int64_t{1}}}));
  g.outputs = {"parts", "back", "stacked"};
  auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor exe(g, *be);
  auto out = exe.run({{"x", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}});
  ASSERT_TRUE(out) << out.status().message();
  ASSERT_EQ((*out)[0].items().size(), 2u);
  EXPECT_EQ((*out)[0].items()[1].shape(), (Shape{2, 2}));
  EXPECT_EQ(floats((*out)[0].items()[1]), (std::vector<float>{2, 3, 5, 6}));
  EXPECT_EQ(floats((*out)[1]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ((*out)[2].shape(), (Shape{3, 2}));  // rows [3] stacked on a new last axis
  EXPECT_EQ(floats((*out)[2]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(SequenceOps, SequenceMapRunsTheBodyPerElement) {
  auto body = std::make_shared<ir::Graph>();
  body->name = "body";
  test::add_graph_input(*body, "e", ir::ValueType{DType::F32, std::nullopt, {}});
  test::add_graph_input(*body, "k", ir::ValueType{DType::F32, std::nullopt, {}});
  body->add_node(test::value_node("Add", {"e", "k"}, {"sum"}));
  body->add_node(test::value_node("Shape", {"e"}, {"shape"}));
  body->outputs = {"sum", "shape"};
  ir::Graph g;
  g.opsets[""] = 18;
  test::add_graph_input(g, "s", ir::ValueType::sequence_of(ir::ValueType{DType::F32, std::nullopt, {}}));
  test::add_graph_input(g, "k", f32({1}));
  g.add_node(test::value_node("SequenceMap", {"s", "k"}, {"sums", "shapes"}, {{"body", body}}));
  g.outputs = {"sums", "shapes"};
  const runtime::TensorMap in{
      {"s",
       Tensor::sequence({Tensor::from_vector<float>({1, 2}, {2}), Tensor::from_vector<float>({3}, {1})}, DType::F32)},
      {"k", Tensor::from_vector<float>({10}, {1})}};
  auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor eager(g, *be);
  auto a = eager.run(in);
  ASSERT_TRUE(a) << a.status().message();
  ASSERT_EQ((*a)[0].items().size(), 2u);
  EXPECT_EQ(floats((*a)[0].items()[0]), (std::vector<float>{11, 12}));
  EXPECT_EQ((*a)[1].items()[1].at_int(0), 1);
  std::map<std::string, ir::ValueType> sig{{"s", ir::type_of(in.at("s"))}, {"k", f32({1})}};
  auto c = compiler::compile_executor(g, *be, sig);
  ASSERT_TRUE(c) << c.status().message();
  auto b = (*c)->run(in);
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_EQ(floats((*b)[0].items()[1]), (std::vector<float>{13}));
}

TEST(SequenceOps, BadPositionsAndTypesNameTheNode) {
  ir::Graph g;
  g.opsets[""] = 18;
  test::add_graph_input(g, "a", f32({2}));
  g.add_initializer("far", Tensor::scalar<int64_t>(5));
  g.add_node(test::value_node("SequenceConstruct", {"a"}, {"s"}));
  ir::Node at = test::value_node("SequenceAt", {"s", "far"}, {"y"});
  at.name = "pick";
  g.add_node(at);
  g.outputs = {"y"};
  auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor exe(g, *be);
  auto out = exe.run({{"a", Tensor::from_vector<float>({1, 2}, {2})}});
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("pick"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("out of range"), std::string::npos) << out.status().message();

  ir::Graph h;
  h.opsets[""] = 18;
  test::add_graph_input(h, "a", f32({2}));
  h.add_node(test::value_node("SequenceLength", {"a"}, {"n"}));  // a tensor, not a sequence
  h.outputs = {"n"};
  runtime::EagerExecutor bad(h, *be);
  auto r = bad.run({{"a", Tensor::from_vector<float>({1, 2}, {2})}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("must be a sequence"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ms
