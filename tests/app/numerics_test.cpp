// Numerics (app/session/numerics.h, runtime/value_capture.h, runtime/mode_diff.h): intermediate
// values captured in both modes (Graph mode's blocked conv outputs reordered), the node-by-node diff
// of the modes through origins, the NaN/inf trap, and pass bisection finding a planted perturbation
// at its rewrite; plus the CLI's inspect, diff and bisect.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/session/model_inputs.h"
#include "app/session/numerics.h"
#include "app/session/run_loop.h"
#include "engine/backends/select.h"
#include "engine/compiler/pass.h"
#include "engine/compiler/pass_manager.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "tests/app/cli_test_util.h"
#include "tests/profiler/test_util.h"
#include "tests/temp_dir.h"

namespace ms::session {
namespace {

using prof::test::make_node;

runtime::Backend& backend() {
  static std::unique_ptr<runtime::Backend> be = backends::create_cpu_backend(2);
  return *be;
}

struct Model {
  ir::Graph graph;
  runtime::TensorMap inputs;
};

Model zoo(const std::string& spec) {
  auto g = load_model_arg(spec);
  EXPECT_TRUE(g) << g.status().message();
  auto in = make_inputs(*g, {}, {}, 7);
  EXPECT_TRUE(in) << in.status().message();
  return {std::move(*g), std::move(*in)};
}

// x[2,4] - 5 -> Log (NaN everywhere: x is in [0, 1)) -> * 2 -> y
ir::Graph log_of_negative() {
  ir::Graph g;
  g.inputs.push_back("x");
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{2, 4}, {}}, {}, std::nullopt});
  g.add_initializer("five", Tensor::scalar<float>(5.0f));
  g.add_initializer("two", Tensor::scalar<float>(2.0f));
  g.add_node(make_node("Sub", {"x", "five"}, {"shifted"}, "shift"));
  g.add_node(make_node("Log", {"shifted"}, {"logged"}, "planted_log"));
  g.add_node(make_node("Mul", {"logged", "two"}, {"y"}, "scale"));
  g.outputs = {"y"};
  return g;
}

runtime::TensorMap unit_inputs() {
  return {{"x", Tensor::from_vector<float>({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f}, {2, 4})}};
}

TEST(Numerics, CapturesEveryValueInBothModesAndTheLastIsTheOutput) {
  Model m = zoo("zoo:resnet18?size=32&classes=10");
  for (auto mode : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    SCOPED_TRACE(runtime::exec_mode_name(mode));
    CaptureRequest req;
    req.mode = mode;
    req.compile.jit_level = compiler::JitLevel::O2;
    auto r = capture_values(m.graph, m.inputs, backend(), req);
    ASSERT_TRUE(r) << r.status().message();
    ASSERT_FALSE(r->values.empty());
    size_t produced = 0;
    for (const auto& n : r->graph->nodes())
      for (const auto& o : n.outputs) produced += o.empty() ? 0 : 1;
    EXPECT_EQ(r->values.size(), produced);
    const runtime::CapturedValue* out = nullptr;
    for (const auto& v : r->values)
      if (v.name == r->output_names[0]) out = &v;
    ASSERT_NE(out, nullptr);
    ASSERT_TRUE(out->value.defined());
    EXPECT_EQ(runtime::diff_tensors(out->value, r->outputs[0]).max_abs, 0.0);
    EXPECT_EQ(r->kept_bytes > 0, true);
    if (mode == runtime::ExecMode::Graph) {
      const bool any_reordered =
          std::any_of(r->values.begin(), r->values.end(), [](const auto& v) { return v.reordered; });
      EXPECT_TRUE(any_reordered) << "O2 leaves conv outputs in the blocked layout between convs";
    }
  }
}

TEST(Numerics, StatisticsCountNonFiniteAndSpanTheFiniteValues) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor t = Tensor::from_vector<float>({1.0f, 3.0f, std::nanf(""), inf, -inf, 2.0f}, {6});
  const runtime::ValueStats s = runtime::value_stats(t, 4);
  EXPECT_EQ(s.count, 6);
  EXPECT_EQ(s.finite, 3);
  EXPECT_EQ(s.nan, 1);
  EXPECT_EQ(s.posinf, 1);
  EXPECT_EQ(s.neginf, 1);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 3.0);
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_NEAR(s.std, std::sqrt(2.0 / 3.0), 1e-12);
  ASSERT_EQ(s.histogram.size(), 4u);
  EXPECT_EQ(s.histogram[0] + s.histogram[1] + s.histogram[2] + s.histogram[3], 3);
  EXPECT_EQ(s.histogram[3], 1);  // the maximum falls in the last bin
}

