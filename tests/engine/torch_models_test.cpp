// Real exported models (tests/data/torch, made by make_torch_models.py with PyTorch): both modes
// must reproduce PyTorch's outputs (functions_op15: modules exported as model-local functions).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/executor.h"
#include "tests/engine/tensor_compare.h"

namespace ms {
namespace {

const std::string kDir = std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/torch/";

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  testing_util::expect_tensors_close(got, want, rtol, atol, what, "PyTorch gives");
}

class TorchModel : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchModel, BothModesMatchPyTorch) {
  const std::string name = GetParam();
  auto g = onnx_io::load_model(kDir + name + ".onnx");
  ASSERT_TRUE(g) << g.status().message();
  auto x = load_npy(kDir + name + ".input.npy");
  ASSERT_TRUE(x) << x.status().message();
  auto want = load_npy(kDir + name + ".output.npy");
  ASSERT_TRUE(want) << want.status().message();
  ASSERT_EQ(g->inputs.size(), 1u);
  runtime::TensorMap inputs{{g->inputs[0], *x}};
  auto backend = backends::create_cpu_backend(0);

  runtime::EagerExecutor eager(*g, *backend);
  auto a = eager.run(inputs);
  ASSERT_TRUE(a) << "pynative: " << a.status().message();
  expect_close((*a)[0], *want, 1e-3, 1e-4, name + " pynative");

  auto compiled = compiler::compile_executor(
      *g, *backend,
      {{g->inputs[0], ir::ValueType{x->dtype(), x->shape(), std::vector<std::string>(x->shape().size())}}});
  ASSERT_TRUE(compiled) << "graph: " << compiled.status().message();
  // Shape subgraphs fold: every value of the compiled graph has a static type.
  for (const auto& [vname, v] : (*compiled)->graph().values()) {
    EXPECT_TRUE(v.type.is_static()) << name << ": value '" << vname << "' is " << v.type.to_string();
  }
  auto b = (*compiled)->run(inputs);
  ASSERT_TRUE(b) << "graph: " << b.status().message();
  expect_close((*b)[0], *want, 1e-3, 1e-4, name + " graph");
  EXPECT_GT((*compiled)->memory_plan().arena_bytes, 0u);
  EXPECT_LE((*compiled)->memory_plan().lower_bound, (*compiled)->memory_plan().arena_bytes);
}

INSTANTIATE_TEST_SUITE_P(Exported, TorchModel,
                         ::testing::Values("mlp_op11", "resnet_tiny_op13", "mobile_tiny_op12", "encoder_tiny_op14",
                                           "encoder_tiny_op17", "functions_op15"));

}  // namespace
}  // namespace ms
