// `modescope-cli compare`: the table's break-even row and the verdict under it are one figure, and
// the node counts of both modes (and of `run`).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/frontend/npy.h"
#include "tests/app/cli_test_util.h"
#include "tests/temp_dir.h"

namespace ms::cli {
namespace {

// modescope-cli as the build made it, run on the mlp sample.
struct Cli {
  std::string path = ms::testing::cli_path();
  bool built() const { return !path.empty() && std::filesystem::exists(path); }
  std::string on_mlp(const std::string& command, const std::string& args, int* rc) const {
    return ms::testing::run_capture(
        path + " " + command + " " + MODESCOPE_SOURCE_DIR + "/samples/models/mlp.onnx " + args, rc);
  }
};

TEST(CliCompare, BreakEvenRowAndVerdictAgree) {
  const Cli cli;
  if (!cli.built()) GTEST_SKIP() << "modescope-cli is not built";
  int rc = -1;
  const std::string out = cli.on_mlp("compare", "--iters 6 --warmup 1", &rc);
  ASSERT_EQ(rc, 0) << out;
  std::smatch row, verdict;
  const bool has_row = std::regex_search(out, row, std::regex(R"(break-even\s+(\d+) iterations)"));
  const bool pays = std::regex_search(out, verdict, std::regex(R"(Graph mode pays off after (\d+) iteration)"));
  // Either both say when Graph mode pays off, with the same number, or neither does (stay in PyNative).
  EXPECT_EQ(has_row, pays) << out;
  if (has_row && pays) {
    EXPECT_EQ(row[1].str(), verdict[1].str()) << out;
  }
  if (!pays) {
    EXPECT_NE(out.find("Stay in PyNative mode"), std::string::npos) << out;
  }
}

// The nodes row counts the model's nodes for PyNative and the compiled graph's for Graph mode (it
// used to print the model's count in both columns).
TEST(CliCompare, NodesRowCountsTheCompiledGraph) {
  const Cli cli;
  if (!cli.built()) GTEST_SKIP() << "modescope-cli is not built";
  int rc = -1;
  const std::string out = cli.on_mlp("compare", "--iters 2 --warmup 1", &rc);
  ASSERT_EQ(rc, 0) << out;
  std::smatch nodes, kernels;
  ASSERT_TRUE(std::regex_search(out, nodes, std::regex(R"(\nnodes\s+(\d+)\s+(\d+))"))) << out;
  ASSERT_TRUE(std::regex_search(out, kernels, std::regex(R"(kernels / iteration\s+(\d+)\s+(\d+))"))) << out;
  // mlp: MatMul+Add+Relu chains fuse, so the compiled graph has fewer nodes, one kernel each.
  EXPECT_LT(std::stoi(nodes[2].str()), std::stoi(nodes[1].str())) << out;
  EXPECT_EQ(nodes[2].str(), kernels[2].str()) << out;
}

// `run --mode graph` says how many nodes the passes left beside the model's count; PyNative does not.
TEST(CliCompare, RunSaysHowManyNodesThePassesLeft) {
  const Cli cli;
  if (!cli.built()) GTEST_SKIP() << "modescope-cli is not built";
  int rc = -1;
  const std::string graph = cli.on_mlp("run", "--mode graph --iters 1", &rc);
  ASSERT_EQ(rc, 0) << graph;
  EXPECT_TRUE(std::regex_search(graph, std::regex(R"(nodes +9 \(4 after the passes\))"))) << graph;
  const std::string eager = cli.on_mlp("run", "--mode pynative --iters 1", &rc);
  ASSERT_EQ(rc, 0) << eager;
  EXPECT_TRUE(std::regex_search(eager, std::regex(R"(nodes +9\n)"))) << eager;
}

// A Graph-only run gives back the weights its kernels packed, says how much, and its outputs are
// PyNative's (which keeps them).
TEST(CliCompare, GraphRunGivesBackPackedWeightsWithTheSameOutputs) {
  const Cli cli;
  if (!cli.built()) GTEST_SKIP() << "modescope-cli is not built";
  const ms::testing::TempDir dir("cli_release");
  const std::string model = "'zoo:resnet18?size=32&width=16'";
  int rc = -1;
  const std::string graph =
      ms::testing::run_capture(cli.path + " run " + model + " --mode graph --iters 2 --report " +
                                   dir.file("graph.json") + " --save-outputs " + dir.file("graph"),
                               &rc);
  ASSERT_EQ(rc, 0) << graph;
  EXPECT_TRUE(
      std::regex_search(graph, std::regex(R"(memory +weights [0-9.]+ \w+ \([0-9.]+ \w+ given back once packed\))")))
      << graph;
  std::ifstream report(dir.file("graph.json"));
  const auto j = nlohmann::json::parse(report);
  EXPECT_GT(j.at("released_bytes").get<uint64_t>(), 0u);
  EXPECT_LE(j.at("released_bytes").get<uint64_t>(), j.at("weight_bytes").get<uint64_t>());
  const std::string eager = ms::testing::run_capture(
      cli.path + " run " + model + " --mode pynative --iters 1 --save-outputs " + dir.file("eager"), &rc);
  ASSERT_EQ(rc, 0) << eager;
  EXPECT_EQ(eager.find("given back"), std::string::npos) << eager;
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir.file("graph"))) {
    auto g = load_npy(f.path().string());
    auto e = load_npy(dir.file("eager") + "/" + f.path().filename().string());
    ASSERT_TRUE(g && e);
    ASSERT_EQ(g->numel(), e->numel());
    for (int64_t i = 0; i < g->numel(); ++i) EXPECT_NEAR(g->data<float>()[i], e->data<float>()[i], 1e-3f) << i;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace ms::cli
