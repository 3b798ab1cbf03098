#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/core/mapped_file.h"
#include "engine/core/strings.h"
#include "engine/frontend/onnx/import_internal.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "tests/engine/node_tests_dir.h"
#include "tests/temp_dir.h"

namespace ms::onnx_io {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/models/" + name;
}

LoadOptions any_ops() {
  LoadOptions o;
  o.require_supported_ops = false;  // these tests are about the file format, not the op registry
  return o;
}

ir::Graph load_ok(const std::string& name) {
  auto g = load_model(fixture(name), any_ops());
  EXPECT_TRUE(g.has_value()) << g.status().message();
  return g.has_value() ? std::move(g).value() : ir::Graph();
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(OnnxImport, TinyMlpStructureTypesAndInitializers) {
  ir::Graph g = load_ok("tiny_mlp.onnx");
  EXPECT_EQ(g.name, "tiny_mlp");
  ASSERT_EQ(g.inputs, std::vector<std::string>{"x"});
  const ir::Value* x = g.value("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->type.to_string(), "f32[batch,3]");
  EXPECT_EQ(x->type.dim_params[0], "batch");
  EXPECT_EQ((*x->type.dims)[0], -1);
  EXPECT_EQ(g.initializer_names(), (std::vector<std::string>{"b", "w"}));
  const Tensor& w = *g.value("w")->constant;
  EXPECT_EQ(w.shape(), (Shape{3, 4}));
  EXPECT_FLOAT_EQ(w.data<float>()[11], 1.1f);
  EXPECT_EQ(g.value("mm")->type.to_string(), "f32[batch,4]");  // from value_info
  EXPECT_EQ(g.value("y")->type.to_string(), "f32[batch,4]");   // from the graph output
  EXPECT_EQ(g.opset(""), 17);
  EXPECT_EQ(g.metadata.at("purpose"), "round trip fixture");
  EXPECT_EQ(g.metadata.at("onnx.doc_string"), "A three-layer fixture.");

  ASSERT_EQ(g.nodes().size(), 5u);
  EXPECT_EQ(g.nodes()[0].name, "fc/matmul");
  for (size_t i = 0; i < g.nodes().size(); ++i) EXPECT_EQ(g.nodes()[i].id.value, i + 1);
  const ir::Node& k = g.nodes()[3];
  EXPECT_EQ(k.op_type, "Constant");
  const Tensor* kt = k.attr_tensor("value");
  ASSERT_NE(kt, nullptr);
  EXPECT_EQ(kt->dtype(), DType::I64);
  EXPECT_EQ(kt->to_int_vector(), (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(g.nodes()[4].attr_int("allowzero", 7), 0);
  EXPECT_TRUE(ir::verify(g).is_ok());
}

TEST(OnnxImport, ControlFlowSubgraphsShareIds) {
  ir::Graph g = load_ok("control_flow.onnx");
  ASSERT_EQ(g.nodes().size(), 2u);
  const ir::Node& iff = g.nodes()[0];
  auto then_g = iff.attr_graph("then_branch");
  auto else_g = iff.attr_graph("else_branch");
  ASSERT_TRUE(then_g && else_g);
  EXPECT_EQ(then_g->ids(), g.ids());
  // Ids in file order, each node before its bodies: If=1, its branches 2 and 3 (attributes are
  // stored sorted by name: else_branch first), Loop=4, body=5,6.
  EXPECT_EQ(iff.id.value, 1u);
  EXPECT_EQ(else_g->nodes()[0].id.value, 2u);
  EXPECT_EQ(then_g->nodes()[0].id.value, 3u);
  EXPECT_EQ(g.nodes()[1].id.value, 4u);
  auto body = g.nodes()[1].attr_graph("body");
  ASSERT_TRUE(body);
  EXPECT_EQ(body->inputs.size(), 3u);
  EXPECT_EQ(body->nodes()[1].id.value, 6u);
  EXPECT_EQ(g.node_count_recursive(), 6u);

  const Tensor& h = *g.value("h")->constant;  // f16 stored in int32_data
  ASSERT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(static_cast<float>(h.data<f16>()[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(h.data<f16>()[1]), -2.0f);
  const Tensor& flag = *g.value("flag")->constant;
  EXPECT_EQ(flag.dtype(), DType::Bool);
  EXPECT_TRUE(flag.data<bool>()[0]);
  EXPECT_EQ(g.value("trip")->constant->at_int(0), 3);
}

TEST(OnnxImport, OutOfOrderNodesAreSorted) {
  ir::Graph g = load_ok("out_of_order.onnx");
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].name, "first");
  EXPECT_EQ(g.nodes()[1].name, "second");
  // Ids follow the file, not the sorted order.
  EXPECT_EQ(g.nodes()[0].id.value, 2u);
  EXPECT_TRUE(ir::verify(g).is_ok());
}

TEST(OnnxImport, ExternalDataIsReadFromTheModelFolder) {
  ir::Graph g = load_ok("external.onnx");
  const Tensor& w = *g.value("w")->constant;
  ASSERT_EQ(w.shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(w.data<float>()[i], static_cast<float>(i));
}

// The file that holds address `p` in this process's memory map ("" when it is not a file mapping).
std::string mapped_file_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || at < lo || at >= hi) continue;
    const auto slash = line.find('/');
    return slash == std::string::npos ? "" : line.substr(slash);
  }
  return "";
}

TEST(OnnxImport, AlignedExternalDataIsMappedNotRead) {
  // w lies at offset 64 of the data file: a view of the mapped file. u at offset 8: read (copied).
  ir::Graph g = load_ok("external_aligned.onnx");
  const Tensor& w = *g.value("w")->constant;
  const Tensor& u = *g.value("u")->constant;
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(w.data<float>()[i], static_cast<float>(i));
    EXPECT_EQ(u.data<float>()[i], static_cast<float>(10 * i));
  }
  EXPECT_NE(mapped_file_of(w.raw()).find("external_aligned.bin"), std::string::npos) << mapped_file_of(w.raw());
  EXPECT_EQ(mapped_file_of(u.raw()).find("external_aligned.bin"), std::string::npos);
  // The mapping lives as long as a tensor over it: the graph goes, the copy stays readable.
  Tensor kept = w;
  g = ir::Graph();
  EXPECT_EQ(kept.data<float>()[5], 5.f);
  const ProcessMemory m = process_memory();
  EXPECT_GT(m.resident_bytes, 0);
}

TEST(OnnxImport, ExternalDataRefusedWhenLoadedFromBytes) {
  const std::string bytes = read_all(fixture("external.onnx"));
  auto g = load_model_from_bytes(bytes, "", "mem.onnx", any_ops());
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.status().message().find("mem.onnx: initializer 'w'"), std::string::npos) << g.status().message();
}

