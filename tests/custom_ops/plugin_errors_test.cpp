// Each way a plugin can be wrong gives one line naming the file, the op or the node.
#include <gtest/gtest.h>

#include "engine/backends/select.h"
#include "engine/plugin/loader.h"
#include "engine/runtime/executor.h"
#include "tests/custom_ops/custom_ops_util.h"

namespace ms {
namespace {

std::string load_error(const std::string& path) {
  auto r = plugin::load_plugin(path);
  if (r.has_value()) return "(loaded)";
  const std::string m = r.status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  return m;
}

TEST(PluginErrors, MissingFile) {
  EXPECT_EQ(load_error("/nonexistent/libnothing.so"), "plugin '/nonexistent/libnothing.so': no such file");
}

TEST(PluginErrors, NotASharedLibrary) {
  const std::string m = load_error(MODESCOPE_TEST_PLUGIN_DIR "/../CMakeFiles/../CTestTestfile.cmake");
  EXPECT_NE(m.find("cannot load:"), std::string::npos) << m;
}

TEST(PluginErrors, NoRegistrationSymbol) {
  const std::string p = testing::test_plugin("no_symbol");
  EXPECT_EQ(load_error(p), "plugin '" + p + "': not a Modescope plugin (no symbol modescope_register_ops_v1)");
}

TEST(PluginErrors, AbiVersionMismatch) {
  const std::string p = testing::test_plugin("v2");
  EXPECT_EQ(load_error(p), "plugin '" + p + "': built for plugin ABI version 2, this Modescope loads version 1");
}

TEST(PluginErrors, TwoPluginsClaimingOneOp) {
  const std::string a = testing::test_plugin("dup_a"), b = testing::test_plugin("dup_b");
  ASSERT_EQ(load_error(a), "(loaded)");
  EXPECT_EQ(load_error(b), "plugin '" + b + "': op com.example.test.Dup is already registered by plugin '" + a + "'");
}

TEST(PluginErrors, APluginClaimingABuiltInOp) {
  const std::string p = testing::test_plugin("builtin");
  EXPECT_EQ(load_error(p), "plugin '" + p + "': op Relu is already an op of the engine");
}

ir::Graph one_node(const std::string& op) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["com.example.test"] = 1;
  testing::add_f32_input(g, "x", {2, 3});
  testing::add_node(g, op, "com.example.test", "wrong", {"x"}, "y");
  g.outputs.push_back("y");
  return g;
}

std::string run_error(const std::string& op) {
  const ir::Graph g = one_node(op);
  auto backend = backends::create_cpu_backend(1);
  runtime::EagerExecutor eager(g, *backend);
  auto r = eager.run({{"x", Tensor::zeros(DType::F32, {2, 3})}});
  return r.has_value() ? "(ran)" : r.status().message();
}

TEST(PluginErrors, KernelOutputUnlikeInference) {
  ASSERT_EQ(load_error(testing::test_plugin("bad_output")), "(loaded)");
  EXPECT_EQ(run_error("BadShape"),
            "node 'wrong' (BadShape #1): com.example.test.BadShape: kernel output 0 is f32[2], but inference said "
            "f32[2,3]");
  EXPECT_EQ(run_error("BadType"),
            "node 'wrong' (BadType #1): com.example.test.BadType: kernel output 0 is i64[2,3], but inference said "
            "f32[2,3]");
}

}  // namespace
}  // namespace ms
