// modescope-cli train / compare --train: the printed summary, the JSON report, the profile folder
// and one-line errors (skipped when the CLI is not built).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/app/cli_test_util.h"

namespace {

namespace fs = std::filesystem;

using ms::testing::run_capture;

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    cli_ = ms::testing::cli_path();
    if (cli_.empty() || !fs::exists(cli_)) GTEST_SKIP() << "modescope-cli is not built";
    dir_ = fs::temp_directory_path() / ("modescope_train_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string cli_;
  fs::path dir_;
};

const char* kModel = " 'zoo:mnist_mlp?hidden=32' --data-dir " MODESCOPE_SOURCE_DIR "/samples/data --threads 1";

TEST_F(TrainCli, TrainPrintsLossesAndWritesReportAndProfile) {
  const std::string report = (dir_ / "r.json").string(), prof = (dir_ / "prof").string();
  int rc = -1;
  std::string out = run_capture(cli_ + " train" + kModel +
                                    " --steps 40 --batch 16 --mode graph --optimizer adam --lr 0.01"
                                    " --report " +
                                    report + " --profile " + prof,
                                &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("zoo:mnist_mlp?batch=16&size=8&hidden=32 on digits data"), std::string::npos) << out;
  EXPECT_NE(out.find("step    40  loss"), std::string::npos) << out;
  EXPECT_NE(out.find("test accuracy"), std::string::npos) << out;
  std::ifstream f(report);
  const auto j = nlohmann::json::parse(f, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["mode"], "graph");
  EXPECT_EQ(j["losses"].size(), 40u);
  EXPECT_GT(j["step_ms"]["median"].get<double>(), 0);
  EXPECT_TRUE(j["step_ms"].contains("p10") && j["step_ms"].contains("p90") && j["step_ms"].contains("mean"));
  EXPECT_GT(j["compile_ms"].get<double>(), 0);
  EXPECT_GT(j["peak_bytes"].get<int64_t>(), 0);
  EXPECT_GT(j["accuracy"].get<double>(), 0.5);
  EXPECT_TRUE(fs::exists(fs::path(prof) / "graph.train.trace.json"));
  EXPECT_TRUE(fs::exists(fs::path(prof) / "summary.json"));
}

TEST_F(TrainCli, GraphReportListsTheCompilePassesAndPyNativeOnCudaTrainsOnTheCpu) {
  const std::string report = (dir_ / "g.json").string();
  int rc = -1;
  std::string out =
      run_capture(cli_ + " train" + kModel + " --steps 2 --batch 16 --mode graph --report " + report, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("passes:  infer-types"), std::string::npos) << out;
  std::ifstream f(report);
  const auto j = nlohmann::json::parse(f, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  ASSERT_TRUE(j["passes"].is_array() && !j["passes"].empty()) << j.dump();
  EXPECT_EQ(j["passes"][0]["pass"], "infer-types");
  EXPECT_GT(j["passes"][0]["nodes_before"].get<int64_t>(), 0);
  // Eager training steps stay on the CPU whatever the device (with a note, not a crash).
  out = run_capture(cli_ + " train" + kModel + " --steps 2 --batch 16 --mode pynative --device cuda", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("note: PyNative training runs on the CPU"), std::string::npos) << out;
  EXPECT_NE(out.find("pynative mode, cpu"), std::string::npos) << out;
}

TEST_F(TrainCli, CompareTrainPrintsTheTable) {
  int rc = -1;
  std::string out = run_capture(cli_ + " compare" + kModel + " --train --iters 4 --warmup 1 --batch 16", &rc);
  ASSERT_EQ(rc, 0) << out;
  for (const char* s : {"step median", "peak memory", "compile", "break-even", "loss curves"}) {
    EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
  }
}

TEST_F(TrainCli, AmpReportsLevelLossScaleAndSkippedSteps) {
  for (const char* mode : {"pynative", "graph"}) {
    const std::string report = (dir_ / (std::string(mode) + ".json")).string();
    int rc = -1;
    std::string out =
        run_capture(cli_ + " train" + kModel +
                        " --steps 40 --batch 16 --optimizer adam --lr 0.01 --amp O2 --loss-scale dynamic --mode " +
                        mode + " --report " + report,
                    &rc);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("loss scale 65536 at the end, 0 skipped steps"), std::string::npos) << out;
    std::ifstream f(report);
    const auto j = nlohmann::json::parse(f, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out;
    EXPECT_EQ(j["amp"], "O2");
    EXPECT_EQ(j["loss_scale_mode"], "dynamic");
    EXPECT_EQ(j["loss_scale"].get<double>(), 65536.0);
    EXPECT_EQ(j["skipped_steps"].get<int64_t>(), 0);
    EXPECT_GT(j["accuracy"].get<double>(), 0.5);
  }
}

TEST_F(TrainCli, ErrorsAreOneLine) {
  int rc = -1;
  std::string out = run_capture(cli_ + " train" + kModel + " --amp O4", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("amp level must be O0, O1, O2 or O3"), std::string::npos) << out;
  out = run_capture(cli_ + " train" + kModel + " --amp O2 --loss-scale -2", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--loss-scale must be"), std::string::npos) << out;
  out = run_capture(cli_ + " train " MODESCOPE_SOURCE_DIR "/samples/models/mlp.onnx --steps 1", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("zoo template"), std::string::npos) << out;
  out = run_capture(cli_ + " train 'zoo:mnist_mlp' --data digits --data-dir " + dir_.string() + " --steps 1", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("digits_images.npy"), std::string::npos) << out;
  // The error is one line after the run's header line.
  const auto at = out.find("error: ");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_EQ(out.find('\n', at), out.size() - 1) << out;
}

}  // namespace
