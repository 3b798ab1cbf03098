// The malformed-model corpus (tests/data/bad, written by make_bad_models.py): every file must be
// refused with a message naming the file and containing the expected text, and nothing may crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "engine/compiler/infer.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/executor.h"

namespace ms::onnx_io {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string file, substring;
};

fs::path bad_dir() { return fs::path(MODESCOPE_SOURCE_DIR) / "tests" / "data" / "bad"; }

std::vector<Case> read_expectations() {
  std::vector<Case> cases;
  std::ifstream in(bad_dir() / "expected.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    cases.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return cases;
}

// For files that load (well-formed, ill-typed for an op): whole-graph type inference must refuse
// them. Its errors name the node; the caller (like the app's load job) names the file.
Status infer_all(ir::Graph& g, const std::string& path) {
  Status st = compiler::infer_graph_types(g, nullptr);
  if (!st.is_ok()) st.prepend(path + ": ");
  return st;
}

TEST(BadModels, CorpusIsComplete) {
  const auto cases = read_expectations();
  EXPECT_GE(cases.size(), 40u);
  std::set<std::string> listed;
  for (const auto& c : cases) listed.insert(c.file);
  for (const auto& e : fs::directory_iterator(bad_dir()))
    if (e.path().extension() == ".onnx") {
      EXPECT_TRUE(listed.count(e.path().filename().string())) << e.path() << " has no line in expected.txt";
    }
}

TEST(BadModels, EachFileFailsWithItsMessage) {
  const auto cases = read_expectations();
  ASSERT_FALSE(cases.empty()) << "expected.txt missing or empty in " << bad_dir();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string path = (bad_dir() / c.file).string();
    ASSERT_TRUE(fs::exists(path));
    auto g = load_model(path);
    Status st = g.has_value() ? infer_all(*g, path) : g.status();
    ASSERT_FALSE(st.is_ok()) << "loaded and inferred without error";
    EXPECT_NE(st.message().find(c.file), std::string::npos) << "message does not name the file: " << st.message();
    EXPECT_NE(st.message().find(c.substring), std::string::npos)
        << "expected '" << c.substring << "' in: " << st.message();
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << "not one line: " << st.message();
  }
}

// The same bytes from memory: still an error (external data is refused there), never a crash.
TEST(BadModels, FromBytesNeverCrashes) {
  for (const auto& c : read_expectations()) {
    std::ifstream in(bad_dir() / c.file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LoadOptions o;
    o.require_supported_ops = false;
    auto g = load_model_from_bytes(bytes, "", c.file, o);
    if (g.has_value()) {
      EXPECT_TRUE(ir::verify(*g).is_ok()) << c.file;
    } else {
      EXPECT_NE(g.status().message().find(c.file), std::string::npos) << g.status().message();
    }
  }
}

}  // namespace
}  // namespace ms::onnx_io
