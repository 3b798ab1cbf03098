// End to end: zoo:mnist_mlp trained on the digits in PyNative and in Graph mode with the same seed
// reaches a good test accuracy, and both loss curves agree. Plus the adaptation of templates to
// the data and the run's errors.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/frontend/train/run.h"
#include "tests/engine/train_test_util.h"

namespace ms::nn::train {
namespace {

RunOptions digits_mlp(Mode mode) { return testing::digits_mlp(mode, 200); }

TEST(TrainRun, DigitsMlpLearnsInBothModesWithTheSameLossCurve) {
  // One thread: the steps are tiny, and the test shares the machine with others.
  const Context saved = get_context();
  set_context(Context{Mode::PyNative, "cpu", 1});
  auto eager = run_training(digits_mlp(Mode::PyNative));
  ASSERT_TRUE(eager) << eager.status().message();
  auto graph = run_training(digits_mlp(Mode::Graph));
  ASSERT_TRUE(graph) << graph.status().message();
  EXPECT_EQ(eager->model, "zoo:mnist_mlp?batch=32&size=8&hidden=64");
  EXPECT_EQ(eager->train_examples, 1437);
  EXPECT_EQ(eager->test_examples, 360);
  ASSERT_EQ(eager->losses.size(), 200u);
  ASSERT_EQ(graph->losses.size(), 200u);
  EXPECT_GT(eager->losses.front(), 2.0);  // about ln 10 at the start
  for (const auto* r : {&*eager, &*graph}) {
    double tail = 0;
    for (size_t i = 190; i < 200; ++i) tail += r->losses[i] / 10;
    EXPECT_LT(tail, 0.35);
    EXPECT_GE(r->accuracy, 0.93);
    EXPECT_GT(r->peak_bytes, 0);
  }
  for (size_t i = 0; i < 200; ++i) {
    ASSERT_NEAR(eager->losses[i], graph->losses[i], 1e-3 * (1 + eager->losses[i])) << "step " << i + 1;
  }
  EXPECT_NEAR(eager->accuracy, graph->accuracy, 0.02);
  EXPECT_GT(graph->compile_ms, 0);
  EXPECT_EQ(eager->compile_ms, 0);
  std::printf("digits mlp: accuracy pynative %.4f graph %.4f; step median %.3f / %.3f ms; compile %.1f ms\n",
              eager->accuracy, graph->accuracy, eager->steady.median, graph->steady.median, graph->compile_ms);
  set_context(saved);
}

TEST(TrainRun, TemplatesAdaptToTheData) {
  RunOptions o;
  o.model = "zoo:mnist_mlp";
  auto a = adapt_model(o);  // auto: the MLP takes 8x8 images
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_EQ(a->data, "digits");
  EXPECT_EQ(a->model, "zoo:mnist_mlp?size=8");
  o.model = "zoo:resnet50?batch=8";
  a = adapt_model(o);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->data, "synthetic");
  EXPECT_EQ(a->model, "zoo:resnet50?batch=8");
  o.batch = 4;
  EXPECT_EQ(adapt_model(o)->model, "zoo:resnet50?batch=4");
}

TEST(TrainRun, SyntheticDataTrainsAnyTemplateInput) {
  RunOptions o;
  o.model = "zoo:dense_chain?batch=16&size=12&hidden=16&classes=3";
  o.data = "synthetic";
  o.optimizer = "sgd";
  o.lr = 0.1;
  o.steps = 30;
  auto r = run_training(o);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->data, "synthetic");
  EXPECT_LT(r->losses.back(), r->losses.front());
  EXPECT_GE(r->accuracy, 0.0);
}

TEST(TrainRun, ErrorsAreOneLine) {
  RunOptions o;
  o.model = "model.onnx";
  auto onnx = run_training(o);
  ASSERT_FALSE(onnx);
  EXPECT_NE(onnx.status().message().find("zoo template"), std::string::npos);
  o.model = "zoo:resnet18";
  o.data = "digits";
  o.steps = 1;
  auto digits = run_training(o);  // size=8 is below resnet's minimum
  ASSERT_FALSE(digits);
  EXPECT_NE(digits.status().message().find("8x8"), std::string::npos) << digits.status().message();
  o.model = "zoo:mnist_mlp";
  o.data_dir = "/nonexistent/folder";
  auto missing = run_training(o);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("digits_images.npy"), std::string::npos) << missing.status().message();
  o.data_dir.clear();
  o.optimizer = "lamb";
  EXPECT_FALSE(run_training(o));
  for (const auto& r : {onnx.status(), digits.status(), missing.status()}) {
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace ms::nn::train
