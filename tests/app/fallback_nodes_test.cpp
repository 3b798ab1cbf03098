// Fallbacks name their nodes: the run loop lists the ids of the nodes that ran on the CPU fallback
// (the input graph's in PyNative, the compiled graph's in Graph mode) and those ids are the ones the
// run's trace gives its events; the JSON reports carry them as "nodes" and read reports without them;
// sessions keep them, and a session written before they were stored opens with counted fallbacks.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/cli/fallbacks.h"
#include "app/session/run_loop.h"
#include "app/session/session_file.h"
#include "engine/backends/select.h"
#include "tests/app/forwarding_backend.h"
#include "tests/app/session_test_util.h"
#include "tests/profiler/test_util.h"

namespace ms::session {
namespace {

// x[2,8] -> Sigmoid "early" -> Add(x) -> Sigmoid "late" -> y: two nodes of one op type.
ir::Graph two_sigmoids() {
  using prof::test::make_node;
  ir::Graph g;
  g.inputs.push_back("x");
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{2, 8}, {"", ""}}, {}, std::nullopt});
  g.add_node(make_node("Sigmoid", {"x"}, {"t0"}, "early"));
  g.add_node(make_node("Add", {"t0", "x"}, {"t1"}, "residual"));
  g.add_node(make_node("Sigmoid", {"t1"}, {"y"}, "late"));
  g.outputs = {"y"};
  return g;
}

runtime::KernelFn cpu_sigmoid = nullptr;

// The CPU's Sigmoid, as the backend below hands it to the node it has no kernel for.
Status host_sigmoid(runtime::KernelContext& ctx) { return cpu_sigmoid(ctx); }

// The CPU backend, except that the Sigmoid named "late" runs through a "CPU fallback" kernel (as a
// device backend whose kernel covers one node's case and not the other's).
class LateSigmoidOnHost final : public testing::ForwardingBackend {
 public:
  LateSigmoidOnHost() {
    ir::Node s;
    s.op_type = "Sigmoid";
    cpu_sigmoid = cpu().find_kernel(s);
  }
  std::string name() const override { return "fake"; }
  runtime::KernelFn find_kernel(const ir::Node& node) const override {
    return node.op_type == "Sigmoid" && node.name == "late" ? &host_sigmoid : cpu().find_kernel(node);
  }
  bool is_fallback(runtime::KernelFn fn) const override { return fn == &host_sigmoid; }
};

uint64_t id_of(const ir::Graph& g, const std::string& name) {
  const ir::Node* n = g.find_node_by_name(name);
  return n ? n->id.value : 0;
}

TEST(FallbackNodes, RunLoopNamesTheNodesThatFellBackAndTheTraceHasTheirEvents) {
  const ir::Graph g = two_sigmoids();
  for (runtime::ExecMode mode : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    SCOPED_TRACE(runtime::exec_mode_name(mode));
    LateSigmoidOnHost backend;
    RunRequest req;
    req.mode = mode;
    req.iters = 2;
    req.warmup = 1;
    req.profile = true;
    req.compile.jit_level = compiler::JitLevel::O0;  // both Sigmoids stay nodes of their own
    const runtime::TensorMap inputs = {{"x", Tensor::from_vector<float>(std::vector<float>(16, 0.5f), {2, 8})}};
    auto r = run_model(g, inputs, backend, req);
    ASSERT_TRUE(r) << r.status().message();
    // The graph that ran: the input graph, or the compiled one.
    const ir::Graph& ran = r->compiled ? r->compiled->graph() : g;
    const uint64_t late = id_of(ran, "late"), early = id_of(ran, "early");
    ASSERT_NE(late, 0u);
    ASSERT_NE(early, 0u);
    ASSERT_EQ(r->fallbacks.size(), 1u);
    const runtime::Fallback& f = r->fallbacks[0];
    EXPECT_EQ(f.op, "Sigmoid");
    EXPECT_EQ(f.reason, "no fake kernel: runs on the CPU");
    EXPECT_EQ(f.nodes, std::vector<uint64_t>{late});  // not the other Sigmoid
    EXPECT_EQ(f.count, 1);
    // The trace's events of that node carry the same id (what the timeline marks).
    ASSERT_TRUE(r->trace);
    int of_late = 0, of_early = 0;
    for (const prof::Event& e : r->trace->events) {
      const prof::NodeInfo* n = r->trace->node_of(e);
      if (!n || e.kind != prof::EventKind::Op) continue;
      of_late += n->id == late;
      of_early += n->id == early;
    }
    EXPECT_EQ(of_late, 2);  // one per timed iteration
    EXPECT_EQ(of_early, 2);
  }
}

