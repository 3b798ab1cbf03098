// `modescope-cli profile` end to end on a small model: traces that import, summary.json with the
// comparison, per-op tables, memory analysis and verdict.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "profiler/io/chrome_trace.h"
#include "tests/app/cli_test_util.h"
#include "tests/temp_dir.h"

namespace ms::prof {
namespace {

TEST(CliProfile, BothModesWriteTracesAndSummary) {
  const ms::testing::TempDir tmp("cli_profile");
  const std::filesystem::path out = tmp.path / "profile";
  const std::string model = std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/torch/mlp_op11.onnx";
  const std::string cmd = ms::testing::cli_path() + " profile " + model + " --iters 2 --warmup 1 --threads 1 --out " +
                          out.string() + " > " + (out.string() + ".log") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const char* name : {"pynative.trace.json", "graph.trace.json"}) {
    auto r = import_chrome_trace_file((out / name).string());
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_FALSE(r->trace->foreign);
    EXPECT_FALSE(r->trace->events.empty());
  }
  std::ifstream f(out / "summary.json");
  ASSERT_TRUE(f);
  const nlohmann::json s = nlohmann::json::parse(f);
  EXPECT_TRUE(s["verdict"].is_string());
  EXPECT_FALSE(s["verdict"].get<std::string>().empty());
  EXPECT_TRUE(s["comparison"]["rows"].is_array());
  EXPECT_FALSE(s["comparison"]["rows"].empty());
  EXPECT_TRUE(s["comparison"]["summary"].contains("break_even_iterations"));
  for (const char* mode : {"pynative", "graph"}) {
    const auto& m = s["modes"][mode];
    EXPECT_FALSE(m["op_table"]["by_op"].empty()) << mode;
    EXPECT_TRUE(m["memory"].contains("peak_live_bytes")) << mode;
    EXPECT_TRUE(m["memory"].contains("fragmentation")) << mode;
  }
}

TEST(CliProfile, UnknownModeIsAUsageError) {
  const std::string cmd = ms::testing::cli_path() + " profile x.onnx --mode sideways --out /tmp/x > /dev/null 2>&1";
  EXPECT_NE(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace ms::prof
