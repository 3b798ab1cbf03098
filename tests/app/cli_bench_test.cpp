// `modescope-cli bench MODEL --json` and `--baseline`, end to end through the built CLI: the JSON
// carries each mode's median, min and p90; a baseline far faster than any machine flags regressions
// (exit status 3), one far slower flags none, a baseline without the model is a one-line error.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/backends/select.h"
#include "engine/runtime/backend.h"
#include "tests/app/cli_test_util.h"
#include "tests/temp_dir.h"

namespace ms::cli {
namespace {

namespace fs = std::filesystem;
using ms::testing::run_capture;

void write_baseline(const fs::path& path, const std::string& model, double ms) {
  nlohmann::json c = {{"model", model},        {"jit_level", "O1"},     {"pynative_ms", ms},  {"graph_ms", ms},
                      {"pynative_min_ms", ms}, {"pynative_p90_ms", ms}, {"graph_min_ms", ms}, {"graph_p90_ms", ms},
                      {"compile_ms", ms},      {"device", "test"}};
  std::ofstream(path) << nlohmann::json{{"cases", {c}}}.dump();
}

TEST(CliBench, JsonCarriesSpreadAndBaselineFlagsRegressions) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !fs::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  const ms::testing::TempDir tmp("cli_bench");
  const fs::path dir = tmp.path;
  const std::string model = std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx";
  const std::string base = cli + " bench " + model + " --threads 1 --iters 3 --warmup 1";
  int rc = -1;
  std::string out = run_capture(base + " --json " + (dir / "now.json").string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  std::ifstream f(dir / "now.json");
  const auto j = nlohmann::json::parse(f);
  const auto& c = j.at("cases").at(0);
  for (const char* k : {"pynative_min_ms", "pynative_p90_ms", "graph_min_ms", "graph_p90_ms"}) {
    EXPECT_GT(c.at(k).get<double>(), 0) << k;
  }
  EXPECT_LE(c.at("graph_min_ms").get<double>(), c.at("graph_ms").get<double>());
  EXPECT_GE(c.at("graph_p90_ms").get<double>(), c.at("graph_ms").get<double>());

  write_baseline(dir / "fast.json", model, 1e-6);  // no machine runs the model in a nanosecond
  out = run_capture(base + " --baseline " + (dir / "fast.json").string(), &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 3) << out;
  EXPECT_NE(out.find("graph"), std::string::npos);
  EXPECT_NE(out.find("REGRESSION"), std::string::npos) << out;
  EXPECT_NE(out.find("regression(s) beyond the spread"), std::string::npos) << out;

  write_baseline(dir / "slow.json", model, 1e6);
  out = run_capture(base + " --baseline " + (dir / "slow.json").string(), &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 0) << out;
  EXPECT_EQ(out.find("REGRESSION"), std::string::npos) << out;
  EXPECT_NE(out.find("faster"), std::string::npos) << out;

  write_baseline(dir / "other.json", "elsewhere.onnx", 1.0);
  out = run_capture(base + " --baseline " + (dir / "other.json").string(), &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 1) << out;
  EXPECT_NE(out.find("other.json: no case for model"), std::string::npos) << out;
}

// --precision bf16: where oneDNN dispatches bf16 arithmetic, Graph mode runs in bf16 and the report
// gives its distance from the f32 PyNative outputs (above zero: the product really was rounded);
// with the ISA capped at AVX2 it is refused in one line naming the reason.
TEST(CliBench, Bf16PrecisionReportsItsDeviationOrRefuses) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !fs::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  const ms::testing::TempDir tmp("cli_bf16");
  const fs::path dir = tmp.path;
  const std::string model = std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx";
  const std::string args = " bench " + model + " --threads 1 --iters 2 --warmup 1 --precision bf16";
  int rc = -1;
  std::string out = run_capture("ONEDNN_MAX_CPU_ISA=AVX2 " + cli + args, &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 1) << out;
  EXPECT_NE(out.find("error: bf16 precision: "), std::string::npos) << out;
  EXPECT_NE(out.find("no native bf16 arithmetic"), std::string::npos) << out;

  if (!backends::create_cpu_backend(1)->native_bf16()) {
    GTEST_SKIP() << "this CPU has no native bf16 arithmetic (AVX-512-BF16 or AMX): the refusal was checked";
  }
  out = run_capture(cli + args + " --json " + (dir / "bf16.json").string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("graph in bf16: deviation from f32"), std::string::npos) << out;
  std::ifstream f(dir / "bf16.json");
  const auto c = nlohmann::json::parse(f).at("cases").at(0);
  EXPECT_EQ(c.at("precision"), "bf16");
  EXPECT_GT(c.at("max_rel_dev").get<double>(), 0.0);  // bf16 keeps 8 bits of mantissa: never exact here
  EXPECT_LT(c.at("max_rel_dev").get<double>(), 0.05);
  EXPECT_LT(c.at("mean_rel_dev").get<double>(), 0.02);
}

// `passes --precision bf16` lists the pipeline a bf16 Graph run compiles: amp-cast among its passes
// (absent from the f32 one), or the same refusal where the CPU has no bf16 arithmetic.
TEST(CliPasses, Bf16PrecisionShowsTheAmpPipelineOrRefuses) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !fs::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  const std::string model = std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx";
  const std::string args = " passes " + model + " --threads 1 --jit-level O2";
  int rc = -1;
  std::string out = run_capture(cli + args, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("amp-cast"), std::string::npos) << out;
  out = run_capture("ONEDNN_MAX_CPU_ISA=AVX2 " + cli + args + " --precision bf16", &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 1) << out;
  EXPECT_NE(out.find("error: bf16 precision: "), std::string::npos) << out;
  if (!backends::create_cpu_backend(1)->native_bf16())
    GTEST_SKIP() << "this CPU has no native bf16 arithmetic (AVX-512-BF16 or AMX): the refusal was checked";
  out = run_capture(cli + args + " --precision bf16", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("at O2 bf16:"), std::string::npos) << out;
  EXPECT_NE(out.find("amp-cast"), std::string::npos) << out;
}

// fp16 is a device's precision: on the CPU, one line naming the backend and what to use instead.
TEST(CliBench, Fp16PrecisionIsRefusedOnTheCpu) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !fs::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  const std::string model = std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx";
  int rc = -1;
  const std::string out =
      run_capture(cli + " bench " + model + " --threads 1 --iters 2 --warmup 1 --precision fp16", &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 1) << out;
  EXPECT_NE(out.find("error: fp16 precision: cpu"), std::string::npos) << out;
  EXPECT_NE(out.find("fp16 runs on a CUDA device"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
}  // namespace ms::cli
