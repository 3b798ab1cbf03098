// modescope-cli with --plugin: the sample plugin's model runs, compares and profiles (its op in both
// modes' traces); without the plugin, or with a bad one, one error line and exit 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/app/cli_test_util.h"
#include "tests/custom_ops/custom_ops_util.h"

namespace ms {
namespace {

class CliPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::write_scaled_tanh_model(dir_, "scaled_tanh.onnx");
    ASSERT_FALSE(model_.empty());
  }
  std::string cli(const std::string& args, int* rc) {
    return testing::run_capture(testing::cli_path() + " " + args, rc);
  }
  testing::TempDir dir_{"cli_plugin"};
  std::string model_;
};

TEST_F(CliPlugin, RunsInBothModesWithThePlugin) {
  int rc = 0;
  const std::string plug = " --plugin " + testing::sample_plugin();
  const std::string report = dir_.file("report.json");
  std::string out =
      cli("run " + model_ + " --mode graph --iters 1 --warmup 0 --threads 1 --report " + report + plug, &rc);
  ASSERT_EQ(rc, 0) << out;
  std::ifstream f(report);
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  ASSERT_TRUE(j.contains("plugins")) << j.dump();
  EXPECT_EQ(j["plugins"][0]["path"], testing::sample_plugin());
  EXPECT_EQ(j["plugins"][0]["ops"][0], "com.example.ScaledTanh");
  out = cli("compare " + model_ + " --iters 1 --warmup 0 --threads 1" + plug, &rc);
  EXPECT_EQ(rc, 0) << out;
  // Before the subcommand too.
  out = cli(plug + " check " + model_, &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ScaledTanh"), std::string::npos) << out;
}

TEST_F(CliPlugin, ProfileShowsTheOpInBothTraces) {
  const std::filesystem::path dir = dir_.path / "profile";
  int rc = 0;
  const std::string out = cli("profile " + model_ + " --iters 1 --warmup 0 --threads 1 --out " + dir.string() +
                                  " --plugin " + testing::sample_plugin(),
                              &rc);
  ASSERT_EQ(rc, 0) << out;
  for (const char* name : {"pynative.trace.json", "graph.trace.json"}) {
    std::ifstream f(dir / name);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("ScaledTanh"), std::string::npos) << name;
  }
}

TEST_F(CliPlugin, WithoutThePluginTheOpIsUnsupported) {
  int rc = 0;
  const std::string out = cli("run " + model_ + " --iters 1 --warmup 0", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("ScaledTanh"), std::string::npos) << out;
}

TEST_F(CliPlugin, ABadPluginIsOneErrorLine) {
  int rc = 0;
  const std::string out = cli("check " + model_ + " --plugin /nonexistent/libnothing.so", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_EQ(out, "error: plugin '/nonexistent/libnothing.so': no such file\n");
}

}  // namespace
}  // namespace ms
