// String tensors: interned handles (core/strings.h), data-movement ops on them, Equal, StringConcat,
// StringSplit, StringNormalizer, RegexFullMatch, Cast to and from strings and ai.onnx.ml LabelEncoder;
// a string model in both modes.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/core/strings.h"
#include "engine/runtime/executor.h"
#include "tests/engine/value_kinds_test_util.h"

namespace ms {
namespace {

std::vector<std::string> texts(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::String);
  std::vector<std::string> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(string_at(t, i));
  return out;
}

Expected<std::vector<Tensor>> run_one(const std::string& op, std::vector<Tensor> in, size_t outputs = 1,
                                      std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Graph g;
  g.opsets[""] = 21;
  std::vector<std::string> names, outs;
  runtime::TensorMap feed;
  for (size_t i = 0; i < in.size(); ++i) {
    names.push_back("in" + std::to_string(i));
    g.inputs.push_back(names.back());
    g.add_value(ir::Value{names.back(), ir::type_of(in[i]), {}, std::nullopt});
    feed[names.back()] = in[i];
  }
  for (size_t o = 0; o < outputs; ++o) outs.push_back("out" + std::to_string(o));
  g.add_node(test::value_node(op, names, outs, std::move(attrs)));
  g.outputs = outs;
  static auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor exe(g, *be);
  return exe.run(feed);
}

TEST(StringTensors, InternedHandlesCompareByIdentity) {
  EXPECT_EQ(intern_string("abc"), intern_string(std::string("ab") + "c"));
  EXPECT_NE(intern_string("abc"), intern_string("abd"));
  const Tensor t = string_tensor({"x", "yz"}, {2});
  EXPECT_EQ(dtype_size(DType::String), 8u);
  EXPECT_EQ(texts(t.clone()), (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(texts(Tensor::zeros(DType::String, {2})), (std::vector<std::string>{"", ""}));
  EXPECT_NE(t.to_string().find("\"yz\""), std::string::npos);
}

TEST(StringOps, DataMovementAndEqualInBothModes) {
  ir::Graph g;
  g.opsets[""] = 21;
  g.inputs = {"s"};
  g.add_value(ir::Value{"s", ir::ValueType{DType::String, std::vector<int64_t>{2, 2}, {"", ""}}, {}, std::nullopt});
  g.add_initializer("perm_shape", Tensor::from_vector<int64_t>({4}, {1}));
  g.add_initializer("idx", Tensor::from_vector<int64_t>({3, 0}, {2}));
  g.add_initializer("want", string_tensor({"d", "x"}, {2}));
  g.add_node(test::value_node("Transpose", {"s"}, {"t"}, {{"perm", std::vector<int64_t>{1, 0}}}));
  g.add_node(test::value_node("Reshape", {"t"}, {"flat"}));
  g.nodes().back().inputs.push_back("perm_shape");
  g.add_node(test::value_node("Gather", {"flat", "idx"}, {"picked"}));
  g.add_node(test::value_node("Concat", {"picked", "want"}, {"both"}, {{"axis", int64_t{0}}}));
  g.add_node(test::value_node("Equal", {"picked", "want"}, {"eq"}));
  g.outputs = {"both", "eq"};
  const runtime::TensorMap in{{"s", string_tensor({"a", "b", "c", "d"}, {2, 2})}};
  auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor eager(g, *be);
  auto a = eager.run(in);
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_EQ(texts((*a)[0]), (std::vector<std::string>{"d", "a", "d", "x"}));
  EXPECT_TRUE((*a)[1].data<bool>()[0]);
  EXPECT_FALSE((*a)[1].data<bool>()[1]);
  auto c = compiler::compile_executor(g, *be, {{"s", g.value("s")->type}});
  ASSERT_TRUE(c) << c.status().message();
  auto b = (*c)->run(in);
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_EQ(texts((*b)[0]), texts((*a)[0]));
}

TEST(StringOps, ConcatSplitNormalizeMatch) {
  auto cat = run_one("StringConcat", {string_tensor({"a", "b"}, {2}), string_tensor({"!"}, {1})});
  ASSERT_TRUE(cat) << cat.status().message();
  EXPECT_EQ(texts((*cat)[0]), (std::vector<std::string>{"a!", "b!"}));

  auto split = run_one("StringSplit", {string_tensor({"a,b,,c", "x"}, {2})}, 2,
                       {{"delimiter", std::string(",")}, {"maxsplit", int64_t{2}}});
  ASSERT_TRUE(split) << split.status().message();
  EXPECT_EQ((*split)[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(texts((*split)[0]), (std::vector<std::string>{"a", "b", ",c", "x", "", ""}));
  EXPECT_EQ((*split)[1].data<int64_t>()[0], 3);
  auto ws = run_one("StringSplit", {string_tensor({"  one two  "}, {1})}, 2);
  ASSERT_TRUE(ws) << ws.status().message();
  EXPECT_EQ(texts((*ws)[0]), (std::vector<std::string>{"one", "two"}));

  auto norm =
      run_one("StringNormalizer", {string_tensor({"Monday", "tuesday", "THE"}, {3})}, 1,
              {{"case_change_action", std::string("UPPER")}, {"stopwords", std::vector<std::string>{"the", "monday"}}});
  ASSERT_TRUE(norm) << norm.status().message();
  EXPECT_EQ(texts((*norm)[0]), (std::vector<std::string>{"TUESDAY"}));

  auto match = run_one("RegexFullMatch", {string_tensor({"www.example.com", "example.org"}, {2})}, 1,
                       {{"pattern", std::string(R"(www\.[\w.-]+\.\bcom\b)")}});
  ASSERT_TRUE(match) << match.status().message();
  EXPECT_TRUE((*match)[0].data<bool>()[0]);
  EXPECT_FALSE((*match)[0].data<bool>()[1]);

  auto bad = run_one("RegexFullMatch", {string_tensor({"a"}, {1})}, 1, {{"pattern", std::string("(")}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("not a valid regular expression"), std::string::npos);
}

TEST(StringOps, CastPrintsAndParsesNumbers) {
  auto text =
      run_one("Cast", {Tensor::from_vector<float>({0.039187793f, 2.0f, -1.5e-5f}, {3})}, 1, {{"to", int64_t{8}}});
  ASSERT_TRUE(text) << text.status().message();
  EXPECT_EQ(texts((*text)[0]), (std::vector<std::string>{"0.039187793", "2.0", "-1.5e-05"}));
  auto num = run_one("Cast", {string_tensor({"0.5", "NaN", "+INF", "-INF"}, {4})}, 1, {{"to", int64_t{1}}});
  ASSERT_TRUE(num) << num.status().message();
  const float* v = (*num)[0].data<float>();
  EXPECT_EQ(v[0], 0.5f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_TRUE(std::isinf(v[2]) && v[2] > 0);
  EXPECT_TRUE(std::isinf(v[3]) && v[3] < 0);
  auto bad = run_one("Cast", {string_tensor({"zebra"}, {1})}, 1, {{"to", int64_t{7}}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("does not read as"), std::string::npos) << bad.status().message();
}

TEST(StringOps, LabelEncoderMapsStringsWithADefault) {
  ir::Graph g;
  g.opsets[""] = 21;
  g.opsets["ai.onnx.ml"] = 4;
  test::add_graph_input(g, "x", ir::ValueType{DType::String, std::vector<int64_t>{4}, {""}});
  ir::Node n = test::value_node("LabelEncoder", {"x"}, {"y"},
                                {{"keys_strings", std::vector<std::string>{"a", "b"}},
                                 {"values_int64s", std::vector<int64_t>{7, 8}},
                                 {"default_int64", int64_t{-5}}});
  n.domain = "ai.onnx.ml";
  g.add_node(n);
  g.outputs = {"y"};
  auto be = backends::create_cpu_backend(1);
  runtime::EagerExecutor exe(g, *be);
  auto out = exe.run({{"x", string_tensor({"b", "a", "zz", "b"}, {4})}});
  ASSERT_TRUE(out) << out.status().message();
  const int64_t* y = (*out)[0].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(y, y + 4), (std::vector<int64_t>{8, 7, -5, 8}));
}

}  // namespace
}  // namespace ms
