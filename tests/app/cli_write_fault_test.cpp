// The CLI's reports go through the atomic write helper: with a fault injected through
// MODESCOPE_WRITE_FAULT (permission denied at the rename, disk full at the first write), `run --report`
// exits non-zero with one error naming the report and leaves the previous report as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/app/cli_test_util.h"
#include "tests/temp_dir.h"

namespace ms::cli {
namespace {

namespace fs = std::filesystem;
using ms::testing::run_capture;

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(CliWriteFault, FailedReportKeepsTheOldOne) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !fs::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  const ms::testing::TempDir tmp("cli_fault");
  const fs::path dir = tmp.path;
  const fs::path report = dir / "report.json";
  std::ofstream(report) << "old report\n";
  const std::string model = std::string(MODESCOPE_SOURCE_DIR) + "/samples/models/mlp.onnx";
  const std::string run = cli + " run " + model + " --threads 1 --iters 2 --warmup 1 --report " + report.string();
  for (const char* fault : {"rename:1:EACCES", "write:1:ENOSPC"}) {
    SCOPED_TRACE(fault);
    int rc = -1;
    const std::string out = run_capture(std::string("MODESCOPE_WRITE_FAULT=") + fault + " " + run, &rc);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find(report.string() + ": "), std::string::npos) << out;
    EXPECT_EQ(read_all(report), "old report\n");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  }
  int rc = -1;
  const std::string out = run_capture(run, &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(read_all(report).find("median"), std::string::npos);
}

}  // namespace
}  // namespace ms::cli