TEST(FallbackNodes, JsonCarriesTheNodesAndReadsReportsWithoutThem) {
  const std::vector<runtime::Fallback> list = {{"Where", 2, "no cuda kernel: runs on the CPU", {12, 40}},
                                               {"*", 1, "no CUDA device"}};
  const nlohmann::json j = cli::fallbacks_json(list);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["nodes"], nlohmann::json::parse("[12, 40]")) << j.dump();
  EXPECT_TRUE(j[1]["nodes"].is_array() && j[1]["nodes"].empty()) << j.dump();
  const auto back = cli::fallbacks_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].op, list[i].op);
    EXPECT_EQ(back[i].count, list[i].count);
    EXPECT_EQ(back[i].reason, list[i].reason);
    EXPECT_EQ(back[i].nodes, list[i].nodes);
  }
  // A report written before fallbacks named nodes: counted entries.
  const auto old = cli::fallbacks_from_json(
      nlohmann::json::parse(R"([{"op": "Where", "count": 2, "reason": "no cuda kernel: runs on the CPU"}])"));
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].op, "Where");
  EXPECT_EQ(old[0].count, 2);
  EXPECT_TRUE(old[0].nodes.empty());
  // Ids out of order or twice come back sorted and once; what is not a list gives nothing.
  const auto messy =
      cli::fallbacks_from_json(nlohmann::json::parse(R"([{"op": "A", "count": 2, "nodes": [9, 3, 9]}])"));
  ASSERT_EQ(messy.size(), 1u);
  EXPECT_EQ(messy[0].nodes, (std::vector<uint64_t>{3, 9}));
  EXPECT_TRUE(cli::fallbacks_from_json(nlohmann::json::parse(R"({"op": "A"})")).empty());
}

TEST(FallbackNodes, SessionKeepsTheNodesAndOpensAFileWrittenBeforeThem) {
  test::TempDir dir("fallback_nodes");
  const SessionData& data = test::small_session();
  const std::string path = dir.file("s.modescope");
  ASSERT_TRUE(save_session(path, data).is_ok());
  auto back = load_session(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  ASSERT_EQ(back->runs.size(), 2u);
  const auto& want = data.runs[1].outcome.fallbacks;
  const auto& got = back->runs[1].outcome.fallbacks;
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(want[0].nodes.empty());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i].nodes, want[i].nodes) << "fallback " << i;

  // What schema 3 wrote: no table of fallback nodes (nor schema 5's ranks).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* sql =
      "DROP TABLE run_fallback_nodes; DELETE FROM digests WHERE tbl = 'run_fallback_nodes';" MS_DROP_SCHEMA_6_SQL
      "DROP TABLE rank_lanes; DROP TABLE rank_steps; DROP TABLE rank_collectives;"
      "DELETE FROM digests WHERE tbl IN ('rank_lanes', 'rank_steps', 'rank_collectives');"
      "PRAGMA user_version = 3; PRAGMA journal_mode = DELETE; VACUUM;";
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  auto reader = SessionReader::open(path);
  ASSERT_TRUE(reader.has_value()) << reader.status().message();
  EXPECT_EQ(reader->schema_version(), 3);
  auto old = reader->load();
  ASSERT_TRUE(old.has_value()) << old.status().message();
  const auto& counted = old->runs[1].outcome.fallbacks;
  ASSERT_EQ(counted.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(counted[i].op, want[i].op);
    EXPECT_EQ(counted[i].count, want[i].count);
    EXPECT_TRUE(counted[i].nodes.empty());
  }
}

}  // namespace
}  // namespace ms::session
