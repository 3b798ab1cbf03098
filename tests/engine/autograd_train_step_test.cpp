// TrainStep: the same SGD steps from the same seed give the same losses and parameters in
// PyNative and Graph mode; the Graph step is one graph with parameters, lr and the batch as inputs.
#include <algorithm>

#include "engine/frontend/train/optim.h"
#include "engine/frontend/train/step.h"
#include "tests/engine/autograd_test_util.h"

namespace ms::test::autograd {
namespace {

using nn::train::TrainStep;

std::shared_ptr<nn::Module> tiny_mlp() {
  nn::manual_seed(11);
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Dense>(8, 16));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Dense>(16, 4));
  return m;
}

class ConvBn : public nn::Module {
 public:
  ConvBn() {
    conv_ = register_module("conv", std::make_shared<nn::Conv2d>(2, 4, 3, 1, 1));
    bn_ = register_module("bn", std::make_shared<nn::BatchNorm2d>(4));
    fc_ = register_module("fc", std::make_shared<nn::Dense>(4, 3));
  }
  Var forward(const Var& x) override {
    Var h = nn::F::relu((*bn_)((*conv_)(x)));
    return (*fc_)(nn::F::flatten(nn::F::global_avg_pool(h), 1));
  }

 private:
  std::shared_ptr<nn::Module> conv_, bn_, fc_;
};

Var xent(nn::Module& m, const Vars& in) {
  Var logits = m(in[0]);
  Var lsm = F::op("LogSoftmax", {logits}, {{"axis", int64_t{-1}}});
  return F::mul(F::reduce_sum(F::mul(lsm, in[1])), -1.0 / static_cast<double>(logits.dim(0)));
}

Tensor one_hot_targets(int64_t n, int64_t classes) {
  Tensor t = Tensor::zeros(DType::F32, {n, classes});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i * classes + (i * 3 + 1) % classes] = 1.0f;
  return t;
}

std::vector<double> run_steps(nn::Module& m, nn::Mode mode, const Vars& batch, int steps, double lr,
                              TrainStep** keep = nullptr) {
  static std::unique_ptr<TrainStep> last;
  last = std::make_unique<TrainStep>(m, xent, nn::train::sgd_rule(), mode);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    auto st = last->step(batch, lr);
    EXPECT_TRUE(st.has_value()) << st.status().message();
    if (!st) break;
    losses.push_back(st->loss);
  }
  if (keep) *keep = last.get();
  return losses;
}

std::vector<Tensor> snapshot(nn::Module& m) {
  std::vector<Tensor> out;
  for (const auto& [n, t] : m.named_parameters()) out.push_back(t.clone());
  return out;
}

TEST(AutogradTrainStep, SgdLowersTheLossIdenticallyInBothModes) {
  const Vars batch{Var(rand_tensor(DType::F32, {8, 8}, 5)), Var(one_hot_targets(8, 4))};
  auto a = tiny_mlp();
  auto b = tiny_mlp();
  TrainStep* graph_step = nullptr;
  const auto la = run_steps(*a, nn::Mode::PyNative, batch, 20, 0.1);
  const auto lb = run_steps(*b, nn::Mode::Graph, batch, 20, 0.1, &graph_step);
  ASSERT_EQ(la.size(), 20u);
  ASSERT_EQ(lb.size(), 20u);
  EXPECT_LT(la.back(), la.front() * 0.9);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(la[i], lb[i], 1e-4 * std::max(1.0, la[i])) << "step " << i;
  EXPECT_LT(max_rel_diff(snapshot(*b), snapshot(*a)), 1e-4);

  // One graph: parameters, lr, step and the batch are inputs (not initializers); backward and
  // optimizer nodes are named under their scopes.
  ASSERT_NE(graph_step, nullptr);
  const ir::Graph* g = graph_step->graph();
  ASSERT_NE(g, nullptr);
  for (const char* in : {"0.weight", "2.bias", "lr", "step", "input_0", "input_1"}) {
    EXPECT_NE(std::find(g->inputs.begin(), g->inputs.end(), in), g->inputs.end()) << in;
  }
  for (const auto& name : g->initializer_names()) EXPECT_EQ(name.find("weight"), std::string::npos) << name;
  int grad_nodes = 0, opt_nodes = 0;
  for (const auto& n : g->nodes()) {
    grad_nodes += nn::is_backward_node_name(n.name);
    opt_nodes += n.name.rfind("optimizer.", 0) == 0;
  }
  EXPECT_GT(grad_nodes, 0);
  EXPECT_GT(opt_nodes, 0);
  EXPECT_EQ(g->outputs.size(), 1u + 4u);  // loss + 4 new parameters (SGD has no state)
}