TEST(OnnxImport, UnsupportedOpsAreListedOnce) {
  const std::string path = std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/bad/unsupported_ops.onnx";
  auto g = load_model(path);
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.status().code(), ErrorCode::Unsupported);
  const std::string& m = g.status().message();
  EXPECT_NE(m.find("unsupported ops: FooBar (node 'foo_1', opset 17), BazQux (node 'baz_1', opset 17)"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("foo_2"), std::string::npos) << m;
  EXPECT_TRUE(load_model(path, any_ops()).has_value());
}

TEST(OnnxImport, NewerOpsetThanKnownIsRefusedNamingBothNumbers) {
  EXPECT_EQ(max_supported_opset(""), 28);
  EXPECT_EQ(max_supported_opset("ai.onnx.ml"), 5);
  EXPECT_EQ(max_supported_opset("com.example"), 0);  // other domains: checked op by op
  ir::Graph g = load_ok("tiny_mlp.onnx");
  g.opsets[""] = 29;
  const ms::testing::TempDir tmp("onnx_import");
  const fs::path dir = tmp.path;
  const std::string out = (dir / "opset29.onnx").string();
  ASSERT_TRUE(save_model(g, out).is_ok());
  auto back = load_model(out, any_ops());
  ASSERT_FALSE(back.has_value());
  EXPECT_EQ(back.status().code(), ErrorCode::Unsupported);
  EXPECT_NE(
      back.status().message().find("opset 29 of domain 'ai.onnx' is newer than this importer supports (newest: 28)"),
      std::string::npos)
      << back.status().message();
}

// Sub-byte types are one code per byte in memory and packed in the file (two int4 or four int2
// values a byte, low bits first, the last byte padded); float8 codes are bytes as they are.
TEST(OnnxImport, NarrowTypesRoundTripTheirCodes) {
  ir::Graph g = load_ok("tiny_mlp.onnx");
  const std::vector<std::pair<DType, std::vector<uint8_t>>> cases = {
      {DType::I4, {1, 15, 8, 7, 0}}, {DType::U2, {3, 0, 1, 2, 3, 1, 2}}, {DType::F8E4M3FN, {0x7F, 0x38, 0xB8}}};
  for (size_t i = 0; i < cases.size(); ++i) {
    Tensor t = Tensor::empty(cases[i].first, {static_cast<int64_t>(cases[i].second.size())});
    std::memcpy(t.raw(), cases[i].second.data(), cases[i].second.size());
    g.add_initializer("narrow" + std::to_string(i), t);
  }
  const ms::testing::TempDir tmp("onnx_import");
  const fs::path dir = tmp.path;
  const std::string out = (dir / "narrow.onnx").string();
  ASSERT_TRUE(save_model(g, out).is_ok());
  auto back = load_model(out, any_ops());
  ASSERT_TRUE(back.has_value()) << back.status().message();
  for (size_t i = 0; i < cases.size(); ++i) {
    const ir::Value* v = back->value("narrow" + std::to_string(i));
    ASSERT_TRUE(v && v->constant) << i;
    EXPECT_EQ(v->constant->dtype(), cases[i].first);
    const auto* codes = static_cast<const uint8_t*>(v->constant->raw());
    EXPECT_EQ(std::vector<uint8_t>(codes, codes + v->constant->numel()), cases[i].second) << i;
  }
  EXPECT_EQ(back->value("narrow0")->constant->at_int(1), -1);  // int4 code 15 is -1
}

