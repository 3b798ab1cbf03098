// Runs the ONNX node tests of the elementwise ops (single-node models) through the schema and the
// CPU kernel, comparing with the reference outputs. The cases are read from the folder named by
// MODESCOPE_ONNX_NODE_TESTS (the generated <case>/model.onnx + test_data_set_0/*.pb layout); the
// test is skipped when it is not set.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "engine/frontend/onnx/onnx_io.h"
#include "tests/engine/kernel_harness.h"
#include "tests/engine/node_tests_dir.h"

namespace ms {
namespace {

namespace fs = std::filesystem;

const std::set<std::string>& elementwise_ops() {
  static const std::set<std::string> ops = {"Sqrt",
                                            "Reciprocal",
                                            "Neg",
                                            "Abs",
                                            "Exp",
                                            "Log",
                                            "Erf",
                                            "Tanh",
                                            "Sigmoid",
                                            "Relu",
                                            "LeakyRelu",
                                            "Elu",
                                            "Selu",
                                            "Celu",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "Softplus",
                                            "Softsign",
                                            "ThresholdedRelu",
                                            "Shrink",
                                            "Floor",
                                            "Ceil",
                                            "Round",
                                            "Sign",
                                            "Not",
                                            "IsNaN",
                                            "IsInf",
                                            "Sin",
                                            "Cos",
                                            "Tan",
                                            "Asin",
                                            "Acos",
                                            "Atan",
                                            "Sinh",
                                            "Cosh",
                                            "Asinh",
                                            "Acosh",
                                            "Atanh",
                                            "Clip",
                                            "Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "Pow",
                                            "Mod",
                                            "BitShift",
                                            "PRelu",
                                            "Equal",
                                            "Less",
                                            "Greater",
                                            "LessOrEqual",
                                            "GreaterOrEqual",
                                            "And",
                                            "Or",
                                            "Xor",
                                            "Min",
                                            "Max",
                                            "Sum",
                                            "Mean",
                                            "Where",
                                            "Cast",
                                            "CastLike"};
  return ops;
}

// Empty string = match; else what differs.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(dtype_name(got.dtype())) + " vs " + std::string(dtype_name(want.dtype()));
  if (got.shape() != want.shape())
    return "shape " + shape_to_string(got.shape()) + " vs " + shape_to_string(want.shape());
  const double rtol = (want.dtype() == DType::F16 || want.dtype() == DType::BF16) ? 1e-2 : 1e-4;
  const double atol = (want.dtype() == DType::F16 || want.dtype() == DType::BF16) ? 1e-3 : 1e-5;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.at_double(i), w = want.at_double(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (g == w) continue;
    if (is_float(want.dtype()) && std::isfinite(w) && std::fabs(g - w) <= atol + rtol * std::fabs(w)) continue;
    return "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(w);
  }
  return "";
}

TEST(ElementwiseOnnx, NodeTests) {
  const fs::path root = ms::testing::node_tests_dir();
  std::error_code ec;
  if (root.empty() || !fs::is_directory(root, ec)) GTEST_SKIP() << ms::testing::no_node_tests_reason();
  int ran = 0;
  std::vector<std::string> failures;
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root)) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    if (name.find("_expanded") != std::string::npos) continue;
    auto g = onnx_io::load_model((dir / "model.onnx").string(), onnx_io::LoadOptions{false});
    if (!g || g->nodes().size() != 1 || !elementwise_ops().count(g->nodes()[0].op_type)) continue;
    const ir::Node& node = g->nodes()[0];
    const fs::path data = dir / "test_data_set_0";
    std::vector<Tensor> inputs;
    bool ok = true;
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        inputs.emplace_back();
        continue;
      }
      const auto it = std::find(g->inputs.begin(), g->inputs.end(), in);
      if (it == g->inputs.end()) {
        const ir::Value* v = g->value(in);
        if (v && v->constant) {
          inputs.push_back(*v->constant);
          continue;
        }
        ok = false;
        break;
      }
      auto t = onnx_io::load_tensor_pb((data / ("input_" + std::to_string(it - g->inputs.begin()) + ".pb")).string());
      if (!t) {
        ok = false;
        break;
      }
      // numpy has no bfloat16: the reference data stores bf16 tensors as uint16 bits.
      const ir::Value* decl = g->value(in);
      if (decl && decl->type.dtype == DType::BF16 && t->dtype() == DType::U16)
        *t = Tensor(t->buffer(), DType::BF16, t->shape(), t->byte_offset());
      inputs.push_back(*t);
    }
    if (!ok) continue;  // string tensors and the like
    auto out = test::run_kernel(node, inputs, g->opset(""));
    if (!out) {
      if (out.status().code() != ErrorCode::Unsupported) failures.push_back(name + ": " + out.status().message());
      continue;
    }
    ++ran;
    for (size_t i = 0; i < out->size(); ++i) {
      auto want = onnx_io::load_tensor_pb((data / ("output_" + std::to_string(i) + ".pb")).string());
      if (!want) continue;
      if (want->dtype() == DType::U16 && (*out)[i].dtype() == DType::BF16)
        *want = Tensor(want->buffer(), DType::BF16, want->shape(), want->byte_offset());
      const std::string diff = compare((*out)[i], *want);
      if (!diff.empty()) failures.push_back(name + " output " + std::to_string(i) + ": " + diff);
    }
  }
  std::string all;
  for (const auto& f : failures) all += "  " + f + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << ran << " cases failed:\n" << all;
  EXPECT_GT(ran, 100);
  std::cout << "[ onnx node tests ] " << ran << " elementwise cases ran\n";
}

}  // namespace
}  // namespace ms
