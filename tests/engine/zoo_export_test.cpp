// Export: built graphs (templates, If subgraphs, Print nodes) written as ONNX load back with the
// same node names, ids and origins and give the same outputs; the files pass onnx.checker when
// Debian's python3-onnx is there.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "engine/compiler/compile.h"
#include "engine/frontend/nn/trace.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/frontend/zoo/zoo.h"
#include "tests/engine/nn_api_util.h"
#include "tests/temp_dir.h"

namespace ms::zoo {
namespace {

namespace fs = std::filesystem;

runtime::TensorMap inputs_for(const ir::Graph& g) {
  runtime::TensorMap m;
  for (const auto& name : g.inputs) {
    const ir::Value* v = g.value(name);
    if (v->type.dtype == DType::I64) {
      Tensor t = Tensor::zeros(DType::I64, *v->type.dims);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = i % 5;
      m[name] = t;
    } else {
      m[name] = nn::testing::random_tensor(*v->type.dims, 7);
    }
  }
  return m;
}

std::vector<Tensor> run_eager(const ir::Graph& g) {
  // The builder API's backend outlives the returned tensors (they come from its allocator).
  runtime::EagerExecutor ex(g, nn::backend());
  auto out = ex.run(inputs_for(g));
  EXPECT_TRUE(out) << out.status().message();
  return out ? *out : std::vector<Tensor>{};
}

// Names and ids of every node in pre-order (subgraphs included).
std::vector<std::string> identity_of(const ir::Graph& g) {
  std::vector<std::string> r;
  std::function<void(const ir::Graph&)> walk = [&](const ir::Graph& gr) {
    for (const auto& n : gr.nodes()) {
      std::string s = n.name + "#" + std::to_string(n.id.value) + "<";
      for (auto o : n.origins) s += std::to_string(o.value) + ",";
      r.push_back(s + ">");
      for (const auto& [k, a] : n.attrs)
        if (auto* sub = a.get_if<ir::Attribute::GraphPtr>(); sub && *sub) walk(**sub);
    }
  };
  walk(g);
  return r;
}

ir::Graph printing_graph() {
  auto g = nn::trace_function(
      [](const nn::Vars& in) {
        nn::Var y = nn::F::relu(in[0]);
        nn::ops::print("after relu", y);
        return nn::Vars{nn::F::mul(y, 2.0)};
      },
      {nn::static_type(DType::F32, {2, 3})});
  EXPECT_TRUE(g) << g.status().message();
  return std::move(*g);
}

TEST(ZooExport, RoundTripKeepsNamesIdsAndOutputs) {
  const ms::testing::TempDir tmp("zoo_export");
  const fs::path dir = tmp.path;
  std::vector<std::pair<std::string, ir::Graph>> graphs;
  for (const char* u : {"zoo:mnist_mlp?batch=2&size=8&hidden=16", "zoo:dynamic_net?size=8&classes=3", "zoo:lenet5",
                        "zoo:transformer_encoder?seq=4&layers=1&hidden=8&heads=2&vocab=10"}) {
    auto g = build_graph(u);
    ASSERT_TRUE(g) << u << ": " << g.status().message();
    graphs.emplace_back(u, std::move(*g));
  }
  graphs.emplace_back("print", printing_graph());
  int i = 0;
  for (auto& [what, g] : graphs) {
    const std::string path = (dir / ("m" + std::to_string(i++) + ".onnx")).string();
    Status st = onnx_io::save_model(g, path);
    ASSERT_TRUE(st.is_ok()) << what << ": " << st.message();
    auto back = onnx_io::load_model(path);
    ASSERT_TRUE(back) << what << ": " << back.status().message();
    EXPECT_EQ(identity_of(*back), identity_of(g)) << what;
    EXPECT_EQ(back->opset(), 17) << what;
    ::testing::internal::CaptureStdout();
    auto a = run_eager(g);
    auto b = run_eager(*back);
    ::testing::internal::GetCapturedStdout();
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(nn::testing::max_rel_diff(b[k], a[k]), 0.0) << what;
  }
}

TEST(ZooExport, OnnxCheckerAcceptsExportedModels) {
  if (std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3-onnx is not installed (/usr/bin/python3 -c 'import onnx' failed)";
  const ms::testing::TempDir tmp("zoo_export");
  const fs::path dir = tmp.path;
  std::vector<std::string> files;
  int i = 0;
  for (const char* u :
       {"zoo:mnist_mlp?batch=1&size=8&hidden=16", "zoo:dynamic_net?size=8&classes=3", "zoo:resnet18?size=32&width=4",
        "zoo:mobilenet_v2?size=32&width=8", "zoo:transformer_encoder?seq=4&layers=1&hidden=8&heads=2&vocab=10",
        "zoo:inception_block?size=8&width=8"}) {
    auto g = build_graph(u);
    ASSERT_TRUE(g) << u << ": " << g.status().message();
    files.push_back((dir / ("c" + std::to_string(i++) + ".onnx")).string());
    ASSERT_TRUE(onnx_io::save_model(*g, files.back()).is_ok());
  }
  files.push_back((dir / "print.onnx").string());
  ASSERT_TRUE(onnx_io::save_model(printing_graph(), files.back()).is_ok());
  std::string cmd =
      "/usr/bin/python3 -c 'import onnx,sys\nfor p in sys.argv[1:]: onnx.checker.check_model(onnx.load(p), "
      "full_check=True)'";
  for (const auto& f : files) cmd += " " + f;
  cmd += " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << out;
}

TEST(ZooExport, GraphAfterPassesRoundTripsWithOrigins) {
  auto g = build_graph("zoo:lenet5?batch=2");
  ASSERT_TRUE(g) << g.status().message();
  std::map<std::string, ir::ValueType> sig{{"input", g->value("input")->type}};
  compiler::CompileOptions opts;
  opts.jit_level = compiler::JitLevel::O2;
  auto ex = compiler::compile_executor(*g, nn::backend(), sig, opts);
  ASSERT_TRUE(ex) << ex.status().message();
  const ir::Graph& compiled = (*ex)->graph();
  const ms::testing::TempDir tmp("zoo_export");
  const fs::path dir = tmp.path;
  const std::string path = (dir / "compiled.onnx").string();
  Status st = onnx_io::save_model(compiled, path);
  ASSERT_TRUE(st.is_ok()) << st.message();
  auto back = onnx_io::load_model(path, onnx_io::LoadOptions{false});
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(identity_of(*back), identity_of(compiled));
  // Every origin is a node of the built graph: fused nodes still name what they stand for.
  std::set<uint64_t> built;
  for (const auto& n : g->nodes()) built.insert(n.id.value);
  for (const auto& n : back->nodes())
    for (auto o : n.origins) EXPECT_TRUE(built.count(o.value)) << n.name << " origin " << o.value;
}

}  // namespace
}  // namespace ms::zoo
