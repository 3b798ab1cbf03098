// modescope-cli train across ranks (scripts/mpirun-local -np 2): per-rank reports with the
// data-parallel fields, both modes, a hung rank aborting the job with the watchdog's line naming
// the collective and the ranks, a dead rank ending the job, one rank without mpirun, and every
// rank's losses in the reports and the session.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "app/session/rank_curves.h"
#include "app/session/session_file.h"
#include "tests/app/cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using ms::testing::run_capture;

const char* kDistModel = " 'zoo:mnist_mlp?hidden=64' --data-dir " MODESCOPE_SOURCE_DIR "/samples/data --threads 1";

class DistCli : public ::testing::Test {
 protected:
  void SetUp() override {
    cli_ = ms::testing::cli_path();
    if (cli_.empty() || !fs::exists(cli_)) GTEST_SKIP() << "modescope-cli is not built";
    dir_ = fs::temp_directory_path() / ("modescope_dist_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // Skips (saying why) where two ranks cannot be launched.
  bool can_launch_ranks() {
#ifndef MODESCOPE_HAVE_MPI
    return false;
#else
    int rc = -1;
    run_capture("command -v mpirun", &rc);
    return rc == 0;
#endif
  }
  std::string mpirun() const { return std::string(MODESCOPE_SOURCE_DIR) + "/scripts/mpirun-local -np 2 "; }
  nlohmann::json read_json(const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f, nullptr, false);
  }
  std::string cli_;
  fs::path dir_;
};

TEST_F(DistCli, TwoRanksWriteOneReportEachWithCollectiveTimes) {
  if (!can_launch_ranks()) GTEST_SKIP() << "this build has no MPI or mpirun is missing (apt-get install openmpi-bin)";
  for (const char* mode : {"pynative", "graph"}) {
    int rc = -1;
    const std::string out =
        run_capture(mpirun() + cli_ + " train" + kDistModel + " --steps 6 --batch 32 --mode " + mode +
                        " --all-reduce-fusion 2,4 --report " + (dir_ / "r{rank}.json").string(),
                    &rc);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("data parallel: 2 rank(s) (mpi)"), std::string::npos) << out;
    for (int rank : {0, 1}) {
      const auto j = read_json(dir_ / ("r" + std::to_string(rank) + ".json"));
      ASSERT_TRUE(j.is_object()) << mode << " rank " << rank;
      EXPECT_EQ(j["world_size"], 2);
      EXPECT_EQ(j["rank"], rank);
      EXPECT_EQ(j["communicator"], "mpi");
      ASSERT_EQ(j["allreduce_ms"].size(), 6u);
      EXPECT_GT(j["allreduce_ms"][1].get<double>(), 0.0);
      ASSERT_EQ(j["overlap"].size(), 6u);
    }
    if (std::string(mode) == "graph") {
      bool inserted = false;
      const auto r0 = read_json(dir_ / "r0.json");
      for (const auto& p : r0["passes"]) inserted = inserted || p["pass"] == "fuse-allreduce";
      EXPECT_TRUE(inserted);
    }
  }
}

// The figures over the steady steps (2..N) and the warm-up step 1 beside them, the same in both
// modes; every rank's losses in each report (rank_losses) and, one curve per rank, in rank 0's
// session.
TEST_F(DistCli, ReportsAndTheSessionKeepEveryRanksLossAndSteadyFigures) {
  if (!can_launch_ranks()) GTEST_SKIP() << "this build has no MPI or mpirun is missing (apt-get install openmpi-bin)";
  for (const std::string mode : {"pynative", "graph"}) {
    const std::string session = (dir_ / (mode + ".modescope")).string();
    int rc = -1;
    const std::string out =
        run_capture(mpirun() + cli_ + " train" + kDistModel + " --steps 5 --batch 32 --mode " + mode + " --report " +
                        (dir_ / "r{rank}.json").string() + " --session " + session,
                    &rc);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("data parallel: 2 rank(s) (mpi), steps 2..5: all-reduce median"), std::string::npos) << out;
    EXPECT_NE(out.find("warm-up step 1: "), std::string::npos) << out;
    const nlohmann::json r[2] = {read_json(dir_ / "r0.json"), read_json(dir_ / "r1.json")};
    for (int k = 0; k < 2; ++k) {
      const nlohmann::json& j = r[k];
      ASSERT_TRUE(j.is_object()) << mode << " rank " << k;
      std::vector<double> ar = j["allreduce_ms"], ov = j["overlap"];
      ASSERT_EQ(ar.size(), 5u);
      EXPECT_DOUBLE_EQ(j["first_step_allreduce_ms"].get<double>(), ar[0]) << mode;
      EXPECT_DOUBLE_EQ(j["first_step_overlap"].get<double>(), ov[0]) << mode;
      double mean = 0;
      for (size_t i = 1; i < ov.size(); ++i) mean += ov[i] / 4.0;
      EXPECT_NEAR(j["overlap_steady"].get<double>(), mean, 1e-12) << mode;
      std::vector<double> steady(ar.begin() + 1, ar.end());
      std::sort(steady.begin(), steady.end());
      EXPECT_NEAR(j["allreduce_ms_steady"].get<double>(), (steady[1] + steady[2]) / 2, 1e-9) << mode;
      ASSERT_EQ(j["rank_losses"].size(), 2u) << mode;
      for (int q = 0; q < 2; ++q) EXPECT_EQ(j["rank_losses"][q], r[q]["losses"]) << mode << " rank " << q;
    }
    // Each rank trains on its own slice of the batch: its losses are its own.
    EXPECT_NE(r[0]["losses"], r[1]["losses"]) << mode;
    auto data = ms::session::load_session(session);
    ASSERT_TRUE(data.has_value()) << data.status().message();
    ASSERT_EQ(data->training.size(), 2u) << mode;
    for (int k = 0; k < 2; ++k) {
      const ms::session::TrainingCurve& c = data->training[static_cast<size_t>(k)];
      EXPECT_EQ(c.name, ms::session::rank_curve_name(mode, k));
      EXPECT_EQ(c.mode, mode);
      EXPECT_EQ(ms::session::rank_of_curve(c), k);
      EXPECT_EQ(nlohmann::json(c.losses), r[k]["losses"]) << mode << " rank " << k;
      EXPECT_EQ(nlohmann::json(c.step_ms), r[k]["step_ms_all"]) << mode << " rank " << k;
      EXPECT_EQ(c.lrs.size(), 5u);
    }
  }
}

