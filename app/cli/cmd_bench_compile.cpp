// `bench-compile`: Graph-mode compile time against graph size, on a chain of MatMul + Add + Relu
// layers (16x16 weights, batch 1), the shape of the graphs whose compile time grew as n^2.4.
//   bench-compile [--nodes 1000,4000,16000,32000] [--runs 3] [--jit-level O2] [--no-snapshots] [--report F]
// For each size: the median compile time of --runs compiles (snapshots kept, as the app does), the
// time of the pipeline's passes, the slowest pass, and the work counters (compiler/work.h) of the
// whole compile, memory plan included; then the work per node, which stays flat when compile time
// is linear in the graph.
#include <algorithm>
#include <cstdio>
#include <fstream>

#include "app/cli/compile_options.h"
#include "app/cli/registry.h"
#include "app/session/figures.h"
#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/work.h"
#include "engine/core/atomic_file.h"
#include "engine/runtime/backend.h"

namespace ms::cli {
namespace {

// x[1,16] -> (MatMul W_i[16,16], Add b_i[16], Relu) repeated until `nodes` nodes.
ir::Graph dense_relu_chain(int nodes) {
  ir::Graph g;
  g.name = "dense_relu_chain";
  g.opsets[""] = 17;
  const ir::ValueType t{DType::F32, std::vector<int64_t>{1, 16}, {"", ""}};
  g.add_value(ir::Value{"x", t, {}, std::nullopt});
  g.inputs = {"x"};
  std::string cur = "x";
  for (int i = 0; i < nodes; ++i) {
    const int layer = i / 3;
    const std::string scope = "layer" + std::to_string(layer) + ".";
    ir::Node n;
    n.id = g.ids()->next();
    n.origins = {n.id};
    if (i % 3 == 0) {
      const std::string w = scope + "weight";
      g.add_initializer(
          w, Tensor::from_vector<float>(std::vector<float>(256, 0.01f * static_cast<float>(layer % 7)), {16, 16}));
      n.op_type = "MatMul";
      n.inputs = {cur, w};
    } else if (i % 3 == 1) {
      const std::string b = scope + "bias";
      g.add_initializer(b, Tensor::from_vector<float>(std::vector<float>(16, 0.1f), {16}));
      n.op_type = "Add";
      n.inputs = {cur, b};
    } else {
      n.op_type = "Relu";
      n.inputs = {cur};
    }
    n.name = scope + n.op_type;
    n.outputs = {n.name + ":0"};
    cur = n.outputs[0];
    g.add_node(std::move(n));
  }
  g.outputs = {cur};
  return g;
}

struct BenchCompileState {
  std::vector<int> nodes{1000, 4000, 16000, 32000};
  int runs = 3;
  std::string jit_level = "O2";
  bool no_snapshots = false;
  int threads = 0;
  std::string report;
};

int bench_compile_command(const BenchCompileState& st) {
  auto opts = compile_options(st.jit_level, {});
  if (!opts) return fail(opts.status().message());
  opts->keep_snapshots = !st.no_snapshots;
  auto backend = backends::create_cpu_backend(st.threads);
  std::printf("compile time of a MatMul+Add+Relu chain (16x16 weights), jit level %s, snapshots %s, median of %d\n",
              st.jit_level.c_str(), st.no_snapshots ? "off" : "on", st.runs);
  std::printf("  %7s %11s %11s  %-24s %13s %10s\n", "nodes", "compile ms", "passes ms", "slowest pass (ms)", "work",
              "work/node");
  std::string json = "{\"jit_level\": \"" + st.jit_level +
                     "\", \"snapshots\": " + (st.no_snapshots ? "false" : "true") +
                     ", \"runs\": " + std::to_string(st.runs) + ", \"cases\": [";
  for (size_t c = 0; c < st.nodes.size(); ++c) {
    const int n = st.nodes[c];
    const ir::Graph g = dense_relu_chain(n);
    const std::map<std::string, ir::ValueType> sig{{"x", ir::ValueType{DType::F32, std::vector<int64_t>{1, 16}, {}}}};
    std::vector<double> compile_ms, passes_ms;
    compiler::WorkCounters work;
    std::string slowest;
    double slowest_ms = 0;
    uint64_t arena = 0, lower_bound = 0;
    for (int r = 0; r < std::max(1, st.runs); ++r) {
      compiler::WorkCounters w;
      Expected<std::unique_ptr<compiler::CompiledExecutor>> ex = [&] {
        compiler::WorkScope scope(w);
        return compiler::compile_executor(g, *backend, sig, *opts);
      }();
      if (!ex) return fail("generated chain of " + std::to_string(n) + " nodes: " + ex.status().message());
      compile_ms.push_back((*ex)->compile_ms());
      const auto& res = (*ex)->compile_result();
      passes_ms.push_back(res.passes_ms);
      work = w;
      arena = (*ex)->memory_plan().arena_bytes;
      lower_bound = (*ex)->memory_plan().lower_bound;
      slowest_ms = 0;  // the last run's slowest pass
      for (const auto& p : res.reports)
        if (p.ms >= slowest_ms) {
          slowest_ms = p.ms;
          slowest = p.pass;
        }
    }
    const double med = session::summarize(compile_ms).median, pmed = session::summarize(passes_ms).median;
    char cell[64];
    std::snprintf(cell, sizeof cell, "%s (%.1f)", slowest.c_str(), slowest_ms);
    std::printf("  %7d %11.1f %11.1f  %-24s %13llu %10.1f\n", n, med, pmed, cell,
                static_cast<unsigned long long>(work.total()), static_cast<double>(work.total()) / n);
    if (arena != lower_bound)
      std::printf("          memory plan above its lower bound: %llu against %llu bytes\n",
                  static_cast<unsigned long long>(arena), static_cast<unsigned long long>(lower_bound));
    json += std::string(c ? "," : "") + "\n  {\"nodes\": " + std::to_string(n) +
            ", \"compile_ms\": " + std::to_string(med) + ", \"passes_ms\": " + std::to_string(pmed) +
            ", \"arena_bytes\": " + std::to_string(arena) + ", \"lower_bound_bytes\": " + std::to_string(lower_bound) +
            ", \"work\": " + work.to_json() + "}";
  }
  json += "\n]}\n";
  if (!st.report.empty()) {
    if (Status ws = write_file_atomic(st.report, json); !ws) return fail(ws.message());
  }
  return 0;
}

const RegisterCommand kBenchCompile{
    "bench-compile", "Graph-mode compile time against graph size (a generated MatMul+Add+Relu chain)", 92,
    [](CLI::App& cmd) -> CommandRunner {
      auto st = std::make_shared<BenchCompileState>();
      cmd.add_option("--nodes", st->nodes, "Graph sizes in nodes (default 1000,4000,16000,32000)")
          ->delimiter(',')
          ->check(CLI::PositiveNumber);
      cmd.add_option("--runs", st->runs, "Compiles per size (the median is reported)")->check(CLI::PositiveNumber);
      cmd.add_option("--jit-level", st->jit_level, "Pipeline: O0, O1 or O2")->check(CLI::IsMember({"O0", "O1", "O2"}));
      cmd.add_flag("--no-snapshots", st->no_snapshots, "Compile without a snapshot after each pass");
      cmd.add_option("--threads", st->threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
      cmd.add_option("--report", st->report, "Write the figures as JSON");
      return [st] { return bench_compile_command(*st); };
    }};

}  // namespace
}  // namespace ms::cli
