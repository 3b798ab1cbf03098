// Mixed-precision training: zoo:mnist_mlp on the digits at O2 in both modes reaches the f32
// accuracy within a point; a conv+BatchNorm step at O2 keeps f32 master weights and f32 batch
// statistics while the convs run in bf16; loss scaling skips a step whose gradients are not
// finite (parameters, optimizer state and running statistics untouched) and halves the scale,
// then grows it after good steps, in PyNative and in the traced Graph step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/compiler/pipeline.h"
#include "engine/frontend/nn/autograd.h"
#include "engine/frontend/nn/nn.h"
#include "engine/frontend/train/losses.h"
#include "engine/frontend/train/optim.h"
#include "engine/frontend/train/run.h"
#include "engine/frontend/train/step.h"
#include "tests/engine/train_test_util.h"

namespace ms::nn::train {
namespace {

using compiler::AmpLevel;

RunOptions digits_mlp(Mode mode, AmpLevel amp) {
  RunOptions o = testing::digits_mlp(mode, 150);
  o.amp = amp;
  return o;
}

class ContextScope {
 public:
  ContextScope() : saved_(get_context()) { set_context(Context{Mode::PyNative, "cpu", 1}); }
  ~ContextScope() { set_context(saved_); }

 private:
  Context saved_;
};

TEST(AmpTrain, DigitsMlpAtO2MatchesF32AccuracyInBothModes) {
  ContextScope ctx;
  for (Mode mode : {Mode::PyNative, Mode::Graph}) {
    auto f32 = run_training(digits_mlp(mode, AmpLevel::O0));
    ASSERT_TRUE(f32) << f32.status().message();
    auto bf16 = run_training(digits_mlp(mode, AmpLevel::O2));
    ASSERT_TRUE(bf16) << bf16.status().message();
    EXPECT_GE(f32->accuracy, 0.9);
    EXPECT_GE(bf16->accuracy, f32->accuracy - 0.01) << mode_name(mode);
    EXPECT_LT(bf16->losses.back(), 0.6);
    std::printf("digits mlp %s: accuracy O0 %.4f O2 %.4f; step median %.3f / %.3f ms\n", mode_name(mode), f32->accuracy,
                bf16->accuracy, f32->steady.median, bf16->steady.median);
  }
}

class ConvBn : public Module {
 public:
  ConvBn() {
    manual_seed(3);
    conv_ = register_module("conv", std::make_shared<Conv2d>(2, 4, 3, 1, 1));
    bn_ = register_module("bn", std::make_shared<BatchNorm2d>(4));
    fc_ = register_module("fc", std::make_shared<Dense>(4, 3));
  }
  Var forward(const Var& x) override {
    Var h = F::relu((*bn_)((*conv_)(x)));
    return (*fc_)(F::flatten(F::global_avg_pool(h), 1));
  }
  std::string type_name() const override { return "ConvBn"; }

 private:
  std::shared_ptr<Module> conv_, bn_, fc_;
};

Var xent(Module& m, const Vars& in) { return cross_entropy(m(in[0]), in[1]); }

Vars batch(float poison = 0) {
  Tensor x = Tensor::empty(DType::F32, {4, 2, 5, 5});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 37) % 11) / 11.f - 0.4f;
  if (poison != 0) x.data<float>()[7] = poison;
  return {Var(x), Var(Tensor::from_vector<int64_t>({0, 1, 2, 1}, {4}))};
}

std::vector<Tensor> snapshot(Module& m) {
  std::vector<Tensor> out;
  for (const auto& [n, t] : m.named_parameters()) out.push_back(t.clone());
  return out;
}

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()) != 0) return false;
  return a.size() == b.size();
}

TEST(AmpTrain, O1AndO2StepsKeepF32MasterWeightsAndRunConvsInBf16) {
  ContextScope ctx;
  for (AmpLevel level : {AmpLevel::O1, AmpLevel::O2})
    for (Mode mode : {Mode::PyNative, Mode::Graph}) {
      SCOPED_TRACE(std::string(compiler::amp_level_name(level)) + " " + mode_name(mode));
      ConvBn m;
      set_training(m, true);
      TrainStep step(m, xent, sgd_rule(), mode);
      step.set_amp({level, {}});
      const auto before = snapshot(m);
      for (int i = 0; i < 3; ++i) {
        auto st = step.step(batch(), 0.1);
        ASSERT_TRUE(st) << st.status().message();
        EXPECT_TRUE(std::isfinite(st->loss));
      }
      for (const auto& [n, t] : m.named_parameters()) EXPECT_EQ(t.dtype(), DType::F32) << n;
      EXPECT_FALSE(same(before, snapshot(m)));
      if (mode == Mode::Graph) {
        ASSERT_NE(step.graph(), nullptr);
        int bf16_convs = 0;
        for (const auto& n : step.graph()->nodes()) {
          if (n.op_type != "Conv" && n.op_type != "ConvTranspose" && n.op_type != "ConvGradWeight") continue;
          const ir::Value* v = step.graph()->value(n.outputs[0]);
          if (v && v->type.dtype == DType::BF16) ++bf16_convs;
        }
        EXPECT_GE(bf16_convs, 3);  // forward, input gradient, weight gradient
        EXPECT_EQ(step.executor()->compile_result().reports.front().pass, "amp-cast");
      }
    }
}

