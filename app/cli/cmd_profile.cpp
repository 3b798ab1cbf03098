// `profile MODEL [--mode pynative|graph|both] [--device cpu|cuda] [--iters N] --out DIR`: runs the model
// with the Recorder and writes DIR/<mode>.trace.json (Chrome trace, opens in Perfetto UI) and
// DIR/summary.json (per-op tables, memory analysis, and with both modes the aligned comparison and
// the mode advisor's verdict).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/cli/cmd_profile.h"

#include "app/cli/compile_options.h"
#include "app/cli/fallbacks.h"
#include "app/cli/plugin_option.h"
#include "app/cli/prepare.h"
#include "app/cli/registry.h"
#include "app/cli/session_out.h"
#include "app/session/figures.h"
#include "app/session/run_loop.h"
#include "engine/compiler/options.h"
#include "engine/core/atomic_file.h"
#include "profiler/analysis/report.h"
#include "profiler/io/chrome_trace.h"

namespace ms::cli {

compiler::CompileOptions profile_compile_options(const RunArgs& a) {
  compiler::CompileOptions o;
  const auto level = compiler::parse_jit_level(a.jit_level);
  o.jit_level = level ? *level : compiler::kDefaultJitLevel;
  o.disabled_passes = a.disabled_passes;
  set_precision(o, a.precision);  // checked against the backend where the command starts
  return o;
}

Expected<prof::Comparison> profiled_comparison(Prepared& prep, const RunArgs& a) {
  const compiler::CompileOptions copts = profile_compile_options(a);
  prof::TracePtr traces[2];
  for (int i = 0; i < 2; ++i) {
    session::RunRequest po;
    po.mode = i == 0 ? runtime::ExecMode::PyNative : runtime::ExecMode::Graph;
    po.iters = a.iters;
    po.warmup = a.warmup;
    po.compile = copts;
    po.profile = true;
    auto run = session::run_model(prep.graph, prep.inputs, *prep.backend, po);
    if (!run) return std::move(run).take_status();
    traces[i] = run->trace;
  }
  return prof::compare_runs(*traces[0], *traces[1]);
}

std::string comparison_text(const prof::Comparison& c) {
  return prof::format_compare_table(c, 20) + "\n" + c.verdict.text + "\n";
}

namespace {

struct ProfileState {
  RunArgs args;
  std::string mode = "both";
  std::string out;
};

int profile_command(const ProfileState& st) {
  const RunArgs& a = st.args;
  auto prep = prepare(a);
  if (!prep) return fail(prep.status().message());
  if (!prep->note.empty()) std::fprintf(stderr, "note: %s\n", prep->note.c_str());
  compiler::CompileOptions copts = profile_compile_options(a);
  if (Status ps = apply_precision(copts, a.precision, *prep->backend); !ps) return fail(ps.message());
  std::error_code ec;
  std::filesystem::create_directories(st.out, ec);
  if (ec) return fail(st.out + ": cannot create folder: " + ec.message());

  std::vector<runtime::ExecMode> modes;
  if (st.mode != "graph") modes.push_back(runtime::ExecMode::PyNative);
  if (st.mode != "pynative") modes.push_back(runtime::ExecMode::Graph);

  nlohmann::json summary;
  summary["model"] = a.model;
  summary["device"] = prep->backend->description();
  summary["plugins"] = plugins_json();
  summary["environment"] = environment_json(prep->backend.get());
  summary["iterations"] = a.iters;
  summary["warmup"] = a.warmup;
  summary["jit_level"] = a.jit_level;
  std::map<runtime::ExecMode, prof::TracePtr> traces;
  std::vector<runtime::Fallback> fallbacks;
  session::SessionData data;
  for (runtime::ExecMode m : modes) {
    session::RunRequest po;
    po.mode = m;
    po.iters = a.iters;
    po.warmup = a.warmup;
    po.compile = copts;
    po.profile = true;
    po.metadata["model"] = a.model;
    po.metadata["jit_level"] = a.jit_level;
    auto run = session::run_model(prep->graph, prep->inputs, *prep->backend, po);
    const std::string name = runtime::exec_mode_name(m);
    if (!run) return fail(a.model + ": " + name + ": " + run.status().message());
    runtime::merge_fallbacks(fallbacks, run->fallbacks, false);
    const std::string path = (std::filesystem::path(st.out) / (name + ".trace.json")).string();
    Status s = prof::export_chrome_trace_file(*run->trace, path);
    if (!s.is_ok()) return fail(s.message());
    const prof::OpTable table = prof::op_stats(*run->trace);
    const prof::MemoryAnalysis mem = prof::analyze_memory(*run->trace);
    const session::LatencySummary& lat = run->latency;
    summary["modes"][name] = {
        {"trace", path},
        {"latency_ms", {{"min", lat.min}, {"median", lat.median}, {"p90", lat.p90}, {"mean", lat.mean}}},
        {"compile_ms", run->compile_ms},
        {"recorded_events", run->recorded_events},
        {"trace_events", run->trace->events.size()},
        {"dropped_events", run->trace->dropped_events},
        {"post_processing_ms", run->build_ms},
        {"gpu_records", run->gpu_records},
        {"gpu_note", run->gpu_note},
        {"op_table", prof::to_json(table)},
        {"memory", prof::to_json(mem)}};
    std::printf("%s: median %.3f ms over %d iterations, %zu events -> %s\n", name.c_str(), lat.median, a.iters,
                run->trace->events.size(), path.c_str());
    if (run->gpu_records > 0)
      std::printf("gpu: %llu CUPTI records (kernels, copies, memsets)\n",
                  static_cast<unsigned long long>(run->gpu_records));
    if (!run->gpu_note.empty())
      std::fprintf(stderr, "note: %s: GPU kernels missing: %s\n", name.c_str(), run->gpu_note.c_str());
    std::printf("%s", prof::format_op_table(table, 10).c_str());
    std::printf("memory: peak %s live, footprint %s, fragmentation %.0f%%\n\n",
                session::format_bytes(static_cast<double>(mem.peak_live_bytes)).c_str(),
                session::format_bytes(static_cast<double>(mem.footprint_bytes)).c_str(), mem.fragmentation * 100);
    traces[m] = run->trace;
    if (!a.session.empty()) data.runs.push_back(session_run(a, *run, prep->backend->description()));
  }
  if (Status fs = report_fallbacks(fallbacks, a.strict_device); !fs.is_ok()) return fail(fs.message());
  summary["fallbacks"] = fallbacks_json(fallbacks);
  if (auto dev = device_fallback(prep->note); !dev.empty()) summary["fallbacks"].push_back(fallbacks_json(dev)[0]);
  if (traces.size() == 2) {
    const prof::Comparison c =
        prof::compare_runs(*traces[runtime::ExecMode::PyNative], *traces[runtime::ExecMode::Graph]);
    summary["comparison"] = prof::to_json(c);
    summary["verdict"] = c.verdict.text;
    std::printf("%s\n%s\n", prof::format_compare_table(c, 15).c_str(), c.verdict.text.c_str());
  }
  const std::string spath = (std::filesystem::path(st.out) / "summary.json").string();
  if (Status ws = write_file_atomic(spath, summary.dump(2) + '\n'); !ws) return fail(ws.message());
  std::printf("summary: %s\n", spath.c_str());
  if (!a.session.empty()) {
    if (data.runs.size() == 2) data.comparisons.push_back(session_comparison(data.runs, 0, 1));
    if (Status ss = write_session(a.session, a.model, "profile", std::move(data)); !ss) return fail(ss.message());
  }
  return 0;
}

const RegisterCommand kProfile{
    "profile", "Profile a model in PyNative and/or Graph mode: Chrome traces and summary.json", 35,
    [](CLI::App& cmd) -> CommandRunner {
      auto st = std::make_shared<ProfileState>();
      add_run_options(&cmd, st->args, false);
      add_precision_option(&cmd, st->args);
      cmd.add_option("--mode", st->mode, "pynative, graph or both")
          ->check(CLI::IsMember({"pynative", "graph", "both"}));
      cmd.add_option("--out", st->out, "Folder for <mode>.trace.json and summary.json")->required();
      cmd.add_option("--session", st->args.session, "Also write the runs as a session file the app opens");
      return [st] { return profile_command(*st); };
    }};

}  // namespace
}  // namespace ms::cli
