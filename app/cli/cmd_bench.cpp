// `bench`: figures the project tracks.
//   bench dispatch         eager dispatch overhead: a chain of 1,000 tiny elementwise ops, us per op
//   bench peak             machine FP32 peak estimate: a large oneDNN matmul, GFLOP/s
//   bench MODEL            both modes' median latency, GFLOP/s vs the peak, speedup, compile time, peak
//                          memory per mode, memory plan (planned / naive / lower bound); --json FILE
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli/compile_options.h"
#include "app/cli/fallbacks.h"
#include "app/cli/prepare.h"
#include "app/session/figures.h"
#include "app/session/run_loop.h"
#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/infer.h"
#include "engine/core/atomic_file.h"
#include "engine/ops/schema.h"
#include "engine/runtime/backend.h"

namespace ms::cli {
namespace {

ir::Graph tiny_chain(int n_ops) {
  ir::Graph g;
  g.name = "chain";
  g.inputs = {"x"};
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{16}, {""}}, {}, std::nullopt});
  g.add_initializer("one", Tensor::from_vector<float>(std::vector<float>(16, 1e-3f), {16}));
  std::string prev = "x";
  for (int i = 0; i < n_ops; ++i) {
    ir::Node n;
    n.op_type = i % 2 ? "Relu" : "Add";
    n.name = "op" + std::to_string(i);
    n.inputs = i % 2 ? std::vector<std::string>{prev} : std::vector<std::string>{prev, "one"};
    n.outputs = {"v" + std::to_string(i)};
    prev = n.outputs[0];
    g.add_node(n);
  }
  g.outputs = {prev};
  return g;
}

// Median latency of `iters` runs after `warmup` through the run loop; negative with `err` set on failure.
double median_ms(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                 runtime::ExecMode mode, int iters, int warmup, Status* err = nullptr) {
  session::RunRequest req;
  req.mode = mode;
  req.iters = iters;
  req.warmup = warmup;
  auto r = session::run_model(g, inputs, backend, req);
  if (!r) {
    if (err) *err = r.status();
    return -1;
  }
  return r->latency.median;
}

int bench_dispatch(const RunArgs& a) {
  constexpr int kOps = 1000;
  auto backend = backends::create_cpu_backend(a.threads > 0 ? a.threads : 1);
  ir::Graph g = tiny_chain(kOps);
  runtime::TensorMap inputs{{"x", Tensor::from_vector<float>(std::vector<float>(16, 0.5f), {16})}};
  const int iters = std::max(5, a.iters);
  Status err;
  const double eager_ms = median_ms(g, inputs, *backend, runtime::ExecMode::PyNative, iters, 0, &err);
  if (eager_ms < 0) return fail("dispatch chain (pynative): " + err.message());
  const double graph_ms = median_ms(g, inputs, *backend, runtime::ExecMode::Graph, iters, 0, &err);
  if (graph_ms < 0) return fail("dispatch chain (graph): " + err.message());
  std::printf("dispatch: chain of %d tiny ops (Add/Relu on 16 floats), median of %d runs\n", kOps, iters);
  std::printf("  pynative  %.3f us/op\n  graph     %.3f us/op\n", eager_ms * 1000.0 / kOps, graph_ms * 1000.0 / kOps);
  return 0;
}

// The matmul peak the "% of peak" figures compare with: an n x n x n MatMul in `t` (f32, or bf16 for
// a bf16 run: the tensor cores on a GPU) whose operands stay where the backend keeps them: the
// left one expanded on the backend from a scalar input, the right one a constant, and one element
// of the product read back, so no large copy is in the time. n = 2048 on the CPU, 8192 on a device.
ir::Graph peak_matmul_graph(int64_t n, DType t) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"x"};
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{1}, {""}}, {}, std::nullopt});
  auto constant = [&](const std::string& name, Tensor v) {
    g.add_value(ir::Value{
        name, ir::ValueType{v.dtype(), v.shape(), std::vector<std::string>(v.shape().size())}, {}, std::move(v)});
  };
  constant("shape", Tensor::from_vector<int64_t>({n, n}, {2}));
  Tensor w32 = Tensor::empty(DType::F32, {n, n});
  std::fill(w32.data<float>(), w32.data<float>() + w32.numel(), 1e-3f);
  constant(t == DType::F32 ? "w" : "w32", std::move(w32));
  constant("zeros", Tensor::from_vector<int64_t>({0, 0}, {2}));
  constant("ones", Tensor::from_vector<int64_t>({1, 1}, {2}));
  auto node = [&](std::string op, std::vector<std::string> in, std::string out) {
    ir::Node nd;
    nd.op_type = std::move(op);
    nd.inputs = std::move(in);
    nd.outputs = {std::move(out)};
    return nd;
  };
  g.add_node(node("Expand", {"x", "shape"}, "a"));
  std::string lhs = "a";
  if (t != DType::F32) {
    ir::Node cast = node("Cast", {"a"}, "a_low");
    cast.attrs["to"] = ir::Attribute(static_cast<int64_t>(dtype_to_onnx(t)));
    g.add_node(cast);
    lhs = "a_low";
    ir::Node wcast = node("Cast", {"w32"}, "w");  // folded into a constant at compile time
    wcast.attrs["to"] = cast.attrs["to"];
    g.add_node(wcast);
  }
  g.add_node(node("MatMul", {lhs, "w"}, "c"));
  g.add_node(node("Slice", {"c", "zeros", "ones"}, "corner"));
  g.outputs = {"corner"};
  return g;
}

