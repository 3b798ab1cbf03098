// `bench`: figures the project tracks.
//   bench dispatch         eager dispatch overhead: a chain of 1,000 tiny elementwise ops, us per op
//   bench peak             machine FP32 peak estimate: a large oneDNN matmul, GFLOP/s
//   bench MODEL            both modes' median latency, GFLOP/s vs the peak, speedup, compile time, peak
//                          memory per mode, memory plan (planned / naive / lower bound); --json FILE
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "app/cli/compile_options.h"
#include "app/cli/prepare.h"
#include "app/cli/session.h"
#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/infer.h"
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

double median_ms(const std::function<bool()>& fn, int iters) {
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!fn()) return -1;
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return summarize(t).median;
}

int bench_dispatch(const RunArgs& a) {
  constexpr int kOps = 1000;
  auto backend = backends::create_cpu_backend(a.threads > 0 ? a.threads : 1);
  ir::Graph g = tiny_chain(kOps);
  runtime::TensorMap inputs{{"x", Tensor::from_vector<float>(std::vector<float>(16, 0.5f), {16})}};
  runtime::EagerExecutor eager(g, *backend);
  Status err;
  auto run_eager = [&] {
    auto r = eager.run(inputs);
    if (!r) err = r.status();
    return r.has_value();
  };
  const double eager_ms = median_ms(run_eager, std::max(5, a.iters));
  if (eager_ms < 0) return fail("dispatch chain (pynative): " + err.message());
  auto compiled = compiler::compile_executor(g, *backend, {{"x", ir::ValueType{DType::F32, std::vector<int64_t>{16}, {""}}}});
  if (!compiled) return fail("dispatch chain (graph): " + compiled.status().message());
  auto run_graph = [&] {
    auto r = (*compiled)->run(inputs);
    if (!r) err = r.status();
    return r.has_value();
  };
  const double graph_ms = median_ms(run_graph, std::max(5, a.iters));
  if (graph_ms < 0) return fail("dispatch chain (graph): " + err.message());
  std::printf("dispatch: chain of %d tiny ops (Add/Relu on 16 floats), median of %d runs\n", kOps, std::max(5, a.iters));
  std::printf("  pynative  %.3f us/op\n  graph     %.3f us/op\n", eager_ms * 1000.0 / kOps, graph_ms * 1000.0 / kOps);
  return 0;
}

double measure_peak_gflops(runtime::Backend& backend, int iters) {
  const int64_t n = 2048;
  ir::Graph g;
  g.inputs = {"a", "b"};
  const ir::ValueType t{DType::F32, std::vector<int64_t>{n, n}, {"", ""}};
  g.add_value(ir::Value{"a", t, {}, std::nullopt});
  g.add_value(ir::Value{"b", t, {}, std::nullopt});
  ir::Node mm;
  mm.op_type = "MatMul";
  mm.inputs = {"a", "b"};
  mm.outputs = {"c"};
  g.add_node(mm);
  g.outputs = {"c"};
  auto c = compiler::compile_executor(g, backend, {{"a", t}, {"b", t}});
  if (!c) return -1;
  runtime::TensorMap in{{"a", Tensor::zeros(DType::F32, {n, n})}, {"b", Tensor::zeros(DType::F32, {n, n})}};
  (void)(*c)->run(in);
  const double ms = median_ms([&] { return (*c)->run(in).has_value(); }, iters);
  return ms <= 0 ? -1 : 2.0 * n * n * n / (ms * 1e6);
}

// Median latency of `iters` runs after `warmup` for both modes, the runs interleaved (PyNative, Graph,
// PyNative, ...) so a change in machine load hits both alike; peak bytes of each mode's last run.
struct ModeFigures {
  double median_ms = 0;
  size_t peak_bytes = 0;
};

