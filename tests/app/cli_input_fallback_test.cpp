// Issue 24 on the command line: `--input` files checked against the model's declared input,
// `--dim` positive integers only, fallbacks in the reports and `--strict-device`, and the exit
// status of `conformance` (no device, a missed --floor).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "app/session/model_inputs.h"
#include "engine/backends/select.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/executor.h"
#include "tests/app/cli_test_util.h"
#include "tests/temp_dir.h"

namespace ms::session {
namespace {

namespace fs = std::filesystem;
using ms::testing::run_capture;

const char* kLenet = "'zoo:lenet5?batch=1'";

std::string cli_or_skip() {
  const std::string cli = ms::testing::cli_path();
  return cli.empty() || !fs::exists(cli) ? std::string() : cli;
}

TEST(ModelInputs, CheckInputNamesTheInputTheDeclaredAndTheGivenType) {
  auto g = load_model_arg("zoo:lenet5?batch=1");
  ASSERT_TRUE(g) << g.status().message();
  const std::string name = g->inputs.front();
  const ir::ValueType t = g->value(name)->type;
  ASSERT_TRUE(t.is_static());
  EXPECT_TRUE(check_input(*g, name, Tensor::zeros(t.dtype, *t.dims)).is_ok());
  Shape small = *t.dims;
  small.back() = 3;
  const Status wrong_shape = check_input(*g, name, Tensor::zeros(t.dtype, small));
  ASSERT_FALSE(wrong_shape.is_ok());
  EXPECT_NE(wrong_shape.message().find("--input " + name + ": the model declares f32 ["), std::string::npos)
      << wrong_shape.message();
  EXPECT_NE(wrong_shape.message().find(",3]"), std::string::npos) << wrong_shape.message();
  EXPECT_FALSE(check_input(*g, name, Tensor::zeros(DType::F64, *t.dims)).is_ok());
  EXPECT_FALSE(check_input(*g, name, Tensor::zeros(t.dtype, Shape{1})).is_ok());  // rank
}

TEST(ModelInputs, DimValuesArePositiveIntegersParsedWhole) {
  EXPECT_EQ(*parse_dim_value("N", "8"), 8);
  for (const char* bad : {"0", "-2", "3x", "", " 4", "1e3", "99999999999999999999"}) {
    EXPECT_FALSE(parse_dim_value("N", bad)) << bad;
  }
  EXPECT_NE(parse_dim_value("N", "3x").status().message().find("--dim N=3x: expected a positive integer"),
            std::string::npos);
}

TEST(ModelInputs, AttentionMasksAreAllOnesSoACachedDecoderRuns) {
  // tiny_llm.onnx (tests/data/contrib) derives each batch's length from attention_mask; random
  // values there give lengths that fit no cache.
  auto g = load_model_arg(std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/contrib/tiny_llm.onnx");
  ASSERT_TRUE(g) << g.status().message();
  auto in = make_inputs(*g, {}, {}, 1);  // every symbolic dim 1: one new token over a cache of one
  ASSERT_TRUE(in) << in.status().message();
  const Tensor& mask = in->at("attention_mask");
  for (int64_t i = 0; i < mask.numel(); ++i) EXPECT_EQ(mask.data<int64_t>()[i], 1);
  auto backend = backends::create_cpu_backend(1);
  runtime::EagerExecutor eager(*g, *backend);
  auto out = eager.run(*in);
  EXPECT_TRUE(out.has_value()) << out.status().message();
}

TEST(ModelInputs, SegmentIdsAreZerosSoAFusedBertRuns) {
  // bert_quantized.onnx (tests/data/contrib) looks token_type_ids up in a table of two rows.
  auto g = load_model_arg(std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/contrib/bert_quantized.onnx");
  ASSERT_TRUE(g) << g.status().message();
  auto in = make_inputs(*g, {}, {}, 4);
  ASSERT_TRUE(in) << in.status().message();
  const Tensor& segments = in->at("token_type_ids");
  for (int64_t i = 0; i < segments.numel(); ++i) EXPECT_EQ(segments.data<int64_t>()[i], 0);
  auto backend = backends::create_cpu_backend(1);
  runtime::EagerExecutor eager(*g, *backend);
  auto out = eager.run(*in);
  EXPECT_TRUE(out.has_value()) << out.status().message();
}

TEST(CliInputs, RejectsAMismatchedInputFileAndBadDims) {
  const std::string cli = cli_or_skip();
  if (cli.empty()) GTEST_SKIP() << "modescope-cli is not built";
  auto g = load_model_arg("zoo:lenet5?batch=1");
  ASSERT_TRUE(g);
  const std::string name = g->inputs.front();
  Shape small = *g->value(name)->type.dims;
  small[small.size() - 1] = small[small.size() - 2] = 5;
  const ms::testing::TempDir tmp("cli_input");
  const std::string npy = tmp.file("small.npy");
  ASSERT_TRUE(save_npy(Tensor::zeros(DType::F32, small), npy).is_ok());
  int rc = -1;
  std::string out = run_capture(cli + " run " + kLenet + " --iters 1 --warmup 0 --input " + name + "=" + npy, &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("error: --input " + name + ": the model declares f32 ["), std::string::npos) << out;
  EXPECT_NE(out.find(",5,5]"), std::string::npos) << out;
  out = run_capture(cli + " run " + kLenet + " --iters 1 --warmup 0 --dim N=3x", &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("error: --dim N=3x: expected a positive integer"), std::string::npos) << out;
  out = run_capture(cli + " run " + kLenet + " --iters 1 --warmup 0 --dim N=0", &rc);
  EXPECT_NE(rc, 0) << out;
}

TEST(CliFallbacks, ReportsCarryAFallbacksListAndStrictDeviceRefusesThem) {
  const std::string cli = cli_or_skip();
  if (cli.empty()) GTEST_SKIP() << "modescope-cli is not built";
  const ms::testing::TempDir tmp("cli_fallbacks");
  const std::string report = tmp.file("run.json");
  int rc = -1;
  std::string out = run_capture(cli + " run " + kLenet + " --iters 1 --warmup 0 --report " + report, &rc);
  ASSERT_EQ(rc, 0) << out;
  std::ifstream f(report);
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_TRUE(j.contains("fallbacks")) << j.dump();
  EXPECT_TRUE(j["fallbacks"].is_array());
  EXPECT_TRUE(j["fallbacks"].empty()) << j.dump();  // the CPU runs every op itself
  EXPECT_EQ(out.find("note: fallbacks"), std::string::npos) << out;
  // The environment it ran in: CPU, backend with its library versions, threads, build.
  ASSERT_TRUE(j.contains("environment")) << j.dump();
  for (const char* key :
       {"cpu", "cpu_flags", "backend", "threads", "build_type", "revision", "onnx_opset", "compiler"}) {
    EXPECT_TRUE(j["environment"].contains(key)) << key << " missing from " << j["environment"].dump();
  }
  EXPECT_NE(j["environment"]["backend"].get<std::string>().find("oneDNN"), std::string::npos) << j.dump();
  // Without a CUDA device, asking for it falls back to the CPU: a note, or an error when strict.
  out = run_capture(cli + " run " + kLenet + " --iters 1 --warmup 0 --device cuda --report " + report, &rc);
  ASSERT_EQ(rc, 0) << out;
  if (out.find("note:") == std::string::npos) GTEST_SKIP() << "a CUDA device is present: " << out;
  std::ifstream f2(report);
  const nlohmann::json j2 = nlohmann::json::parse(f2);
  ASSERT_EQ(j2["fallbacks"].size(), 1u) << j2.dump();
  EXPECT_EQ(j2["fallbacks"][0]["op"], "*");
  out = run_capture(cli + " run " + kLenet + " --iters 1 --warmup 0 --device cuda --strict-device", &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("error: --strict-device: "), std::string::npos) << out;
}

TEST(CliConformance, ExitsNonZeroWithoutTheDeviceAndBelowTheFloor) {
  const std::string cli = cli_or_skip();
  if (cli.empty()) GTEST_SKIP() << "modescope-cli is not built";
  // One case folder without data sets: it fails (not a crash).
  const ms::testing::TempDir tmp("cli_conformance");
  const fs::path dir = tmp.path / "conf";
  fs::create_directories(dir / "case_a");
  auto g = load_model_arg("zoo:lenet5?batch=1");
  ASSERT_TRUE(g);
  ASSERT_TRUE(onnx_io::save_model(*g, (dir / "case_a" / "model.onnx").string()).is_ok());
  const std::string report = tmp.file("conf.json");
  int rc = -1;
  std::string out = run_capture(cli + " conformance " + dir.string() + " --mode pynative --report " + report, &rc);
  EXPECT_EQ(rc, 0) << out;
  out = run_capture(cli + " conformance " + dir.string() + " --mode pynative --floor 1 --report " + report, &rc);
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 4) << rc << out;
  EXPECT_NE(out.find("error: conformance: 0 passed, below the floor of 1"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(report));
  std::ifstream f(report);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_TRUE(j["fallbacks"].is_array());
  out = run_capture(cli + " conformance " + dir.string() + " --mode pynative --device cuda", &rc);
  if (out.find("[  SKIP ]") == std::string::npos && rc == 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << rc << out;
  EXPECT_NE(out.find("error: conformance --device cuda: "), std::string::npos) << out;
  EXPECT_EQ(out.find("[  SKIP ]"), std::string::npos) << out;
}

}  // namespace
}  // namespace ms::session