int64_t peak_matmul_size(const runtime::Backend& backend) { return backend.device().is_cpu() ? 2048 : 8192; }

double measure_peak_gflops(runtime::Backend& backend, int iters, DType t = DType::F32) {
  const int64_t n = peak_matmul_size(backend);
  const ir::Graph g = peak_matmul_graph(n, t);
  runtime::TensorMap in{{"x", Tensor::from_vector<float>({0.5f}, {1})}};
  const double ms = median_ms(g, in, backend, runtime::ExecMode::Graph, iters, 1);
  return ms <= 0 ? -1 : 2.0 * n * n * n / (ms * 1e6);
}

// Relative spread of a latency summary: (p90 - min) / median.
double spread(const session::LatencySummary& l) { return l.median > 0 ? (l.p90 - l.min) / l.median : 0; }

// Compares this run's medians with the case of the same model in an earlier `bench --json` file. A
// median is a regression when it is slower than the earlier one by more than the larger of the two
// runs' spreads (and at least 5%). Returns 3 when any is, 1 when the file cannot be read, else 0.
int compare_with_baseline(const RunArgs& a, const session::RunResult& pyn, const session::RunResult& gra,
                          double compile_ms) {
  std::ifstream f(a.baseline);
  if (!f) return fail(a.baseline + ": cannot read the baseline");
  nlohmann::json base = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (base.is_discarded() || !base.contains("cases") || !base["cases"].is_array())
    return fail(a.baseline + ": not a bench --json file (no \"cases\" array)");
  const nlohmann::json* c = nullptr;
  for (const auto& e : base["cases"])
    if (e.value("model", "") == a.model && (!c || e.value("jit_level", "") == a.jit_level)) c = &e;
  if (!c) return fail(a.baseline + ": no case for model '" + a.model + "'");
  struct Row {
    const char* name;
    double now, spread_now;
    const char *key, *min_key, *p90_key;
  };
  const Row rows[] = {
      {"pynative", pyn.latency.median, spread(pyn.latency), "pynative_ms", "pynative_min_ms", "pynative_p90_ms"},
      {"graph", gra.latency.median, spread(gra.latency), "graph_ms", "graph_min_ms", "graph_p90_ms"},
      {"compile", compile_ms, 0.0, "compile_ms", "", ""}};
  int regressions = 0;
  std::printf("  against %s (%s, jit level %s):\n", a.baseline.c_str(), c->value("device", "?").c_str(),
              c->value("jit_level", "?").c_str());
  for (const Row& r : rows) {
    const double was = c->value(r.key, 0.0);
    if (was <= 0) continue;
    double sp = std::max(0.05, r.spread_now);
    if (*r.min_key && c->contains(r.min_key) && c->contains(r.p90_key))
      sp = std::max(sp, (c->value(r.p90_key, 0.0) - c->value(r.min_key, 0.0)) / was);
    if (r.name == std::string("compile")) sp = std::max(sp, 0.25);  // one compile: no spread of its own
    const double change = r.now / was - 1.0;
    const bool slower = change > sp;
    regressions += slower;
    std::printf("    %-8s %9.3f ms -> %9.3f ms  %+6.1f%%  (spread %.1f%%)%s\n", r.name, was, r.now, 100.0 * change,
                100.0 * sp,
                slower         ? "  REGRESSION"
                : change < -sp ? "  faster"
                               : "");
  }
  if (regressions) std::printf("  %d regression(s) beyond the spread\n", regressions);
  return regressions ? 3 : 0;
}

struct PassEffect {
  std::string pass;
  double with_ms = 0, without_ms = 0;
};

