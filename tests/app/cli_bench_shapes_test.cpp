// `modescope-cli bench-shapes` end to end through the built CLI, on a model with a symbolic sequence
// dim: one compile per power-of-two bucket, both modes' outputs equal at every size, the JSON
// report's counts; bad sweeps are one-line errors; `run --report` counts its compile.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/frontend/onnx/onnx_io.h"
#include "engine/ir/graph.h"
#include "tests/app/cli_test_util.h"
#include "tests/temp_dir.h"

namespace ms::cli {
namespace {

namespace fs = std::filesystem;
using ms::testing::run_capture;

// x: f32[seq, 16] -> MatMul(w) -> Relu -> Softmax: the symbolic dim is named "seq".
ir::Graph seq_model() {
  ir::Graph g;
  g.name = "seq_model";
  g.opsets[""] = 17;
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{-1, 16}, {"seq", ""}}, {}, std::nullopt});
  g.inputs = {"x"};
  std::vector<float> w(256);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) / 7.f - 0.4f;
  g.add_initializer("w", Tensor::from_vector<float>(w, {16, 16}));
  const char* ops[][3] = {{"MatMul", "x", "m"}, {"Relu", "m", "r"}, {"Softmax", "r", "y"}};
  for (const auto& [op, in, out] : ops) {
    ir::Node n;
    n.id = g.ids()->next();
    n.origins = {n.id};
    n.op_type = op;
    n.name = out;
    n.inputs = {in};
    if (std::string(op) == "MatMul") n.inputs.push_back("w");
    n.outputs = {out};
    g.add_node(std::move(n));
  }
  g.outputs = {"y"};
  g.value("y")->type = ir::ValueType{DType::F32, std::vector<int64_t>{-1, 16}, {"seq", ""}};
  return g;
}

TEST(CliBenchShapes, OneCompilePerBucketAndEqualOutputsAtEverySize) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !fs::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  const ms::testing::TempDir tmp("cli_shapes");
  const fs::path dir = tmp.path;
  const std::string model = (dir / "seq.onnx").string();
  ASSERT_TRUE(onnx_io::save_model(seq_model(), model).is_ok());
  const std::string base = cli + " bench-shapes " + model + " --threads 1 --iters 1";
  int rc = -1;
  std::string out = run_capture(base + " --sweep seq=1:9 --report " + (dir / "r.json").string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("seq<=8"), std::string::npos) << out;
  std::ifstream f(dir / "r.json");
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("compiles").get<int>(), 5) << j.dump(1);  // buckets 1, 2, 4, 8, 16
  EXPECT_EQ(j.at("cache_hits").get<int>(), 4);
  ASSERT_EQ(j.at("sizes").size(), 9u);
  for (const auto& s : j.at("sizes")) EXPECT_LT(s.at("max_rel_diff").get<double>(), 1e-5) << s.dump();
  ASSERT_EQ(j.at("buckets").size(), 5u);
  EXPECT_EQ(j.at("buckets").at(3).at("first").get<int>(), 5);
  EXPECT_EQ(j.at("buckets").at(3).at("last").get<int>(), 8);

  out = run_capture(base + " --sweep seq=1:9 --exact", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("compiles 9,"), std::string::npos) << out;

  out = run_capture(base + " --sweep len=1:4", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("no input has a symbolic dim named 'len'"), std::string::npos) << out;
  out = run_capture(base + " --sweep seq=5:2", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--sweep 'seq=5:2'"), std::string::npos) << out;
}

TEST(CliBenchShapes, RunReportCountsItsCompile) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !fs::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  const ms::testing::TempDir tmp("run_compiles");
  const fs::path report = tmp.path / "report.json";
  const std::string model = std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx";
  int rc = -1;
  const std::string out = run_capture(
      cli + " run " + model + " --mode graph --threads 1 --iters 3 --warmup 1 --report " + report.string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  std::ifstream f(report);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("compiles").get<int>(), 1);
  EXPECT_EQ(j.at("cache_hits").get<int>(), 3);
  // The MLP's matmul weights are packed: their copies count, and never more than all the weights.
  EXPECT_GT(j.at("packed_bytes").get<int64_t>(), 0);
  EXPECT_LE(j.at("packed_bytes").get<int64_t>(), j.at("weight_bytes").get<int64_t>());
}

TEST(CliRunMemory, ARunThatCannotFitIsRefusedBeforeItStarts) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !fs::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  const std::string model = std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx";
  int rc = -1;
  for (const char* mode : {"graph", "pynative"}) {
    std::string out = run_capture("MODESCOPE_MEMORY_LIMIT=1000 " + cli + " run " + model + " --mode " + mode +
                                      " --threads 1 --iters 1 --warmup 0",
                                  &rc);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find("the run needs"), std::string::npos) << out;
    EXPECT_NE(out.find("but only 1000 B is available"), std::string::npos) << out;
    out = run_capture(cli + " run " + model + " --mode " + mode + " --threads 1 --iters 1 --warmup 0", &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("memory    weights"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace ms::cli
