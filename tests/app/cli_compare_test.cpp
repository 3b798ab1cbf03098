// `modescope-cli compare`: the table's break-even row and the verdict under it are one figure.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "tests/app/cli_test_util.h"

namespace ms::cli {
namespace {

TEST(CliCompare, BreakEvenRowAndVerdictAgree) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !std::filesystem::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  int rc = -1;
  const std::string out = ms::testing::run_capture(
      cli + " compare " + MODESCOPE_SOURCE_DIR + "/samples/models/mlp.onnx --iters 6 --warmup 1", &rc);
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

}  // namespace
}  // namespace ms::cli