// Graph mode with each pass of the pipeline left out in turn, each run interleaved with the whole
// pipeline (a pass's effect is the difference of the two medians of one run). infer-types is never
// left out (the others need its types).
Expected<std::vector<PassEffect>> pass_effects(const RunArgs& a, const compiler::CompileOptions& full,
                                               const ir::Graph& g, const runtime::TensorMap& inputs,
                                               runtime::Backend& backend) {
  std::vector<PassEffect> out;
  // The passes this backend's pipeline runs (a device leaves the CPU's layout passes out and runs its
  // own), and the closing stages.
  std::set<std::string> runs{"plan-memory", "branch-schedule"};
  const compiler::PassManager pm =
      compiler::build_pipeline(full.jit_level, &backend, full.amp, full.amp_input_layers_f32, full.amp_type);
  for (const auto& p : pm.passes()) runs.insert(p->argument());
  for (const auto& e : compiler::describe_pipeline(full.jit_level, full.amp)) {
    if (e.argument == "infer-types" || !runs.count(e.argument) ||
        std::find(full.disabled_passes.begin(), full.disabled_passes.end(), e.argument) != full.disabled_passes.end())
      continue;
    std::vector<session::InterleavedRun> both(2);
    for (int m = 0; m < 2; ++m) {
      both[m].graph = &g;
      both[m].inputs = &inputs;
      both[m].backend = &backend;
      both[m].request.mode = runtime::ExecMode::Graph;
      both[m].request.iters = std::max(1, a.iters);
      both[m].request.warmup = std::max(0, a.warmup);
      both[m].request.compile = full;
    }
    if (e.argument == "branch-schedule")
      both[1].request.compile.parallel_branches = false;
    else
      both[1].request.compile.disabled_passes.push_back(e.argument);
    MS_ASSIGN_OR_RETURN(auto runs, session::run_interleaved(both, a.turn));
    out.push_back({e.argument, runs[0].latency.median, runs[1].latency.median});
  }
  return out;
}

void print_pass_effects(const std::vector<PassEffect>& effects, double pynative_ms, double graph_ms) {
  const double gain = pynative_ms - graph_ms;
  std::printf("  pass effect (Graph mode without each pass, interleaved with the whole pipeline):\n");
  std::printf("    %-18s %12s %12s %10s %8s\n", "pass", "without ms", "with ms", "gain ms", "share");
  for (const auto& e : effects) {
    const double d = e.without_ms - e.with_ms;
    std::printf("    %-18s %12.3f %12.3f %10.3f %7.1f%%\n", e.pass.c_str(), e.without_ms, e.with_ms, d,
                gain > 0 ? 100.0 * d / gain : 0.0);
  }
  std::printf("    (shares are of the PyNative -> Graph gain, %.3f ms; passes interact, so they need not add up)\n",
              gain);
}