TEST(OnnxImport, RoundTripKeepsDump) {
  const ms::testing::TempDir tmp("onnx_import");
  const fs::path dir = tmp.path;
  for (const char* name : {"tiny_mlp.onnx", "control_flow.onnx", "out_of_order.onnx", "external.onnx"}) {
    SCOPED_TRACE(name);
    ir::Graph a = load_ok(name);
    const std::string out = (dir / name).string();
    ASSERT_TRUE(save_model(a, out).is_ok());
    auto b = load_model(out, any_ops());
    ASSERT_TRUE(b.has_value()) << b.status().message();
    EXPECT_EQ(ir::dump_text(a), ir::dump_text(*b));
    EXPECT_EQ(a.fingerprint(), b->fingerprint());
    EXPECT_EQ(a.metadata, b->metadata);
    EXPECT_EQ(a.opsets, b->opsets);
  }
}

TEST(OnnxImport, RoundTripKeepsNodeIdsAndOrigins) {
  ir::Graph a = load_ok("control_flow.onnx");
  // As a pass would leave it: renumbered ids, a fused node with several origins.
  a.nodes()[0].id = ir::NodeId{40};
  a.nodes()[0].origins = {ir::NodeId{1}, ir::NodeId{7}};
  a.nodes()[1].attr_graph("body")->nodes()[0].id = ir::NodeId{55};
  const ms::testing::TempDir tmp("onnx_import");
  const fs::path dir = tmp.path;
  const std::string out = (dir / "ids.onnx").string();
  ASSERT_TRUE(save_model(a, out).is_ok());
  auto b = load_model(out, any_ops());
  ASSERT_TRUE(b.has_value()) << b.status().message();
  EXPECT_EQ(b->nodes()[0].id.value, 40u);
  EXPECT_EQ(b->nodes()[0].origins, (std::vector<ir::NodeId>{ir::NodeId{1}, ir::NodeId{7}}));
  EXPECT_EQ(b->nodes()[1].attr_graph("body")->nodes()[0].id.value, 55u);
  EXPECT_EQ(b->value("branch")->producer.value, 40u);
  EXPECT_EQ(ir::dump_text(a), ir::dump_text(*b));
  EXPECT_GT(b->ids()->next().value, 55u);  // new nodes never collide with restored ids
  EXPECT_EQ(b->metadata.count("modescope.node_ids"), 0u);
}

TEST(OnnxImport, LoadTensorPb) {
  auto a = load_tensor_pb(fixture("tensor_f32_raw.pb"));
  ASSERT_TRUE(a.has_value()) << a.status().message();
  EXPECT_EQ(a->shape(), (Shape{2, 3}));
  EXPECT_EQ(a->data<float>()[2], 3.25f);
  auto h = load_tensor_pb(fixture("tensor_f16_typed.pb"));
  ASSERT_TRUE(h.has_value()) << h.status().message();
  EXPECT_EQ(static_cast<float>(h->data<f16>()[2]), 65504.0f);
  auto bh = load_tensor_pb(fixture("tensor_bf16_typed.pb"));
  ASSERT_TRUE(bh.has_value()) << bh.status().message();
  EXPECT_EQ(bh->dtype(), DType::BF16);
  EXPECT_EQ(static_cast<float>(bh->data<bf16>()[1]), -3.0f);
  auto b = load_tensor_pb(fixture("tensor_bool_typed.pb"));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->dtype(), DType::Bool);
  EXPECT_TRUE(b->data<bool>()[3]);
  EXPECT_FALSE(b->data<bool>()[1]);
  auto i = load_tensor_pb(fixture("tensor_i64_typed.pb"));
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(i->data<int64_t>()[0], -(int64_t{1} << 40));
  auto d = load_tensor_pb(fixture("tensor_f64_scalar.pb"));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rank(), 0);
  EXPECT_EQ(d->data<double>()[0], 2.5);
  auto s = load_tensor_pb(fixture("tensor_string.pb"));
  ASSERT_TRUE(s.has_value()) << s.status().message();
  EXPECT_EQ(s->dtype(), DType::String);
  EXPECT_EQ(string_at(*s, 0), "x");
  EXPECT_FALSE(load_tensor_pb(fixture("no_such.pb")).has_value());
}