TEST(Numerics, BudgetAndSelectionLimitWhatIsKept) {
  Model m = zoo("zoo:lenet5");
  CaptureRequest req;
  req.capture.budget_bytes = 8 * 1024;
  auto r = capture_values(m.graph, m.inputs, backend(), req);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_LE(r->kept_bytes, 8u * 1024);
  EXPECT_GT(r->over_budget, 0u);
  for (const auto& v : r->values) EXPECT_GT(v.stats.count, 0) << v.name << ": statistics even past the budget";

  CaptureRequest pick;
  pick.capture.all = false;
  pick.capture.pattern = "^relu";
  pick.capture.names = {r->values.front().name};
  auto p = capture_values(m.graph, m.inputs, backend(), pick);
  ASSERT_TRUE(p) << p.status().message();
  ASSERT_FALSE(p->values.empty());
  EXPECT_LT(p->values.size(), r->values.size());
  for (const auto& v : p->values) {
    EXPECT_TRUE(v.name == r->values.front().name || v.name.rfind("relu", 0) == 0 || v.node.find("relu") == 0)
        << v.name << " of " << v.node;
  }

  CaptureRequest bad;
  bad.capture.pattern = "([";
  auto b = capture_values(m.graph, m.inputs, backend(), bad);
  ASSERT_FALSE(b);
  EXPECT_NE(b.status().message().find("(["), std::string::npos) << b.status().message();
}

TEST(Numerics, ModeDiffAlignsFusedNodesWithTheirLastOriginAndFindsNoDivergence) {
  Model m = zoo("zoo:resnet18?size=32&classes=10");
  DiffRequest req;
  req.compile.jit_level = compiler::JitLevel::O2;
  req.tol = 1e-3;
  auto r = diff_modes(m.graph, m.inputs, backend(), req);
  ASSERT_TRUE(r) << r.status().message();
  const runtime::ModeDiff& d = r->diff;
  EXPECT_EQ(d.first_divergence, -1) << d.summary();
  EXPECT_GT(d.compared, 0u);
  size_t by_origin = 0, reordered_compared = 0;
  for (const auto& v : d.values) {
    if (v.match == "last origin" && v.compared) ++by_origin;
    EXPECT_TRUE(v.compared || !v.note.empty()) << v.value;
  }
  for (const auto& v : r->graph.values) {
    if (!v.reordered) continue;
    for (const auto& dv : d.values)
      if (dv.value == v.name && dv.compared) ++reordered_compared;
  }
  EXPECT_GT(by_origin, 0u) << "fused convs stand for their last origin";
  EXPECT_GT(reordered_compared, 0u) << "blocked values compared after the reorder";
  // Every Graph value with a counterpart in the original graph was compared.
  for (const auto& v : d.values) {
    if (!v.match.empty()) {
      EXPECT_TRUE(v.compared) << v.value << ": " << v.note;
    }
  }
}

TEST(Numerics, ModeDiffFindsAPerturbedValue) {
  // Diff against a PyNative capture in which one value was changed: the first divergence is that
  // value, and nothing before it diverges.
  Model m = zoo("zoo:lenet5");
  CaptureRequest req;
  auto py = capture_values(m.graph, m.inputs, backend(), req);
  req.mode = runtime::ExecMode::Graph;
  auto gr = capture_values(m.graph, m.inputs, backend(), req);
  ASSERT_TRUE(py && gr);
  auto values = py->values;
  const size_t k = values.size() / 2;
  Tensor changed = values[k].value.clone();
  changed.data<float>()[0] += 1.0f + std::fabs(changed.data<float>()[0]);
  values[k].value = changed;
  const runtime::ModeDiff d = runtime::diff_modes(m.graph, values, *gr->graph, gr->values, 1e-4);
  ASSERT_GE(d.first_divergence, 0) << d.summary();
  EXPECT_EQ(d.values[static_cast<size_t>(d.first_divergence)].ref_value, values[k].name) << d.summary();
}