int bench_model(const RunArgs& a) {
  // "--disable branch-schedule" runs O2 without concurrent branches (not a pass: the executor's
  // schedule), for comparing the two.
  std::vector<std::string> disabled = a.disabled_passes;
  const auto no_branches = std::remove(disabled.begin(), disabled.end(), std::string("branch-schedule"));
  const bool branches = no_branches == disabled.end();
  disabled.erase(no_branches, disabled.end());
  auto opts = compile_options(a.jit_level, disabled);
  if (!opts) return fail(opts.status().message());
  opts->parallel_branches = branches;
  auto prep = prepare(a);
  if (!prep) return fail(prep.status().message());
  if (Status ps = apply_precision(*opts, a.precision, *prep->backend); !ps) return fail(ps.message());
  if (!prep->backend->device().is_cpu()) {
    // Inputs already on the device, as a framework's own benchmark keeps them: the figures are the
    // model's, not the host-to-device copy's.
    for (auto& [name, t] : prep->inputs) {
      auto buf = prep->backend->arena_allocator().make_buffer(std::max<size_t>(t.nbytes(), 1));
      if (!buf) return fail(a.model + ": out of device memory for input '" + name + "'");
      Tensor d(std::move(buf), t.dtype(), t.shape());
      const Status cs = prep->backend->copy_from_host(t, d);
      if (!cs.is_ok()) return fail(a.model + ": input '" + name + "': " + cs.message());
      t = std::move(d);
    }
    prep->backend->synchronize();
  }
  const double peak = measure_peak_gflops(*prep->backend, 5,
                                          a.precision == "bf16"   ? DType::BF16
                                          : a.precision == "fp16" ? DType::F16
                                                                  : DType::F32);
  // FLOPs per iteration from the cost model over the statically inferred graph.
  ir::Graph typed = prep->graph;
  for (const auto& [name, t] : prep->inputs)
    if (ir::Value* v = typed.value(name))
      v->type = ir::ValueType{t.dtype(), t.shape(), std::vector<std::string>(t.shape().size())};
  Status st = compiler::infer_graph_types(typed, prep->backend.get());
  if (!st.is_ok()) return fail(a.model + ": " + st.message());
  double flops = 0;
  for (const auto& n : typed.nodes()) {
    std::vector<ir::ValueType> in, out;
    for (const auto& i : n.inputs) in.push_back(i.empty() ? ir::ValueType{} : typed.resolve(i)->type);
    for (const auto& o : n.outputs) out.push_back(o.empty() ? ir::ValueType{} : typed.resolve(o)->type);
    flops += ops::node_cost(n, in, out).flops;
  }
  const int iters = std::max(1, a.iters), warmup = std::max(0, a.warmup);
  // Both modes' iterations interleaved in turns (`--turn` PyNative iterations, as many Graph ones,
  // ...) so a change in machine load hits both alike, each turn's timed iterations running warm.
  std::vector<session::InterleavedRun> both(2);
  for (int m = 0; m < 2; ++m) {
    both[m].graph = &prep->graph;
    both[m].inputs = &prep->inputs;
    both[m].backend = prep->backend.get();
    both[m].request.mode = m == 0 ? runtime::ExecMode::PyNative : runtime::ExecMode::Graph;
    both[m].request.iters = iters;
    both[m].request.warmup = warmup;
    both[m].request.compile = *opts;
  }
  auto runs = session::run_interleaved(both, a.turn);
  if (!runs) return fail(a.model + ": " + runs.status().message());
  const session::RunResult* pyn = &(*runs)[0];
  const session::RunResult* gra = &(*runs)[1];
  std::vector<runtime::Fallback> fallbacks = device_fallback(prep->note);
  runtime::merge_fallbacks(fallbacks, pyn->fallbacks, false);
  runtime::merge_fallbacks(fallbacks, gra->fallbacks, false);
  if (Status fs = report_fallbacks(fallbacks, a.strict_device); !fs.is_ok()) return fail(fs.message());
  compiler::CompiledExecutor& gx = *gra->compiled;
  const auto& plan = gx.memory_plan();
  const double speedup = gra->latency.median > 0 ? pyn->latency.median / gra->latency.median : 0;

  std::printf("%s on %s, jit level %s, median of %d runs after %d warm-up, modes alternating every %d\n",
              a.model.c_str(), prep->backend->description().c_str(), a.jit_level.c_str(), iters, warmup, a.turn);
  std::printf("  machine fp32 peak (2048^3 matmul): %.1f GFLOP/s; model %.4g FLOPs per iteration\n", peak, flops);
  for (const auto* m : {pyn, gra}) {
    const double gflops = m->latency.median > 0 ? flops / (m->latency.median * 1e6) : 0;
    std::printf("  %-8s median %9.3f ms  %7.1f GFLOP/s  %5.1f%% of peak  peak memory %s\n",
                m == pyn ? "pynative" : "graph", m->latency.median, gflops, peak > 0 ? 100.0 * gflops / peak : 0.0,
                session::format_bytes(static_cast<double>(m->peak_bytes)).c_str());
  }
  for (const auto* m : {pyn, gra})
    if (const std::string busy = session::cpu_wait_note(m->cpu_wait_share); !busy.empty())
      std::fprintf(stderr, "note: the %s run was slowed by the machine: %s\n", m == pyn ? "PyNative" : "Graph-mode",
                   busy.c_str());
  const bool low = session::is_low_precision(a.precision);
  const session::Deviation dev = low ? session::deviation(gra->outputs, pyn->outputs) : session::Deviation{};
  if (low)
    std::printf("  graph in %s: deviation from f32 (PyNative) max %.3g, mean %.3g (relative); top-1 %s\n",
                a.precision.c_str(), dev.max_rel, dev.mean_rel, dev.argmax_equal ? "the same" : "differs");
  int branch_threads = 1;
  for (int t : gx.step_threads()) branch_threads = std::max(branch_threads, t + 1);
  std::printf("  speedup  %.2fx   compile %.1f ms   nodes %zu -> %zu   branch threads %d\n", speedup, gx.compile_ms(),
              prep->graph.nodes().size(), gx.graph().nodes().size(), branch_threads);
  if (gx.replayed())
    std::printf("  graph runs replay one CUDA Graph (%lld device operations)\n",
                static_cast<long long>(gx.last_stats().kernels));
  else if (!gx.replay_note().empty())
    std::printf("  %s\n", gx.replay_note().c_str());
  std::printf("  memory plan: arena %s, naive %s (%.1fx), lower bound %s (arena/lb %.3f)\n",
              session::format_bytes(double(plan.arena_bytes)).c_str(),
              session::format_bytes(double(plan.naive_bytes)).c_str(),
              plan.arena_bytes ? double(plan.naive_bytes) / double(plan.arena_bytes) : 0.0,
              session::format_bytes(double(plan.lower_bound)).c_str(),
              plan.lower_bound ? double(plan.arena_bytes) / double(plan.lower_bound) : 0.0);
  std::vector<PassEffect> effects;
  if (a.pass_effect) {
    auto pe = pass_effects(a, *opts, prep->graph, prep->inputs, *prep->backend);
    if (!pe) return fail(a.model + ": " + pe.status().message());
    effects = std::move(*pe);
    print_pass_effects(effects, pyn->latency.median, gra->latency.median);
  }
  if (!a.report.empty()) {
    AtomicFile file(a.report);
    std::ostream& f = file.stream();
    f << "{\"cases\": [{\"model\": \"" << json_escape(a.model) << "\", \"jit_level\": \"" << a.jit_level
      << "\", \"threads\": " << prep->backend->threads() << ", \"pynative_ms\": " << pyn->latency.median
      << ", \"graph_ms\": " << gra->latency.median << ", \"pynative_min_ms\": " << pyn->latency.min
      << ", \"pynative_p90_ms\": " << pyn->latency.p90 << ", \"graph_min_ms\": " << gra->latency.min
      << ", \"graph_p90_ms\": " << gra->latency.p90 << ", \"speedup\": " << speedup
      << ", \"compile_ms\": " << gx.compile_ms() << ", \"pynative_peak_bytes\": " << pyn->peak_bytes
      << ", \"graph_peak_bytes\": " << gra->peak_bytes << ", \"planned_bytes\": " << plan.arena_bytes
      << ", \"naive_bytes\": " << plan.naive_bytes << ", \"lower_bound_bytes\": " << plan.lower_bound
      << ", \"flops\": " << flops << ", \"nodes\": " << prep->graph.nodes().size()
      << ", \"nodes_compiled\": " << gx.graph().nodes().size() << ", \"branch_threads\": " << branch_threads
      << ", \"device\": \"" << json_escape(prep->backend->description())
      << "\", \"replayed\": " << (gx.replayed() ? "true" : "false") << ", \"replay_note\": \""
      << json_escape(gx.replay_note()) << "\", \"fallbacks\": " << fallbacks_json(fallbacks).dump()
      << ", \"environment\": " << environment_json(prep->backend.get()).dump() << ", \"precision\": \""
      << (low ? a.precision : std::string("f32")) << "\"";
    for (const auto* m : {pyn, gra})
      if (m->cpu_wait_share >= 0)
        f << ", \"" << (m == pyn ? "pynative" : "graph") << "_cpu_wait_share\": " << m->cpu_wait_share;
    if (low)
      f << ", \"max_rel_dev\": " << dev.max_rel << ", \"mean_rel_dev\": " << dev.mean_rel
        << ", \"argmax_equal\": " << (dev.argmax_equal ? "true" : "false");
    if (a.pass_effect) {
      f << ", \"pass_effect\": [";
      for (size_t i = 0; i < effects.size(); ++i)
        f << (i ? ", " : "") << "{\"pass\": \"" << effects[i].pass << "\", \"with_ms\": " << effects[i].with_ms
          << ", \"without_ms\": " << effects[i].without_ms << "}";
      f << "]";
    }
    f << "}]}\n";
    if (Status ws = file.commit(); !ws) return fail(ws.message());
  }
  if (!a.baseline.empty()) return compare_with_baseline(a, *pyn, *gra, gx.compile_ms());
  return 0;
}

}  // namespace

int bench_command(const std::string& what, const RunArgs& a) {
  if (what == "dispatch") return bench_dispatch(a);
  if (what == "peak") {
    auto be = backends::create_cpu_backend(a.threads);
    const double p = measure_peak_gflops(*be, std::max(3, a.iters));
    if (p < 0) return fail("peak: matmul failed");
    const int64_t n = peak_matmul_size(*be);
    std::printf("fp32 peak estimate (%lldx%lldx%lld matmul, %d threads): %.1f GFLOP/s\n", static_cast<long long>(n),
                static_cast<long long>(n), static_cast<long long>(n), be->threads(), p);
    return 0;
  }
  RunArgs m = a;
  m.model = what;
  return bench_model(m);
}

}  // namespace ms::cli
