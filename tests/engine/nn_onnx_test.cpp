// The ONNX node tests of the nn ops (Conv, pools, norms, Gemm/MatMul, softmax family, Dropout, losses),
// run node by node through schema inference and the CPU kernel, compared with the stored outputs.
// Skipped when the generated tests are not there.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "engine/frontend/onnx/onnx_io.h"
#include "tests/engine/kernel_harness.h"
#include "tests/engine/node_tests_dir.h"

namespace ms::test {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = ms::testing::node_tests_dir();

// Runs one case; returns "" on success or what went wrong.
std::string run_case(const fs::path& dir) {
  auto g = onnx_io::load_model((dir / "model.onnx").string());
  if (!g) return "load: " + g.status().message();
  if (g->nodes().size() != 1) return "expected a single-node model";
  const ir::Node& node = g->nodes()[0];
  const fs::path data = dir / "test_data_set_0";
  std::map<std::string, Tensor> values;
  for (size_t i = 0; i < g->inputs.size(); ++i) {
    auto t = onnx_io::load_tensor_pb((data / ("input_" + std::to_string(i) + ".pb")).string());
    if (!t) return "input " + std::to_string(i) + ": " + t.status().message();
    values[g->inputs[i]] = *t;
  }
  for (const std::string& name : g->initializer_names()) values[name] = *g->value(name)->constant;
  std::vector<Tensor> inputs;
  for (const std::string& name : node.inputs) inputs.push_back(name.empty() ? Tensor() : values[name]);
  auto out = run_kernel(node, inputs, g->opset());
  if (!out) return "run: " + out.status().message();
  // Random dropout (training with ratio > 0) can only be checked for shapes.
  const std::string case_name = dir.filename().string();
  const bool random =
      case_name.rfind("test_training_dropout", 0) == 0 && case_name.find("zero_ratio") == std::string::npos;
  for (size_t i = 0; i < g->outputs.size(); ++i) {
    auto want = onnx_io::load_tensor_pb((data / ("output_" + std::to_string(i) + ".pb")).string());
    if (!want) return "output " + std::to_string(i) + ": " + want.status().message();
    const Tensor& got = (*out)[i];
    if (got.shape() != want->shape() || got.dtype() != want->dtype())
      return "output " + std::to_string(i) + " is " + std::string(dtype_name(got.dtype())) +
             shape_to_string(got.shape()) + ", expected " + std::string(dtype_name(want->dtype())) +
             shape_to_string(want->shape());
    if (random) continue;
    for (int64_t k = 0; k < got.numel(); ++k) {
      const double a = got.at_double(k), b = want->at_double(k);
      const bool same_nan = std::isnan(a) && std::isnan(b);
      if (!same_nan && !(std::abs(a - b) <= 1e-4 + 1e-3 * std::abs(b)))
        return "output " + std::to_string(i) + " element " + std::to_string(k) + " is " + std::to_string(a) +
               ", expected " + std::to_string(b);
    }
  }
  return "";
}

// Every case whose name starts with one of `prefixes` (the *_expanded forms test other ops).
void run_family(const std::vector<std::string>& prefixes) {
  std::error_code ec;
  if (kRoot.empty() || !fs::is_directory(kRoot, ec)) GTEST_SKIP() << ms::testing::no_node_tests_reason();
  int ran = 0;
  for (const auto& entry : fs::directory_iterator(kRoot, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find("_expanded") != std::string::npos) continue;
    bool match = false;
    for (const auto& p : prefixes) match = match || name.rfind(p, 0) == 0;
    if (!match) continue;
    ++ran;
    const std::string err = run_case(entry.path());
    EXPECT_EQ(err, "") << name;
  }
  EXPECT_GT(ran, 0);
}

TEST(NnOnnx, Conv) { run_family({"test_conv_", "test_basic_conv_", "test_convtranspose"}); }
TEST(NnOnnx, Pool) {
  run_family({"test_maxpool", "test_averagepool", "test_globalaveragepool", "test_globalmaxpool", "test_lppool"});
}
TEST(NnOnnx, Norm) {
  run_family({"test_batchnorm", "test_instancenorm", "test_layer_normalization", "test_lrn", "test_mvn"});
}
TEST(NnOnnx, MatMul) { run_family({"test_gemm", "test_matmul_"}); }
TEST(NnOnnx, Softmax) {
  run_family({"test_softmax", "test_logsoftmax", "test_hardmax", "test_dropout", "test_training_dropout"});
}
TEST(NnOnnx, Loss) { run_family({"test_nllloss", "test_sce"}); }

}  // namespace
}  // namespace ms::test