TEST(OnnxImport, ConformanceTensorsLoadWhenPresent) {
  const fs::path root = ms::testing::node_tests_dir();
  std::error_code ec;
  if (root.empty() || !fs::is_directory(root, ec)) GTEST_SKIP() << ms::testing::no_node_tests_reason();
  int loaded = 0, seen = 0;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const fs::path pb = entry.path() / "test_data_set_0" / "input_0.pb";
    if (!fs::exists(pb, ec)) continue;
    auto t = load_tensor_pb(pb.string());
    if (t.has_value()) {
      ++loaded;
    } else {
      EXPECT_NE(t.status().code(), ErrorCode::Internal) << t.status().message();
    }
    auto g = load_model((entry.path() / "model.onnx").string(), any_ops());
    if (!g.has_value()) {
      EXPECT_NE(g.status().code(), ErrorCode::Internal) << g.status().message();
    }
    if (++seen > 400) break;
  }
  EXPECT_GT(loaded, 0);
}

// Every prefix and a few thousand bit flips of a valid file: errors, never crashes.
// A file is parsed as it is read: a cut, empty, missing or folder path still gives one line that
// names it, and a whole copy loads as the fixture does.
TEST(OnnxImport, FilesAreReadAsTheyAreParsedWithEveryErrorNamingThePath) {
  const std::string bytes = read_all(fixture("control_flow.onnx"));
  ASSERT_GT(bytes.size(), 100u);
  testing::TempDir dir("onnx_stream");
  auto write = [&](const std::string& name, std::string_view b) {
    std::ofstream(dir.file(name), std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
    return dir.file(name);
  };
  const std::string whole = write("whole.onnx", bytes);
  auto g = load_model(whole, any_ops());
  ASSERT_TRUE(g.has_value()) << g.status().message();
  EXPECT_EQ(g->nodes().size(), load_ok("control_flow.onnx").nodes().size());

  const std::string empty = write("empty.onnx", "");
  auto e = load_model(empty, any_ops());
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.status().message(), empty + ": empty file, not an ONNX model");

  const std::string cut = write("cut.onnx", std::string_view(bytes).substr(0, bytes.size() / 2));
  auto c = load_model(cut, any_ops());
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.status().message().rfind(cut + ": ", 0), 0u) << c.status().message();
  EXPECT_EQ(c.status().message().find('\n'), std::string::npos);

  auto missing = load_model(dir.file("missing.onnx"), any_ops());
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.status().message().find("missing.onnx: cannot open file"), std::string::npos);
  auto folder = load_model(dir.path.string(), any_ops());
  ASSERT_FALSE(folder.has_value());
  EXPECT_NE(folder.status().message().find("is a folder"), std::string::npos);
}

// Building the graph gives up each initializer's raw bytes once its tensor is made, so a large
// model's weights are not held twice; the tensors keep the values.
TEST(OnnxImport, InitializersGiveUpTheirRawBytesAsTheyBecomeTensors) {
  const std::string bytes = read_all(fixture("tiny_mlp.onnx"));
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  ASSERT_TRUE(m.graph().initializer(0).has_raw_data());
  detail::ImportContext ctx;
  ctx.origin = "tiny_mlp.onnx";
  for (const auto& op : m.opset_import()) ctx.opsets[op.domain()] = op.version();
  auto g = detail::graph_from_proto(m.graph(), std::make_shared<ir::IdSource>(), ctx, true, m.mutable_graph());
  ASSERT_TRUE(g.has_value()) << g.status().message();
  for (const auto& init : m.graph().initializer()) EXPECT_FALSE(init.has_raw_data()) << init.name();
  const ir::Graph want = load_ok("tiny_mlp.onnx");
  for (const std::string& name : want.initializer_names()) {
    const Tensor& a = *g->value(name)->constant;
    const Tensor& b = *want.value(name)->constant;
    ASSERT_EQ(a.nbytes(), b.nbytes()) << name;
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << name;
  }
}

TEST(OnnxImport, CorruptedBytesNeverCrash) {
  const std::string bytes = read_all(fixture("control_flow.onnx"));
  ASSERT_FALSE(bytes.empty());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto g = load_model_from_bytes(std::string_view(bytes).substr(0, n), "", "cut.onnx", any_ops());
    if (!g.has_value()) {
      EXPECT_NE(g.status().message().find("cut.onnx"), std::string::npos);
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string b = bytes;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] ^= static_cast<char>(1u << (rng() % 8));
    auto g = load_model_from_bytes(b, "", "flip.onnx", any_ops());
    if (g.has_value()) {
      EXPECT_TRUE(ir::verify(*g).is_ok());
    }
  }
}

}  // namespace
}  // namespace ms::onnx_io