TEST(AutogradTrainStep, BatchNormTrainingUpdatesRunningStatsInBothModes) {
  nn::manual_seed(3);
  ConvBn a;
  nn::manual_seed(3);
  ConvBn b;
  nn::set_training(a, true);
  nn::set_training(b, true);
  const Vars batch{Var(rand_tensor(DType::F32, {4, 2, 5, 5}, 9)), Var(one_hot_targets(4, 3))};
  const auto la = run_steps(a, nn::Mode::PyNative, batch, 5, 0.05);
  const auto lb = run_steps(b, nn::Mode::Graph, batch, 5, 0.05);
  ASSERT_EQ(la.size(), 5u);
  ASSERT_EQ(lb.size(), 5u);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(la[i], lb[i], 1e-4 * std::max(1.0, la[i])) << "step " << i;
  // Running statistics moved away from their initial 0 / 1, the same way in both modes.
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i].first.find("running_") == std::string::npos) continue;
    double moved = 0;
    for (int64_t j = 0; j < pa[i].second.numel(); ++j)
      moved += std::abs(pa[i].second.at_double(j) - (pa[i].first.find("var") != std::string::npos ? 1.0 : 0.0));
    EXPECT_GT(moved, 0) << pa[i].first;
    EXPECT_LT(max_rel_diff({pb[i].second}, {pa[i].second}), 1e-4) << pa[i].first;
  }
  EXPECT_EQ(nn::trainable_parameters(a).size(), pa.size() - 2);  // running stats are buffers
}

TEST(AutogradTrainStep, AssignParametersChecksShapes) {
  auto m = tiny_mlp();
  std::vector<Tensor> wrong{Tensor::zeros(DType::F32, {1})};
  EXPECT_FALSE(nn::assign_parameters(*m, wrong).is_ok());
  std::vector<Tensor> zeros;
  for (const Var& p : nn::trainable_parameters(*m)) zeros.push_back(Tensor::zeros(p.dtype(), p.shape()));
  ASSERT_TRUE(nn::assign_parameters(*m, zeros).is_ok());
  for (const auto& [n, t] : m->named_parameters())
    for (int64_t j = 0; j < t.numel(); ++j) ASSERT_EQ(t.at_double(j), 0.0) << n;
}

TEST(AutogradTrainStep, ValueAndGradRunsModulesOpByOpInGraphMode) {
  // In a Graph-mode context a module call would run compiled, out of the tape's sight; under
  // value_and_grad it runs op by op, so the gradients are the PyNative ones.
  auto m = tiny_mlp();
  const Vars batch{Var(rand_tensor(DType::F32, {4, 8}, 2)), Var(one_hot_targets(4, 4))};
  const Vars params = nn::trainable_parameters(*m);
  auto eager = nn::grad([&] { return xent(*m, batch); }, params);
  nn::set_context(nn::Mode::Graph);
  auto graph_ctx = nn::grad([&] { return xent(*m, batch); }, params);
  nn::set_context(nn::Mode::PyNative);
  ASSERT_TRUE(eager.has_value()) << eager.status().message();
  ASSERT_TRUE(graph_ctx.has_value()) << graph_ctx.status().message();
  std::vector<Tensor> a, b;
  for (const Var& g : *eager) a.push_back(*g.tensor());
  for (const Var& g : *graph_ctx) b.push_back(*g.tensor());
  EXPECT_EQ(max_rel_diff(a, b), 0.0);
}

}  // namespace
}  // namespace ms::test::autograd