TEST(Numerics, NaNTrapNamesTheProducingNodeInBothModes) {
  ir::Graph g = log_of_negative();
  uint64_t log_id = 0;
  for (const auto& n : g.nodes())
    if (n.op_type == "Log") log_id = n.id.value;
  for (auto mode : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    SCOPED_TRACE(runtime::exec_mode_name(mode));
    CaptureRequest req;
    req.mode = mode;
    req.capture.all = false;
    req.capture.trap_nonfinite = true;
    auto r = capture_values(g, unit_inputs(), backend(), req);
    ASSERT_TRUE(r) << r.status().message();
    ASSERT_TRUE(r->trap.has_value());
    const auto& t = *r->trap;
    EXPECT_EQ(t.stats.nan, 8);
    bool from_log = false;
    for (const auto& o : t.origins) from_log = from_log || o.value == log_id;
    EXPECT_TRUE(from_log) << t.message();
    if (mode == runtime::ExecMode::PyNative) {
      EXPECT_EQ(t.op, "Log");
      EXPECT_EQ(t.value, "logged");
      ASSERT_EQ(t.inputs.size(), 1u);
      EXPECT_EQ(t.inputs[0].first, "shifted");
      EXPECT_DOUBLE_EQ(t.inputs[0].second.max, 0.8f - 5.0f);
    }
    EXPECT_NE(t.message().find("NaN"), std::string::npos);
    EXPECT_NE(r->error.find(t.node), std::string::npos) << r->error;
  }
  // A clean model does not trap.
  Model m = zoo("zoo:lenet5");
  CaptureRequest clean;
  clean.capture.trap_nonfinite = true;
  auto c = capture_values(m.graph, m.inputs, backend(), clean);
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_FALSE(c->trap.has_value());
}

// Planted for bisection: each fused conv is one rewrite (a harmless mark), and the k-th one's output
// is scaled by 1 + 1e-2.
class PerturbOneFusedConv final : public compiler::Pass {
 public:
  explicit PerturbOneFusedConv(int k) : k_(k) {}
  std::string name() const override { return "PerturbOneFusedConv"; }
  std::string argument() const override { return "planted-perturb"; }
  std::string description() const override { return "test only: scales one fused conv's output by 1.01"; }
  Status run(ir::Graph& g) override {
    int seen = 0;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      if (g.nodes()[i].op_type != "FusedConv") continue;
      if (!compiler::take_rewrite()) return Status::ok();
      ir::Node& n = g.nodes()[i];
      n.attrs["planted"] = ir::Attribute(int64_t{1});
      if (++seen != k_) continue;
      const std::string out = n.outputs[0];
      const std::string scaled = compiler::fresh_name(g, out + "_planted");
      const std::string factor = compiler::fresh_name(g, "planted_factor");
      g.add_initializer(factor, Tensor::scalar<float>(1.01f));
      compiler::replace_uses(g, out, scaled);
      ir::Node mul = compiler::new_node(g, "Mul", "", {out, factor}, {scaled}, {&g.nodes()[i]});
      mul.name = "planted_mul";
      if (const ir::Value* v = g.value(out)) g.add_value(ir::Value{scaled, v->type, {}, std::nullopt});
      compiler::insert_node(g, i + 1, std::move(mul));
      ++i;
    }
    return Status::ok();
  }

 private:
  int k_;
};

TEST(Numerics, BisectionNamesThePlantedPassAndRewriteWithinTheRunBound) {
  Model m = zoo("zoo:resnet18?size=32&classes=10");
  BisectRequest req;
  req.compile.jit_level = compiler::JitLevel::O1;
  req.compile.customize_pipeline = [](compiler::PassManager& pm) {
    size_t at = pm.passes().size();
    for (size_t i = 0; i < pm.passes().size(); ++i)
      if (pm.passes()[i]->argument() == "fuse-ops") at = i + 1;
    pm.insert(at, std::make_unique<PerturbOneFusedConv>(5));
  };
  auto r = bisect_passes(m.graph, m.inputs, backend(), req);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_FALSE(r->clean) << r->summary();
  EXPECT_EQ(r->pass, "planted-perturb") << r->summary();
  EXPECT_EQ(r->rewrite, 5) << r->summary();
  EXPECT_GE(r->pass_rewrites, 5);
  const auto lg = [](double x) { return static_cast<size_t>(std::ceil(std::log2(std::max(2.0, x)))); };
  EXPECT_LE(r->probes.size(),
            lg(static_cast<double>(r->pass_names.size())) + lg(static_cast<double>(r->pass_rewrites)) + 2)
      << r->summary();
  ASSERT_TRUE(r->after);
  bool mul = false;
  for (const auto& id : r->nodes)
    if (const ir::Node* n = r->after->find_node(id)) mul = mul || n->name == "planted_mul";
  EXPECT_TRUE(mul) << "the guilty rewrite's nodes include the planted Mul";
}

