// The sample plugin (samples/plugin): its op imports from ONNX, infers, compiles, runs in both modes
// with the reference's values, and shows in a run's kernel events under its op name.
#include <gtest/gtest.h>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/infer.h"
#include "engine/plugin/loader.h"
#include "engine/runtime/executor.h"
#include "tests/custom_ops/custom_ops_util.h"

namespace ms {
namespace {

struct KernelNames final : runtime::RunObserver {
  std::vector<std::string> ops, impls;
  void on_kernel_begin(const ir::Node& n, std::string_view) override { ops.push_back(n.op_type); }
  void on_kernel_impl(const ir::Node& n, std::string_view impl) override {
    if (n.op_type == "ScaledTanh") impls.emplace_back(impl);
  }
};

runtime::TensorMap inputs() {
  return {{"x", Tensor::from_vector<float>({-1.f, -0.25f, 0.f, 0.1f, 0.5f, 2.f}, {2, 3})}};
}

void expect_reference(const Tensor& y) {
  ASSERT_EQ(y.shape(), (Shape{2, 3}));
  const auto x = inputs().at("x");
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(y.data<float>()[i], testing::scaled_tanh_reference(x.data<float>()[i]), 1e-6f) << i;
  }
}

class SamplePlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    auto info = plugin::load_plugin(testing::sample_plugin());
    ASSERT_TRUE(info.has_value()) << info.status().message();
    ASSERT_EQ(info->ops, std::vector<std::string>{"com.example.ScaledTanh"});
    path_ = testing::write_scaled_tanh_model(dir_, "scaled_tanh.onnx");
    ASSERT_FALSE(path_.empty());
  }
  testing::TempDir dir_{"scaled_tanh_test"};
  std::string path_;
};

TEST_F(SamplePlugin, LoadingTwiceIsANoOp) {
  auto again = plugin::load_plugin(testing::sample_plugin());
  ASSERT_TRUE(again.has_value()) << again.status().message();
  int listed = 0;
  for (const auto& p : plugin::loaded_plugins()) listed += p.path == testing::sample_plugin();
  EXPECT_EQ(listed, 1);
}

TEST_F(SamplePlugin, ImportsAndInfers) {
  auto g = onnx_io::load_model(path_);
  ASSERT_TRUE(g.has_value()) << g.status().message();
  ASSERT_TRUE(compiler::infer_graph_types(*g, nullptr).is_ok());
  EXPECT_EQ(g->value("s")->type.to_string(), "f32[2,3]");
}

TEST_F(SamplePlugin, RunsInBothModesWithTheReferenceValues) {
  auto g = onnx_io::load_model(path_);
  ASSERT_TRUE(g.has_value()) << g.status().message();
  auto backend = backends::create_cpu_backend(1);
  KernelNames eager_seen;
  runtime::EagerExecutor eager(*g, *backend);
  runtime::RunOptions eager_opts;
  eager_opts.observer = &eager_seen;
  auto e = eager.run(inputs(), eager_opts);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  expect_reference((*e)[0]);

  compiler::Signature sig{{"x", g->value("x")->type}};
  compiler::CompileOptions o2;
  o2.jit_level = compiler::JitLevel::O2;
  auto compiled = compiler::compile_executor(*g, *backend, sig, o2);
  ASSERT_TRUE(compiled.has_value()) << compiled.status().message();
  KernelNames graph_seen;
  runtime::RunOptions graph_opts;
  graph_opts.observer = &graph_seen;
  auto r = (*compiled)->run(inputs(), graph_opts);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  expect_reference((*r)[0]);
  // Profiled like any op: its kernel event carries the op and the plugin as the implementation.
  for (const auto* seen : {&eager_seen, &graph_seen}) {
    EXPECT_NE(std::find(seen->ops.begin(), seen->ops.end(), "ScaledTanh"), seen->ops.end());
    ASSERT_FALSE(seen->impls.empty());
    EXPECT_EQ(seen->impls[0], "plugin:libmodescope_scaled_tanh.so");
  }
}

TEST_F(SamplePlugin, ItsInferenceRefusesAnInputTypeNamingTheNode) {
  auto g = onnx_io::load_model(path_);
  ASSERT_TRUE(g.has_value());
  // The plugin's inference refuses i64 input: the error names the node and carries its message.
  g->value("x")->type.dtype = DType::I64;
  for (auto& n : g->nodes())
    if (n.op_type == "Mul") n.inputs = {"x", "x"};
  const Status st = compiler::infer_graph_types(*g, nullptr);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("squash"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("ScaledTanh takes float32 input"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ms