namespace ms::test::autograd {
namespace {

// SGD where parameter i takes lr[i % 2] from a per-group lr vector.
nn::train::UpdateRule two_group_sgd() {
  nn::train::UpdateRule r;
  r.init_state = [](const Vars&) { return Vars{}; };
  r.update = [](const Vars& params, const Vars& grads, const Vars& state, const Var& lr, const Var&) {
    Vars out;
    for (size_t i = 0; i < params.size(); ++i) {
      Var l = F::gather(lr, Var(Tensor::scalar<int64_t>(static_cast<int64_t>(i % 2))), 0);
      out.push_back(F::sub(params[i], F::mul(grads[i], l)));
    }
    return std::make_pair(out, state);
  };
  return r;
}

TEST(AutogradTrainStep, PerGroupLearningRatesAreOneGraphInputInBothModes) {
  const Vars batch{Var(rand_tensor(DType::F32, {8, 8}, 5)), Var(one_hot_targets(8, 4))};
  const std::vector<std::vector<double>> lrs{{0.5, 0.0}, {0.1, 0.0}, {0.05, 0.2}};
  auto eager = tiny_mlp();
  auto graph = tiny_mlp();
  const std::vector<Tensor> start = snapshot(*graph);
  TrainStep a(*eager, xent, two_group_sgd(), nn::Mode::PyNative);
  TrainStep b(*graph, xent, two_group_sgd(), nn::Mode::Graph);
  int compiles = 0;
  for (size_t s = 0; s < lrs.size(); ++s) {
    auto sa = a.step(batch, lrs[s]);
    auto sb = b.step(batch, lrs[s]);
    ASSERT_TRUE(sa.has_value() && sb.has_value()) << sa.status().message() << sb.status().message();
    compiles += sb->compile_ms > 0;
    if (s == 1) {  // the second group (biases) had lr 0 so far: unchanged
      const std::vector<Tensor> now = snapshot(*graph);
      for (size_t i = 1; i < now.size(); i += 2) EXPECT_EQ(max_rel_diff({now[i]}, {start[i]}), 0.0) << i;
    }
  }
  EXPECT_EQ(compiles, 1);
  const std::vector<Tensor> pa = snapshot(*eager), pb = snapshot(*graph);
  EXPECT_LT(max_rel_diff(pb, pa), 1e-5);
  EXPECT_GT(max_rel_diff({pb[1]}, {start[1]}), 1e-4);  // the last step's lr 0.2 moved the biases
  const ir::Graph* g = b.graph();
  ASSERT_NE(g, nullptr);
  const ir::Value* lr = g->value("lr");
  ASSERT_NE(lr, nullptr);
  EXPECT_EQ(lr->type.to_string(), "f32[2]");
  EXPECT_FALSE(b.step(batch, std::vector<double>{}).has_value());
}

// Adam steps switching modes (set_mode) continue the moments and the step count: PyNative,
// PyNative, Graph, Graph ends where four Graph steps do, with one compile.
TEST(AutogradTrainStep, SetModeCarriesTheOptimizerStateOver) {
  const Vars batch{Var(rand_tensor(DType::F32, {8, 8}, 5)), Var(one_hot_targets(8, 4))};
  nn::train::OptimizerConfig adam;
  adam.kind = nn::train::OptimizerKind::Adam;
  auto mixed = tiny_mlp();
  auto graph = tiny_mlp();
  TrainStep a(*mixed, xent, nn::train::make_update_rule(adam), nn::Mode::PyNative);
  TrainStep b(*graph, xent, nn::train::make_update_rule(adam), nn::Mode::Graph);
  int compiles = 0;
  for (int s = 0; s < 4; ++s) {
    if (s == 2) a.set_mode(nn::Mode::Graph);
    auto sa = a.step(batch, 0.01);
    auto sb = b.step(batch, 0.01);
    ASSERT_TRUE(sa.has_value() && sb.has_value()) << sa.status().message() << sb.status().message();
    compiles += sa->compile_ms > 0;
  }
  EXPECT_EQ(a.mode(), nn::Mode::Graph);
  EXPECT_EQ(a.steps(), 4);
  EXPECT_EQ(compiles, 1);
  EXPECT_LT(max_rel_diff(snapshot(*mixed), snapshot(*graph)), 1e-5);
  EXPECT_LT(max_rel_diff(a.state(), b.state()), 1e-5);
  // Back to PyNative and to Graph again: no new compile, the steps go on.
  a.set_mode(nn::Mode::PyNative);
  ASSERT_TRUE(a.step(batch, 0.01).has_value());
  a.set_mode(nn::Mode::Graph);
  auto again = a.step(batch, 0.01);
  ASSERT_TRUE(again.has_value()) << again.status().message();
  EXPECT_EQ(again->compile_ms, 0.0);
  EXPECT_EQ(a.steps(), 6);
}

}  // namespace
}  // namespace ms::test::autograd