TEST(Numerics, BisectionOnACleanModelSaysNoPassLeavesTheTolerance) {
  Model m = zoo("zoo:lenet5");
  BisectRequest req;
  req.compile.jit_level = compiler::JitLevel::O2;
  req.tol = 1e-4;
  auto r = bisect_passes(m.graph, m.inputs, backend(), req);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_TRUE(r->clean) << r->summary();
  EXPECT_EQ(r->probes.size(), 1u);
  EXPECT_NE(r->summary().find("no pass leaves the tolerance"), std::string::npos);
}

// Every prefix of every pass's rewrites compiles to a graph that computes what PyNative does: the
// passes ask before each rewrite and a refusal leaves a valid graph.
TEST(Numerics, EveryRewritePrefixOfEveryPassStaysCorrect) {
  Model m = zoo("zoo:resnet18?size=32&classes=10");
  RunRequest ref_req;
  ref_req.iters = 1;
  ref_req.warmup = 0;
  auto ref = run_model(m.graph, m.inputs, backend(), ref_req);
  ASSERT_TRUE(ref) << ref.status().message();
  RunRequest full = ref_req;
  full.mode = runtime::ExecMode::Graph;
  full.compile.jit_level = compiler::JitLevel::O2;
  auto all = run_model(m.graph, m.inputs, backend(), full);
  ASSERT_TRUE(all) << all.status().message();
  const auto& reports = all->compiled->compiled().passes.reports;
  int64_t counted = 0;
  for (size_t k = 0; k < reports.size(); ++k) {
    const int64_t rw = static_cast<int64_t>(reports[k].work.rewrites);
    counted += rw;
    for (int64_t budget : {int64_t{0}, int64_t{1}, rw / 2, rw - 1}) {
      if (budget < 0 || budget > rw || (budget > 0 && budget == rw)) continue;
      SCOPED_TRACE(reports[k].pass + " after " + std::to_string(budget) + " of " + std::to_string(rw));
      RunRequest cut = full;
      cut.compile.stop_after = static_cast<int>(k) + 1;
      cut.compile.rewrite_budget = budget;
      cut.compile.verify_passes = true;
      auto r = run_model(m.graph, m.inputs, backend(), cut);
      ASSERT_TRUE(r) << r.status().message();
      EXPECT_LE(r->compiled->compiled().passes.reports[k].work.rewrites, static_cast<uint64_t>(budget));
      EXPECT_LT(runtime::diff_tensors(r->outputs[0], ref->outputs[0]).max_rel, 1e-4);
    }
  }
  EXPECT_GT(counted, 20) << "the O2 passes count their rewrites on resnet18";
}

TEST(NumericsCli, InspectTrapsDiffAndBisect) {
  const std::string cli = testing::cli_path();
  ASSERT_FALSE(cli.empty());
  const testing::TempDir tmp("numerics_cli");
  const std::filesystem::path dir = tmp.path;
  const std::string model = (dir / "log.onnx").string();
  ASSERT_TRUE(onnx_io::save_model(log_of_negative(), model).is_ok());
  int rc = 0;
  std::string out = testing::run_capture(cli + " inspect " + model + " --mode graph --trap-nonfinite", &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 3) << out;
  EXPECT_NE(out.find("non-finite value"), std::string::npos) << out;
  EXPECT_NE(out.find("NaN"), std::string::npos) << out;

  const std::string json = (dir / "values.json").string();
  out = testing::run_capture(cli + " inspect zoo:lenet5 --save-npy " + (dir / "npy").string() + " --json " + json, &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 0) << out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_GT(j["values"].size(), 5u);
  size_t npy = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "npy")) npy += e.path().extension() == ".npy";
  EXPECT_EQ(npy, j["values"].size());

  out = testing::run_capture(cli + " diff zoo:lenet5 --tol 1e-4", &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 0) << out;
  EXPECT_NE(out.find("none above"), std::string::npos) << out;
  out = testing::run_capture(cli + " bisect zoo:lenet5 --tol 1e-4", &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 0) << out;
  EXPECT_NE(out.find("no pass leaves the tolerance"), std::string::npos) << out;
  out = testing::run_capture(cli + " inspect zoo:lenet5 --value no_such_value", &rc);
  EXPECT_EQ(WEXITSTATUS(rc), 1) << out;
  EXPECT_NE(out.find("no_such_value"), std::string::npos) << out;
}

}  // namespace
}  // namespace ms::session
