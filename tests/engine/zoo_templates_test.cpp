// Zoo templates (small parameters): PyNative and Graph outputs agree, same seed -> same weights,
// node names are module paths, URI parsing and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "engine/frontend/zoo/zoo.h"
#include "tests/engine/nn_api_util.h"

namespace ms::zoo {
namespace {

using nn::testing::max_rel_diff;
using nn::testing::random_tensor;

const char* const kSmall[] = {
    "zoo:mnist_mlp?batch=2&size=8&hidden=16",
    "zoo:dense_chain?batch=2&size=16&hidden=32&classes=8",
    "zoo:dense_chain_seq?batch=2&size=16&hidden=32&classes=8",
    "zoo:dynamic_net?size=16&classes=4",
    "zoo:lenet5?batch=2",
    "zoo:resnet18?size=32&width=8&classes=10",
    "zoo:resnet50?size=32&width=8&classes=10",
    "zoo:mobilenet_v2?size=32&width=8&classes=10",
    "zoo:vgg11?size=32&width=8&hidden=32&classes=10",
    "zoo:transformer_encoder?seq=8&layers=2&hidden=16&heads=2&vocab=50",
    "zoo:inception_block?size=16&width=16",
};

nn::Var example_input(const Model& m, uint64_t seed) {
  const ir::ValueType& t = m.inputs[0];
  if (t.dtype == DType::I64) {
    Tensor ids = Tensor::empty(DType::I64, *t.dims);
    for (int64_t i = 0; i < ids.numel(); ++i) ids.data<int64_t>()[i] = static_cast<int64_t>((i * 7 + seed) % 50);
    return nn::Var(ids);
  }
  return nn::Var(random_tensor(*t.dims, seed));
}

TEST(ZooTemplates, EveryTemplateIsCoveredHere) {
  std::set<std::string> covered;
  for (const char* u : kSmall) covered.insert(parse_uri(u)->name);
  for (const auto& t : templates()) EXPECT_TRUE(covered.count(t.name)) << t.name;
  EXPECT_GE(templates().size(), 11u);
}

// One test per template keeps each short (also under the sanitizers).
class ZooTemplateModes : public ::testing::TestWithParam<const char*> {};

TEST_P(ZooTemplateModes, PyNativeAndGraphAgree) {
  const char* u = GetParam();
  auto uri = parse_uri(u);
  ASSERT_TRUE(uri) << uri.status().message();
  auto m = build_model(*uri);
  ASSERT_TRUE(m) << m.status().message();
  nn::Var x = example_input(*m, 3);
  nn::testing::expect_modes_agree(*m->module, {x}, 1e-3, u);
  // Outputs stay in a sane range (no blow-up through deep stacks).
  nn::testing::ModeScope s(nn::Mode::PyNative);
  nn::Var y = (*m->module)(x);
  ASSERT_TRUE(y.ok()) << u;
  for (int64_t i = 0; i < y.tensor()->numel(); ++i) {
    const double v = y.tensor()->at_double(i);
    ASSERT_TRUE(std::isfinite(v) && std::abs(v) < 1e3) << u << " output " << v;
  }
}

INSTANTIATE_TEST_SUITE_P(Small, ZooTemplateModes, ::testing::ValuesIn(kSmall),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = std::string(info.param).substr(4);
                           return n.substr(0, n.find('?'));
                         });

TEST(ZooTemplates, DynamicNetTakesBothBranches) {
  auto m = build_model(*parse_uri("zoo:dynamic_net?size=8&classes=3"));
  ASSERT_TRUE(m);
  for (float sign : {1.0f, -1.0f}) {
    nn::Var x(random_tensor({1, 8}, 1, 0.1f * sign, 1.0f * sign));
    nn::testing::expect_modes_agree(*m->module, {x}, 1e-4, sign > 0 ? "positive" : "negative");
  }
  // The two branches give different results (8 layers vs 5): check via the eager module.
  nn::Var pos(random_tensor({1, 8}, 1, 0.1f, 1.0f));
  nn::Var neg(nn::F::neg(pos));
  auto g = build_graph("zoo:dynamic_net?size=8&classes=3");
  ASSERT_TRUE(g) << g.status().message();
  const ir::Node* iff = nullptr;
  for (const auto& n : g->nodes())
    if (n.op_type == "If") iff = &n;
  ASSERT_NE(iff, nullptr);
  EXPECT_EQ(iff->attr_graph("then_branch")->nodes().size(), 16u);  // 8 x (Gemm, Relu)
  EXPECT_EQ(iff->attr_graph("else_branch")->nodes().size(), 10u);  // 5 x (Gemm, Relu)
}

TEST(ZooTemplates, SameSeedSameWeights) {
  for (const char* u : {"zoo:lenet5", "zoo:resnet18?size=32&width=4",
                        "zoo:transformer_encoder?seq=4&layers=1&hidden=8&heads=2&vocab=10"}) {
    auto a = build_model(*parse_uri(u));
    auto b = build_model(*parse_uri(u));
    auto c = build_model(
        *parse_uri(std::string(u) + (std::string(u).find('?') == std::string::npos ? "?" : "&") + "seed=9"));
    ASSERT_TRUE(a && b && c);
    auto pa = a->module->named_parameters(), pb = b->module->named_parameters(), pc = c->module->named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    bool differs = false;
    for (size_t i = 0; i < pa.size(); ++i) {
      ASSERT_EQ(max_rel_diff(pa[i].second, pb[i].second), 0.0) << u << " " << pa[i].first;
      differs |= max_rel_diff(pa[i].second, pc[i].second) > 0;
    }
    EXPECT_TRUE(differs) << u;
  }
}

TEST(ZooTemplates, DenseChainWrittenBothWaysGivesTheSameOutputs) {
  auto a = build_model(*parse_uri("zoo:dense_chain?batch=2&size=8&hidden=12&classes=4"));
  auto b = build_model(*parse_uri("zoo:dense_chain_seq?batch=2&size=8&hidden=12&classes=4"));
  ASSERT_TRUE(a && b);
  nn::Var x(random_tensor({2, 8}, 5));
  EXPECT_EQ(max_rel_diff(*(*a->module)(x).tensor(), *(*b->module)(x).tensor()), 0.0);
}

TEST(ZooTemplates, NodeNamesAreModulePaths) {
  auto g = build_graph("zoo:resnet18?size=32&width=4");
  ASSERT_TRUE(g) << g.status().message();
  std::set<std::string> names;
  for (const auto& n : g->nodes()) names.insert(n.name);
  for (const char* want :
       {"conv1", "bn1", "maxpool", "layer1.0.conv1", "layer1.0.add", "layer2.0.downsample.0", "fc"}) {
    EXPECT_TRUE(names.count(want)) << want;
  }
  EXPECT_TRUE(g->value("layer1.0.conv1.weight"));
  EXPECT_EQ(g->metadata["modescope.zoo"], "zoo:resnet18?size=32&width=4");
  EXPECT_EQ(g->inputs, std::vector<std::string>{"input"});
}

TEST(ZooTemplates, UriParsingAndErrors) {
  auto u = parse_uri("zoo:resnet50?batch=8");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->params["batch"], 8);
  EXPECT_EQ(u->params["size"], 224);
  EXPECT_EQ(to_uri(*u), "zoo:resnet50?batch=8");
  EXPECT_TRUE(is_zoo_uri("zoo:x"));
  EXPECT_FALSE(is_zoo_uri("model.onnx"));
  auto bad_name = parse_uri("zoo:resnet51");
  ASSERT_FALSE(bad_name);
  EXPECT_NE(bad_name.status().message().find("resnet50"), std::string::npos);  // lists the templates
  auto bad_key = parse_uri("zoo:lenet5?depth=3");
  ASSERT_FALSE(bad_key);
  EXPECT_NE(bad_key.status().message().find("classes"), std::string::npos);  // lists the parameters
  EXPECT_FALSE(parse_uri("zoo:lenet5?batch=x"));
  EXPECT_FALSE(parse_uri("zoo:lenet5?batch=0"));
  EXPECT_FALSE(parse_uri("zoo:lenet5?batch"));
  EXPECT_FALSE(build_graph("zoo:transformer_encoder?hidden=10&heads=3"));
  EXPECT_NE(templates_json().find("\"mnist_mlp\""), std::string::npos);
}

}  // namespace
}  // namespace ms::zoo
