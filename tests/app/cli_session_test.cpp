// --session FILE on run, compare, profile and train: the CLI writes a session file, and it opens
// back with the runs, traces, passes, memory plans, comparison and training curves the command made.
// A save that fails (disk full injected) is one error line naming the file, and the old file stays.
#include <gtest/gtest.h>

#include <string>

#include "app/session/session_file.h"
#include "tests/app/cli_test_util.h"
#include "tests/app/session_test_util.h"

namespace ms::cli {
namespace {

using session::test::TempDir;

const char* const kModel = "'zoo:mnist_mlp?batch=2&size=8&hidden=16'";

session::SessionData run_cli(const std::string& args, const std::string& file) {
  const std::string cli = ms::testing::cli_path();
  int rc = -1;
  const std::string out = ms::testing::run_capture(cli + " " + args + " --session " + file, &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("session: " + file), std::string::npos) << out;
  auto s = session::load_session(file);
  EXPECT_TRUE(s.has_value()) << s.status().message();
  return s ? std::move(*s) : session::SessionData{};
}

class CliSession : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ms::testing::cli_path().empty()) GTEST_SKIP() << "modescope-cli is not built";
  }
  TempDir dir{"cli_session"};
};

TEST_F(CliSession, Run) {
  const auto s = run_cli(std::string("run ") + kModel + " --mode graph --iters 2 --warmup 0 --threads 1",
                         dir.file("run.modescope"));
  EXPECT_EQ(s.model.kind, "spec");
  EXPECT_EQ(s.environment.at("command"), "run");
  ASSERT_EQ(s.runs.size(), 1u);
  const session::SessionRun& r = s.runs[0];
  EXPECT_EQ(r.label, "graph");
  EXPECT_EQ(r.request.iterations, 2);
  EXPECT_GT(r.outcome.median_ms, 0);
  EXPECT_FALSE(r.outcome.outputs.empty());
  EXPECT_FALSE(r.outcome.passes.empty());
  EXPECT_TRUE(r.outcome.passes[0].graph);
  ASSERT_TRUE(r.outcome.plan);
  ASSERT_TRUE(r.outcome.trace);
  EXPECT_FALSE(r.outcome.trace->events.empty());
}

TEST_F(CliSession, CompareKeepsBothRunsAndTheirComparison) {
  const auto s =
      run_cli(std::string("compare ") + kModel + " --iters 2 --warmup 0 --threads 1", dir.file("compare.modescope"));
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.runs[0].label, "pynative");
  EXPECT_EQ(s.runs[1].label, "graph");
  ASSERT_EQ(s.comparisons.size(), 1u);
  EXPECT_EQ(s.comparisons[0].run_a, 0);
  EXPECT_EQ(s.comparisons[0].run_b, 1);
  EXPECT_NE(s.comparisons[0].report.find("verdict"), std::string::npos);
  EXPECT_TRUE(s.runs[0].outcome.trace && s.runs[1].outcome.trace);
}

TEST_F(CliSession, Profile) {
  const std::string onnx = std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx";
  const auto s = run_cli("profile " + onnx + " --iters 2 --warmup 0 --threads 1 --out " + dir.file("prof"),
                         dir.file("profile.modescope"));
  EXPECT_EQ(s.model.kind, "embedded");
  EXPECT_EQ(s.model.bytes, session::test::read_bytes(onnx));
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.comparisons.size(), 1u);
}

TEST_F(CliSession, TrainKeepsCurvesAndTheLastStep) {
  const auto s = run_cli("train 'zoo:mnist_mlp?hidden=16' --data synthetic --steps 5 --threads 1 --mode graph",
                         dir.file("train.modescope"));
  ASSERT_EQ(s.training.size(), 1u);
  EXPECT_EQ(s.training[0].losses.size(), 5u);
  EXPECT_EQ(s.training[0].step_ms.size(), 5u);
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.runs[0].label, "train:graph");
  EXPECT_TRUE(s.runs[0].outcome.trace);
}

TEST_F(CliSession, FailedSaveIsOneLineAndKeepsTheOldFile) {
  const std::string file = dir.file("kept.modescope");
  const std::string base = std::string("run ") + kModel + " --iters 1 --warmup 0 --threads 1";
  run_cli(base, file);
  const std::string before = session::test::read_bytes(file);
  int rc = -1;
  const std::string out = ms::testing::run_capture(
      "MODESCOPE_WRITE_FAULT=write:1:ENOSPC " + ms::testing::cli_path() + " " + base + " --session " + file, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("error: " + file + ": "), std::string::npos) << out;
  EXPECT_EQ(session::test::read_bytes(file), before);
}

}  // namespace
}  // namespace ms::cli
