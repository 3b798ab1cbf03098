// Builder API modules: every layer gives the same outputs in PyNative and Graph mode, init is
// deterministic from the seed, traced node names are module paths, shape errors name the path.
#include <gtest/gtest.h>

#include "engine/frontend/nn/trace.h"
#include "tests/engine/nn_api_util.h"

namespace ms::nn {
namespace {

using testing::expect_modes_agree;
using testing::random_tensor;

// Wraps one layer under a name so its node names carry a path.
class Wrap : public Module {
 public:
  explicit Wrap(std::shared_ptr<Module> m) { inner_ = register_module("layer", std::move(m)); }
  Var forward(const Var& x) override { return (*inner_)(x); }

 private:
  std::shared_ptr<Module> inner_;
};

TEST(NnModule, EveryLayerAgreesAcrossModes) {
  manual_seed(1);
  struct Case {
    const char* name;
    std::shared_ptr<Module> m;
    Shape in;
  };
  std::vector<Case> cases = {
      {"Dense", std::make_shared<Dense>(12, 5), {3, 12}},
      {"Dense3d", std::make_shared<Dense>(12, 5), {2, 3, 12}},
      {"Conv2d", std::make_shared<Conv2d>(4, 6, 3, 1, 1), {1, 4, 8, 8}},
      {"Conv2dStridedGrouped", std::make_shared<Conv2d>(4, 8, 3, 2, 1, 2, false), {2, 4, 9, 9}},
      {"BatchNorm2d", std::make_shared<BatchNorm2d>(4), {2, 4, 5, 5}},
      {"LayerNorm", std::make_shared<LayerNorm>(6), {2, 3, 6}},
      {"ReLU", std::make_shared<ReLU>(), {4, 5}},
      {"ReLU6", std::make_shared<ReLU6>(), {4, 5}},
      {"GELU", std::make_shared<GELU>(), {4, 5}},
      {"Sigmoid", std::make_shared<Sigmoid>(), {4, 5}},
      {"Softmax", std::make_shared<Softmax>(-1), {4, 5}},
      {"Flatten", std::make_shared<Flatten>(), {2, 3, 4}},
      {"Dropout", std::make_shared<Dropout>(0.3f), {4, 5}},
      {"MaxPool2d", std::make_shared<MaxPool2d>(2), {1, 3, 6, 6}},
      {"AvgPool2d", std::make_shared<AvgPool2d>(3, 1, 1), {1, 3, 6, 6}},
      {"AdaptiveAvgPool2d", std::make_shared<AdaptiveAvgPool2d>(1), {2, 3, 4, 4}},
      {"MultiHeadAttention", std::make_shared<MultiHeadAttention>(8, 2), {2, 5, 8}},
  };
  auto seq = std::make_shared<Sequential>();
  seq->add(std::make_shared<Dense>(6, 4)).add(std::make_shared<ReLU>()).add(std::make_shared<Dense>(4, 2));
  cases.push_back({"Sequential", seq, {3, 6}});
  uint64_t seed = 10;
  for (auto& c : cases) {
    Wrap w(c.m);
    expect_modes_agree(w, {Var(random_tensor(c.in, seed++))}, 1e-4, c.name);
  }
  // Embedding takes integer ids.
  Wrap emb(std::make_shared<Embedding>(10, 4));
  expect_modes_agree(emb, {Var(Tensor::from_vector<int64_t>({1, 3, 9, 0, 2, 2}, {2, 3}))}, 1e-6, "Embedding");
}

TEST(NnModule, SameSeedSameWeightsDifferentSeedDifferent) {
  auto build = [](uint64_t seed) {
    manual_seed(seed);
    auto s = std::make_shared<Sequential>();
    s->add(std::make_shared<Conv2d>(3, 4, 3)).add(std::make_shared<Dense>(5, 7)).add(std::make_shared<Embedding>(6, 3));
    return s;
  };
  auto a = build(7), b = build(7), c = build(8);
  auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  bool any_diff = false;
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].first, pb[i].first);
    EXPECT_EQ(testing::max_rel_diff(pa[i].second, pb[i].second), 0.0) << pa[i].first;
    if (testing::max_rel_diff(pa[i].second, pc[i].second) > 0) any_diff = true;
  }
  EXPECT_TRUE(any_diff);
  EXPECT_EQ(pa[0].first, "0.weight");
  EXPECT_EQ(pa[2].first, "1.weight");
}

TEST(NnModule, DenseInitStaysInPyTorchRange) {
  manual_seed(0);
  Dense d(400, 10);
  const float bound = 1.0f / 20.0f;
  for (const auto& [name, t] : d.named_parameters())
    for (float v : t.span<float>()) ASSERT_LE(std::abs(v), bound) << name;
}

TEST(NnModule, TracedNodeNamesAreModulePaths) {
  manual_seed(0);
  auto inner = std::make_shared<Sequential>();
  inner->add(std::make_shared<Dense>(4, 4)).add(std::make_shared<ReLU>());
  Wrap w(inner);
  auto g = trace_module(w, {static_type(DType::F32, {2, 4})});
  ASSERT_TRUE(g) << g.status().message();
  ASSERT_EQ(g->nodes().size(), 2u);
  EXPECT_EQ(g->nodes()[0].name, "layer.0");
  EXPECT_EQ(g->nodes()[0].op_type, "Gemm");
  EXPECT_EQ(g->nodes()[1].name, "layer.1");
  EXPECT_TRUE(g->value("layer.0.weight") && g->value("layer.0.weight")->is_initializer());
  EXPECT_EQ(g->opset(), kTraceOpset);
  for (const auto& n : g->nodes()) EXPECT_TRUE(n.id.valid());
}

TEST(NnModule, ShapeMismatchNamesTheModulePathInBothModes) {
  manual_seed(0);
  auto seq = std::make_shared<Sequential>();
  seq->add(std::make_shared<Dense>(8, 4)).add(std::make_shared<Dense>(5, 2));
  Wrap w(seq);
  Var x(random_tensor({3, 8}, 1));
  for (Mode m : {Mode::PyNative, Mode::Graph}) {
    testing::ModeScope s(m);
    Var y = w(x);
    ASSERT_FALSE(y.ok()) << mode_name(m);
    EXPECT_NE(y.status().message().find("layer.1"), std::string::npos) << y.status().message();
    EXPECT_NE(y.status().message().find("Dense 5->2"), std::string::npos) << y.status().message();
    EXPECT_NE(y.status().message().find("[3,4]"), std::string::npos) << y.status().message();
  }
}

TEST(NnModule, GenericOpReachesTheRegistry) {
  Var x(Tensor::from_vector<float>({-2, -0.5f, 1, 3}, {4}));
  Var y = F::op("LeakyRelu", {x}, {{"alpha", 0.5f}});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_FLOAT_EQ(y.tensor()->data<float>()[0], -1.0f);
  EXPECT_FLOAT_EQ(y.tensor()->data<float>()[3], 3.0f);
  Var bad = F::op("NoSuchOp", {x});
  EXPECT_FALSE(bad.ok());
  // Errors propagate through later ops.
  Var later = F::relu(F::add(bad, x));
  EXPECT_FALSE(later.ok());
  EXPECT_NE(later.status().message().find("NoSuchOp"), std::string::npos);
}

TEST(NnModule, ModuleWithoutForwardFailsCleanly) {
  Module m;
  Var y = m(Var(random_tensor({2}, 1)));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("neither forward"), std::string::npos);
}

}  // namespace
}  // namespace ms::nn
