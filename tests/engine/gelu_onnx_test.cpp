// Gelu (ONNX opset 20): a model made with onnx.helper (gelu_onnx_cases.py: both `approximate` forms
// and a Neg, Gelu, Add chain) loads, runs eagerly and in Graph mode (where the chain is one fused
// loop), and matches values computed in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/ops/schema.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"
#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

#include "tests/engine/gelu_onnx_cases.inc"

using test::ulp_distance;

void expect_outputs(const std::vector<Tensor>& out, const std::string& mode) {
  ASSERT_EQ(out.size(), 3u) << mode;
  for (size_t i = 0; i < kGeluX.size(); ++i) {
    const int64_t k = static_cast<int64_t>(i);
    // A few ulp against double precision (the erf form's vector erfc: 6); in the negative tail, where
    // erfc and exp turn the rounding of their float argument into a larger relative error, 1e-5
    // relative.
    auto near = [&](float got, float want) {
      return ulp_distance(got, want) <= 6 || (kGeluX[i] < -2 && std::fabs(got - want) <= 1e-5f * std::fabs(want));
    };
    EXPECT_TRUE(near(out[0].data<float>()[k], kGeluErf[i]))
        << mode << " erf form at x=" << kGeluX[i] << ": " << out[0].data<float>()[k] << " vs " << kGeluErf[i];
    EXPECT_TRUE(near(out[1].data<float>()[k], kGeluTanh[i]))
        << mode << " tanh form at x=" << kGeluX[i] << ": " << out[1].data<float>()[k] << " vs " << kGeluTanh[i];
    EXPECT_NEAR(out[2].data<float>()[k], kGeluChain[i], 1e-6 * (1 + std::fabs(kGeluX[i])))
        << mode << " chain at x=" << kGeluX[i];
  }
}

TEST(GeluOnnx, Opset20ModelLoadsAndRuns) {
  const std::string_view bytes(reinterpret_cast<const char*>(kGeluModel), sizeof kGeluModel);
  auto g = onnx_io::load_model_from_bytes(bytes, "", "gelu_onnx_cases");
  ASSERT_TRUE(g.has_value()) << g.status().message();
  EXPECT_EQ(g->opset(""), 20);
  auto be = backends::create_cpu_backend(1);
  runtime::TensorMap in{{"x", Tensor::from_vector(kGeluX, {static_cast<int64_t>(kGeluX.size())})}};
  runtime::EagerExecutor eager(*g, *be);
  auto e = eager.run(in);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  expect_outputs(*e, "eager");

  std::map<std::string, ir::ValueType> sig;
  sig["x"] = g->value("x")->type;
  auto c = compiler::compile_executor(*g, *be, sig);
  ASSERT_TRUE(c.has_value()) << c.status().message();
  std::string chains;
  for (const auto& n : (*c)->graph().nodes())
    if (n.op_type == "FusedElementwise")
      if (const auto* chain = n.attrs.at("chain").get_if<std::vector<std::string>>())
        for (const auto& op : *chain) chains += op + " ";
  EXPECT_EQ(chains, "Neg Gelu Add ") << "Neg, Gelu, Add is one fused loop";
  auto r = (*c)->run(in);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  expect_outputs(*r, "graph");
}

TEST(GeluOnnx, ApproximateMustBeNoneOrTanh) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1.f}, {1});
  auto bad = test::infer_types(test::make_node("Gelu", 1, 1, {{"approximate", ir::Attribute(std::string("exact"))}}),
                               std::vector<Tensor>{x}, 20);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("approximate"), std::string::npos) << bad.status().message();
  EXPECT_TRUE(test::infer_types(test::make_node("Gelu", 1), std::vector<Tensor>{x}, 20).has_value());
}

}  // namespace
}  // namespace ms
