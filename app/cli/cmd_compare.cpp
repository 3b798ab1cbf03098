// `compare MODEL`: both modes on the same inputs, side by side, outputs asserted equal.
#include <cmath>
#include <cstdio>

#include "app/cli/cmd_profile.h"
#include "app/cli/cmd_train.h"
#include "app/cli/compile_options.h"
#include "app/cli/fallbacks.h"
#include "app/cli/prepare.h"
#include "app/cli/session_out.h"
#include "app/session/figures.h"
#include "app/session/run_loop.h"

namespace ms::cli {

int compare_command(const RunArgs& a) {
  if (compare_train_requested()) return compare_train_command(a);  // compare MODEL --train (cmd_train.cpp)
  auto prep = prepare(a);
  if (!prep) return fail(prep.status().message());
  if (!prep->note.empty()) std::fprintf(stderr, "note: %s\n", prep->note.c_str());
  session::RunRequest cfg;
  cfg.iters = a.iters;
  cfg.warmup = a.warmup;
  auto jit = compile_options(a.jit_level, a.disabled_passes);
  if (!jit) return fail(jit.status().message());
  if (Status ps = apply_precision(*jit, a.precision, *prep->backend); !ps) return fail(ps.message());
  cfg.compile = *jit;
  cfg.profile = !a.session.empty();  // the session's timelines, heatmaps and comparison
  cfg.mode = runtime::ExecMode::PyNative;
  auto eager = session::run_model(prep->graph, prep->inputs, *prep->backend, cfg);
  if (!eager) return fail(a.model + ": pynative: " + eager.status().message());
  cfg.mode = runtime::ExecMode::Graph;
  auto graph = session::run_model(prep->graph, prep->inputs, *prep->backend, cfg);
  if (!graph) return fail(a.model + ": graph: " + graph.status().message());
  std::vector<runtime::Fallback> fallbacks = eager->fallbacks;
  runtime::merge_fallbacks(fallbacks, graph->fallbacks, false);
  if (Status fs = report_fallbacks(fallbacks, a.strict_device); !fs.is_ok()) return fail(fs.message());

  for (const auto* m : {&*eager, &*graph})
    if (const std::string busy = session::cpu_wait_note(m->cpu_wait_share); !busy.empty())
      std::fprintf(stderr, "note: the %s run was slowed by the machine: %s\n", m == &*eager ? "PyNative" : "Graph-mode",
                   busy.c_str());
  std::printf("%s on %s, %d iterations after %d warm-up\n\n", a.model.c_str(), prep->backend->description().c_str(),
              a.iters, a.warmup);
  std::printf("%-22s %14s %14s %10s\n", "", "PyNative", "Graph", "ratio");
  auto row = [](const char* label, double x, double y, const char* unit) {
    std::printf("%-22s %11.3f %-2s %11.3f %-2s %9.2fx\n", label, x, unit, y, unit, y > 0 ? x / y : 0.0);
  };
  row("latency median", eager->latency.median, graph->latency.median, "ms");
  row("latency p90", eager->latency.p90, graph->latency.p90, "ms");
  row("latency min", eager->latency.min, graph->latency.min, "ms");
  std::printf("%-22s %11s    %11.3f ms\n", "compile", "-", graph->compile_ms);
  std::printf("%-22s %14s %14s\n", "peak memory", session::format_bytes(static_cast<double>(eager->peak_bytes)).c_str(),
              session::format_bytes(static_cast<double>(graph->peak_bytes)).c_str());
  // Graph mode runs the graph its passes left: its node count is what the compile did to the model.
  const size_t compiled_nodes = graph->executor ? graph->executor->graph().nodes().size() : graph->nodes;
  std::printf("%-22s %14zu %14zu\n", "nodes", eager->nodes, compiled_nodes);
  std::printf("%-22s %14lld %14lld\n", "kernels / iteration", static_cast<long long>(eager->kernels_per_iter),
              static_cast<long long>(graph->kernels_per_iter));
  // The aligned per-op table comes from profiled runs; its verdict is retimed with the runs above
  // (no recorder cost), so the break-even row and the verdict are one computation.
  auto profiled = profiled_comparison(*prep, a);
  if (profiled) {
    prof::retime(*profiled, eager->latency.median, graph->latency.median, graph->compile_ms, eager->cpu_wait_share,
                 graph->cpu_wait_share);
    const double n = profiled->summary.break_even_iterations;
    if (std::isfinite(n))
      std::printf("%-22s %14s %11.0f iterations (compile / saving = %.1f)\n", "break-even", "",
                  prof::whole_iterations(n), n);
    std::printf("\n%s", comparison_text(*profiled).c_str());
  } else {
    const double saving = eager->latency.median - graph->latency.median;
    if (saving > 0) std::printf("%-22s %14s %11.1f iterations\n", "break-even", "", graph->compile_ms / saving);
    std::fprintf(stderr, "note: no per-op comparison: %s\n", profiled.status().message().c_str());
  }

  int mismatches = 0;
  // Graph in bf16 or fp16: its distance from f32, not equality.
  const bool low = session::is_low_precision(a.precision);
  if (low) {
    const session::Deviation d = session::deviation(graph->outputs, eager->outputs);
    std::printf(
        "\noutputs: %zu; Graph (%s) from PyNative (f32): max deviation %.3g, mean %.3g (relative); "
        "top-1 %s\n",
        eager->outputs.size(), a.precision.c_str(), d.max_rel, d.mean_rel, d.argmax_equal ? "the same" : "differs");
  }
  for (size_t i = 0; i < eager->outputs.size() && !low; ++i) {
    const std::string diff = session::compare_tensors(graph->outputs[i], eager->outputs[i], 1e-4, 1e-5);
    if (!diff.empty()) {
      std::fprintf(stderr, "error: output '%s' differs between modes: %s\n", eager->output_names[i].c_str(),
                   diff.c_str());
      ++mismatches;
    }
  }
  if (!a.session.empty()) {
    session::SessionData data;
    data.runs.push_back(session_run(a, *eager, prep->backend->description()));
    data.runs.push_back(session_run(a, *graph, prep->backend->description()));
    data.comparisons.push_back(session_comparison(data.runs, 0, 1));
    if (Status ss = write_session(a.session, a.model, "compare", std::move(data)); !ss) return fail(ss.message());
  }
  if (mismatches) return 1;
  if (!low) std::printf("\noutputs: %zu, equal in both modes (rtol 1e-4, atol 1e-5)\n", eager->outputs.size());
  return 0;
}

}  // namespace ms::cli
