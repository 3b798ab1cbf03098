// `modescope-cli zoo`, `export` and `check` on zoo URIs, end to end through the built CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "engine/frontend/onnx/onnx_io.h"
#include "tests/app/cli_test_util.h"
#include "tests/temp_dir.h"

namespace ms::zoo {
namespace {

namespace fs = std::filesystem;
using ms::testing::run_capture;

TEST(ZooExport, CliListsTemplatesAndExportsZooUris) {
  const std::string cli = ms::testing::cli_path();
  if (cli.empty() || !fs::exists(cli)) GTEST_SKIP() << "modescope-cli is not built";
  const ms::testing::TempDir tmp("cli_zoo");
  const fs::path dir = tmp.path;
  int rc = -1;
  std::string out = run_capture(cli + " zoo --json", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"transformer_encoder\""), std::string::npos);
  const std::string path = (dir / "lenet.onnx").string();
  out = run_capture(cli + " export 'zoo:lenet5?classes=7' " + path, &rc);
  ASSERT_EQ(rc, 0) << out;
  auto g = onnx_io::load_model(path);
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_EQ(g->metadata["modescope.zoo"], "zoo:lenet5?classes=7");
  EXPECT_TRUE(g->find_node_by_name("conv1"));
  out = run_capture(cli + " check 'zoo:resnet18?size=32&width=4'", &rc);
  EXPECT_EQ(rc, 0) << out;
  out = run_capture(cli + " export 'zoo:lenet5?batch=0' " + path, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("out of range"), std::string::npos) << out;
}

}  // namespace
}  // namespace ms::zoo