Status time_modes(runtime::EagerExecutor& eager, compiler::CompiledExecutor& graph, const runtime::TensorMap& inputs,
                  int iters, int warmup, ModeFigures& pyn, ModeFigures& gra) {
  std::vector<double> te, tg;
  for (int i = 0; i < warmup + iters; ++i) {
    for (int m = 0; m < 2; ++m) {
      const auto t0 = std::chrono::steady_clock::now();
      auto r = m == 0 ? eager.run(inputs) : graph.run(inputs);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!r) return r.status();
      if (i >= warmup) (m == 0 ? te : tg).push_back(ms);
    }
  }
  pyn = ModeFigures{summarize(te).median, eager.last_stats().peak_bytes};
  gra = ModeFigures{summarize(tg).median, graph.last_stats().peak_bytes};
  return Status::ok();
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
  const double peak = measure_peak_gflops(*prep->backend, 5);
  // FLOPs per iteration from the cost model over the statically inferred graph.
  ir::Graph typed = prep->graph;
  for (const auto& [name, t] : prep->inputs)
    if (ir::Value* v = typed.value(name)) v->type = ir::ValueType{t.dtype(), t.shape(), std::vector<std::string>(t.shape().size())};
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
  runtime::EagerExecutor eager(prep->graph, *prep->backend);
  std::map<std::string, ir::ValueType> sig;
  for (const auto& [name, t] : prep->inputs) sig[name] = ir::ValueType{t.dtype(), t.shape(), {}};
  auto compiled = compiler::compile_executor(prep->graph, *prep->backend, sig, *opts);
  if (!compiled) return fail(a.model + ": graph: " + compiled.status().message());
  compiler::CompiledExecutor& gx = **compiled;
  ModeFigures pyn_f, gra_f;
  st = time_modes(eager, gx, prep->inputs, iters, warmup, pyn_f, gra_f);
  if (!st.is_ok()) return fail(a.model + ": " + st.message());
  const ModeFigures* pyn = &pyn_f;
  const ModeFigures* gra = &gra_f;
  const auto& plan = gx.memory_plan();
  const double speedup = gra->median_ms > 0 ? pyn->median_ms / gra->median_ms : 0;

  std::printf("%s on %s, jit level %s, median of %d runs after %d warm-up\n", a.model.c_str(),
              prep->backend->description().c_str(), a.jit_level.c_str(), iters, warmup);
  std::printf("  machine fp32 peak (2048^3 matmul): %.1f GFLOP/s; model %.4g FLOPs per iteration\n", peak, flops);
  for (const auto* m : {pyn, gra}) {
    const double gflops = m->median_ms > 0 ? flops / (m->median_ms * 1e6) : 0;
    std::printf("  %-8s median %9.3f ms  %7.1f GFLOP/s  %5.1f%% of peak  peak memory %s\n",
                m == pyn ? "pynative" : "graph", m->median_ms, gflops, peak > 0 ? 100.0 * gflops / peak : 0.0,
                format_bytes(static_cast<double>(m->peak_bytes)).c_str());
  }
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
              format_bytes(double(plan.arena_bytes)).c_str(), format_bytes(double(plan.naive_bytes)).c_str(),
              plan.arena_bytes ? double(plan.naive_bytes) / double(plan.arena_bytes) : 0.0,
              format_bytes(double(plan.lower_bound)).c_str(),
              plan.lower_bound ? double(plan.arena_bytes) / double(plan.lower_bound) : 0.0);
  if (!a.report.empty()) {
    std::ofstream f(a.report);
    if (!f) return fail(a.report + ": cannot write");
    f << "{\"cases\": [{\"model\": \"" << json_escape(a.model) << "\", \"jit_level\": \"" << a.jit_level
      << "\", \"threads\": " << prep->backend->threads() << ", \"pynative_ms\": " << pyn->median_ms
      << ", \"graph_ms\": " << gra->median_ms << ", \"speedup\": " << speedup
      << ", \"compile_ms\": " << gx.compile_ms() << ", \"pynative_peak_bytes\": " << pyn->peak_bytes
      << ", \"graph_peak_bytes\": " << gra->peak_bytes << ", \"planned_bytes\": " << plan.arena_bytes
      << ", \"naive_bytes\": " << plan.naive_bytes << ", \"lower_bound_bytes\": " << plan.lower_bound
      << ", \"flops\": " << flops << ", \"nodes\": " << prep->graph.nodes().size()
      << ", \"nodes_compiled\": " << gx.graph().nodes().size() << ", \"branch_threads\": " << branch_threads
      << ", \"device\": \"" << json_escape(prep->backend->description()) << "\", \"replayed\": "
      << (gx.replayed() ? "true" : "false") << ", \"replay_note\": \"" << json_escape(gx.replay_note()) << "\""
      << "}]}\n";
    if (!f) return fail(a.report + ": write failed");
  }
  return 0;
}

}  // namespace

int bench_command(const std::string& what, const RunArgs& a) {
  if (what == "dispatch") return bench_dispatch(a);
  if (what == "peak") {
    auto be = backends::create_cpu_backend(a.threads);
    const double p = measure_peak_gflops(*be, std::max(3, a.iters));
    if (p < 0) return fail("peak: matmul failed");
    std::printf("fp32 peak estimate (2048x2048x2048 matmul, %d threads): %.1f GFLOP/s\n", be->threads(), p);
    return 0;
  }
  RunArgs m = a;
  m.model = what;
  return bench_model(m);
}

}  // namespace ms::cli