TEST(AmpTrain, LossScalingSkipsOverflowingStepsAndAdaptsTheScale) {
  ContextScope ctx;
  for (Mode mode : {Mode::PyNative, Mode::Graph}) {
    ConvBn m;
    set_training(m, true);
    OptimizerConfig cfg;
    cfg.kind = OptimizerKind::Adam;
    TrainStep step(m, xent, make_update_rule(cfg, {}), mode);
    LossScaleConfig ls;
    ls.kind = LossScaleConfig::Kind::Dynamic;
    ls.init_scale = 1024;
    ls.growth_interval = 2;
    step.set_amp({AmpLevel::O2, ls});
    ASSERT_TRUE(step.step(batch(), 0.01));  // Adam state exists from here on
    EXPECT_EQ(step.loss_scale(), 1024);
    const auto params = snapshot(m);
    const std::vector<Tensor> state = [&] {
      std::vector<Tensor> s;
      for (const Tensor& t : step.state()) s.push_back(t.clone());
      return s;
    }();
    auto bad = step.step(batch(std::numeric_limits<float>::infinity()), 0.01);
    ASSERT_TRUE(bad) << bad.status().message();
    EXPECT_TRUE(bad->skipped) << mode_name(mode);
    EXPECT_EQ(step.skipped_steps(), 1);
    EXPECT_EQ(step.loss_scale(), 512);
    EXPECT_TRUE(same(params, snapshot(m))) << mode_name(mode) << ": a skipped step changed the parameters";
    EXPECT_TRUE(same(state, step.state())) << mode_name(mode) << ": a skipped step changed the optimizer state";
    auto good = step.step(batch(), 0.01);
    ASSERT_TRUE(good);
    EXPECT_FALSE(good->skipped);
    EXPECT_FALSE(same(params, snapshot(m)));
    ASSERT_TRUE(step.step(batch(), 0.01));
    EXPECT_EQ(step.loss_scale(), 1024) << mode_name(mode) << ": two good steps double the scale";
    EXPECT_EQ(step.skipped_steps(), 1);
  }
}

TEST(AmpTrain, ContextAutocastRunsModulesInBf16AndReturnsF32) {
  ContextScope ctx;
  ConvBn m;
  const Tensor x = batch()[0].impl()->value;
  auto ref = m(Var(x)).tensor();
  ASSERT_TRUE(ref) << ref.status().message();
  for (AmpLevel level : {AmpLevel::O1, AmpLevel::O2, AmpLevel::O3}) {
    Context c = get_context();
    c.amp = level;
    set_context(c);
    auto got = m(Var(x)).tensor();
    c.amp = AmpLevel::O0;
    set_context(c);
    ASSERT_TRUE(got) << got.status().message();
    ASSERT_EQ(got->dtype(), DType::F32) << compiler::amp_level_name(level);
    double max_diff = 0, max_abs = 0;
    for (int64_t i = 0; i < ref->numel(); ++i) {
      max_diff = std::max(max_diff, std::abs(static_cast<double>(got->data<float>()[i] - ref->data<float>()[i])));
      max_abs = std::max(max_abs, std::abs(static_cast<double>(ref->data<float>()[i])));
    }
    EXPECT_GT(max_diff, 0) << compiler::amp_level_name(level) << ": nothing ran in bf16";
    EXPECT_LT(max_diff, 0.05 * max_abs + 1e-3) << compiler::amp_level_name(level);
  }
}

TEST(AmpTrain, ParsesLevelsAndLossScales) {
  EXPECT_EQ(*compiler::parse_amp_level("O3"), AmpLevel::O3);
  EXPECT_FALSE(compiler::parse_amp_level("O4"));
  EXPECT_EQ(parse_loss_scale("dynamic")->kind, LossScaleConfig::Kind::Dynamic);
  EXPECT_EQ(parse_loss_scale("128")->init_scale, 128);
  EXPECT_FALSE(parse_loss_scale("-1"));
  EXPECT_FALSE(parse_loss_scale("x"));
  EXPECT_EQ(loss_scale_name(*parse_loss_scale("none")), "none");
}

}  // namespace
}  // namespace ms::nn::train