TEST_F(DistCli, EachRanksProfileRecordsItsCollectivesAndTheTracesMerge) {
  if (!can_launch_ranks()) GTEST_SKIP() << "this build has no MPI or mpirun is missing (apt-get install openmpi-bin)";
  int rc = -1;
  std::string out = run_capture(mpirun() + cli_ + " train" + kDistModel +
                                    " --steps 3 --first-bucket-mb 0.01 --profile " + (dir_ / "p{rank}").string(),
                                &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::string merged = (dir_ / "merged.json").string();
  out = run_capture(cli_ + " merge-traces " + merged + " " + (dir_ / "p0" / "pynative.train.trace.json").string() +
                        " " + (dir_ / "p1" / "pynative.train.trace.json").string(),
                    &rc);
  ASSERT_EQ(rc, 0) << out;
  const auto j = read_json(merged);
  std::set<int> pids;
  int collectives = 0;
  for (const auto& e : j["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e["name"].get<std::string>().rfind("all-reduce #", 0) == 0) {
      ++collectives;
      EXPECT_GT(e["args"]["bytes"].get<int64_t>(), 0);
      EXPECT_GT(e["args"]["sequence"].get<int64_t>(), 7);  // after the model check and the 6 broadcasts
    }
  }
  EXPECT_EQ(pids, (std::set<int>{1, 2}));  // rank r is process r + 1
  EXPECT_GE(collectives, 2 * 3 * 2) << "two buckets per step, 3 steps, 2 ranks";
}

// Two ranks training with rank 1 failing at collective #10 (an all-reduce of the gradients: one
// fingerprint all-gather and 6 weight broadcasts come first); the job must end within 20 s, non-zero.
std::string train_with_fault(const std::string& action, const std::string& cmd) {
  int rc = -1;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string out = run_capture("MODESCOPE_DIST_FAULT=rank=1,collective=10,action=" + action + " " + cmd, &rc);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(rc, 0) << out;
  EXPECT_LT(s, 20.0) << "the job took " << s << " s";
  return out;
}

TEST_F(DistCli, AHungRankAbortsTheJobNamingTheCollectiveAndTheRanks) {
  if (!can_launch_ranks()) GTEST_SKIP() << "this build has no MPI or mpirun is missing (apt-get install openmpi-bin)";
  const std::string out =
      train_with_fault("hang", mpirun() + cli_ + " train" + kDistModel + " --steps 20 --comm-timeout 2");
  EXPECT_NE(out.find("rank 0: collective #10 (all-reduce, "), std::string::npos) << out;
  EXPECT_NE(out.find("timed out after 2 s waiting for ranks 1"), std::string::npos) << out;
}

TEST_F(DistCli, ADeadRankEndsTheJob) {
  if (!can_launch_ranks()) GTEST_SKIP() << "this build has no MPI or mpirun is missing (apt-get install openmpi-bin)";
  const std::string out =
      train_with_fault("exit", mpirun() + cli_ + " train" + kDistModel + " --steps 20 --comm-timeout 2");
  EXPECT_NE(out.find("rank 1: planned fault (MODESCOPE_DIST_FAULT) at collective #10: exiting"), std::string::npos)
      << out;
}

TEST_F(DistCli, ARankThatFailsOnItsOwnAbortsTheOthers) {
  if (!can_launch_ranks()) GTEST_SKIP() << "this build has no MPI or mpirun is missing (apt-get install openmpi-bin)";
  fs::create_directories(dir_ / "r0");  // rank 1's report folder is missing: only rank 1 fails
  int rc = -1;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string out = run_capture(
      mpirun() + cli_ + " train" + kDistModel + " --steps 2 --report " + (dir_ / "r{rank}" / "r.json").string(), &rc);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(rc, 0) << out;
  EXPECT_LT(s, 20.0) << "the job took " << s << " s";
  EXPECT_NE(out.find("rank 1 failed: aborting the other ranks"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir_ / "r0" / "r.json"));
}

TEST_F(DistCli, WithoutMpirunOneRankAndPlainTrainingUnchanged) {
  int rc = -1;
  std::string out = run_capture(
      cli_ + " train" + kDistModel + " --steps 3 --data-parallel --report " + (dir_ / "one.json").string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("not launched by mpirun: data parallel over one rank"), std::string::npos) << out;
  auto j = read_json(dir_ / "one.json");
  EXPECT_EQ(j["world_size"], 1);
  EXPECT_EQ(j["allreduce_ms"].size(), 3u);
  out = run_capture(cli_ + " train" + kDistModel + " --steps 3 --report " + (dir_ / "plain.json").string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("data parallel"), std::string::npos) << out;
  j = read_json(dir_ / "plain.json");
  EXPECT_EQ(j["world_size"], 1);
  EXPECT_TRUE(j["communicator"].is_null());
  EXPECT_TRUE(j["allreduce_ms"].empty());
}

}  // namespace
