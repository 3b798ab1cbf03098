#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/compile_options.h"
#include "app/cli/fallbacks.h"
#include "app/cli/plugin_option.h"
#include "app/cli/prepare.h"
#include "app/cli/session_out.h"
#include "app/session/figures.h"
#include "app/session/model_inputs.h"
#include "app/session/run_loop.h"
#include "engine/backends/select.h"
#include "engine/core/atomic_file.h"
#include "engine/frontend/npy.h"
#include "engine/runtime/backend.h"

namespace ms::cli {

int fail(const std::string& message) {
  std::string m = message;
  for (char& c : m)
    if (c == '\n') c = ' ';
  std::fprintf(stderr, "error: %s\n", m.c_str());
  return 1;
}

namespace {

Expected<std::map<std::string, std::string>> parse_pairs(const std::vector<std::string>& items, const char* flag) {
  std::map<std::string, std::string> out;
  for (const auto& s : items) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      return invalid_argument(std::string(flag) + " '" + s + "': expected NAME=VALUE");
    out[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return out;
}

}  // namespace

Expected<Prepared> prepare(const RunArgs& a) {
  Prepared p;
  auto g = session::load_model_arg(a.model);
  if (!g) return std::move(g).take_status();
  p.graph = std::move(*g);
  auto files = parse_pairs(a.inputs, "--input");
  if (!files) return std::move(files).take_status();
  auto dim_strs = parse_pairs(a.dims, "--dim");
  if (!dim_strs) return std::move(dim_strs).take_status();
  std::map<std::string, int64_t> dims;
  for (const auto& [k, v] : *dim_strs) {
    auto d = session::parse_dim_value(k, v);
    if (!d) return std::move(d).take_status();
    dims[k] = *d;
  }
  auto inputs = session::make_inputs(p.graph, *files, dims, a.seed);
  if (!inputs) return std::move(inputs).take_status();
  p.inputs = std::move(*inputs);
  auto be = backends::create_backend(a.device, a.threads);
  if (!be) return std::move(be).take_status();
  p.backend = std::move(be->backend);
  p.note = be->note;
  if (a.strict_device && !p.note.empty()) return unsupported("--strict-device: " + p.note);
  return p;
}

int run_command(const RunArgs& a) {
  auto prep = prepare(a);
  if (!prep) return fail(prep.status().message());
  if (!prep->note.empty()) std::fprintf(stderr, "note: %s\n", prep->note.c_str());
  session::RunRequest cfg;
  cfg.mode = a.mode == "graph" ? runtime::ExecMode::Graph : runtime::ExecMode::PyNative;
  cfg.iters = a.iters;
  cfg.warmup = a.warmup;
  auto jit = compile_options(a.jit_level, a.disabled_passes);
  if (!jit) return fail(jit.status().message());
  if (Status ps = apply_precision(*jit, a.precision, *prep->backend); !ps) return fail(ps.message());
  cfg.compile = *jit;
  // The graph after each pass is read only by a session's pass stepper (`--session`): without them
  // Swin-T compiled in 81 ms and peaked at 193 MB, against 211 ms and 243 MB with them.
  cfg.compile.keep_snapshots = !a.session.empty();
  cfg.profile = !a.session.empty();  // the session's timeline and heatmap
  // Graph only, nothing reads the model's weights after: those the kernels packed are not kept
  // twice. A low-precision run's f32 reference pass reads them.
  cfg.release_packed_weights = cfg.mode == runtime::ExecMode::Graph && !session::is_low_precision(a.precision);
  auto r = session::run_model(prep->graph, prep->inputs, *prep->backend, cfg);
  if (!r) return fail(a.model + ": " + r.status().message());
  if (Status fs = report_fallbacks(r->fallbacks, a.strict_device); !fs.is_ok()) return fail(fs.message());
  std::printf("%s: %s mode on %s\n", a.model.c_str(), a.mode.c_str(), prep->backend->description().c_str());
  std::printf("  latency   min %.3f  median %.3f  p90 %.3f  mean %.3f ms  (%d iterations, %d warm-up)\n",
              r->latency.min, r->latency.median, r->latency.p90, r->latency.mean, a.iters, a.warmup);
  if (cfg.mode == runtime::ExecMode::Graph) std::printf("  compile   %.3f ms\n", r->compile_ms);
  std::printf("  peak      %s\n  nodes     %zu", session::format_bytes(static_cast<double>(r->peak_bytes)).c_str(),
              r->nodes);
  if (r->executor) std::printf(" (%zu after the passes)", r->executor->graph().nodes().size());
  std::printf("\n  kernels   %lld per iteration\n", static_cast<long long>(r->kernels_per_iter));
  const std::string released =
      r->released_bytes
          ? " (" + session::format_bytes(static_cast<double>(r->released_bytes)) + " given back once packed)"
          : std::string();
  std::printf("  memory    weights %s%s, packed copies %s, activations %s planned\n",
              session::format_bytes(static_cast<double>(r->weight_bytes)).c_str(), released.c_str(),
              session::format_bytes(static_cast<double>(r->packed_bytes)).c_str(),
              cfg.mode == runtime::ExecMode::Graph ? session::format_bytes(static_cast<double>(r->arena_bytes)).c_str()
                                                   : "not");
  for (size_t i = 0; i < r->outputs.size(); ++i)
    std::printf("  output    %s = %s\n", r->output_names[i].c_str(), r->outputs[i].to_string(6).c_str());
  if (const std::string busy = session::cpu_wait_note(r->cpu_wait_share); !busy.empty())
    std::fprintf(stderr, "note: this run was slowed by the machine: %s\n", busy.c_str());
  // A bf16 Graph against one f32 PyNative pass on the same inputs.
  const bool low = session::is_low_precision(a.precision) && cfg.mode == runtime::ExecMode::Graph;
  if (session::is_low_precision(a.precision) && !low)
    std::fprintf(stderr, "note: --precision %s is Graph mode's; PyNative ran f32\n", a.precision.c_str());
  session::Deviation dev;
  if (low) {
    session::RunRequest ref = cfg;
    ref.mode = runtime::ExecMode::PyNative;
    ref.iters = 1;
    ref.warmup = 0;
    ref.profile = false;
    auto f32 = session::run_model(prep->graph, prep->inputs, *prep->backend, ref);
    if (!f32) return fail(a.model + ": the f32 reference pass: " + f32.status().message());
    dev = session::deviation(r->outputs, f32->outputs);
    std::printf("  %-9s deviation from f32 max %.3g, mean %.3g (relative); top-1 %s\n", a.precision.c_str(),
                dev.max_rel, dev.mean_rel, dev.argmax_equal ? "the same" : "differs");
  }
  if (!a.save_outputs.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.save_outputs, ec);
    if (ec) return fail(a.save_outputs + ": cannot create folder: " + ec.message());
    for (size_t i = 0; i < r->outputs.size(); ++i) {
      std::string name = r->output_names[i];
      for (char& c : name)
        if (c == '/' || c == '\\' || c == ':') c = '_';
      const std::string path = (std::filesystem::path(a.save_outputs) / (name + ".npy")).string();
      Status st = save_npy(r->outputs[i], path);
      if (!st.is_ok()) return fail(st.message());
    }
  }
  if (!a.report.empty()) {
    nlohmann::json j;
    j["model"] = a.model;
    j["mode"] = a.mode;
    j["device"] = prep->backend->name();
    j["threads"] = prep->backend->threads();
    j["plugins"] = plugins_json();
    j["environment"] = environment_json(prep->backend.get());
    j["iters"] = a.iters;
    j["latency_ms"] = {
        {"min", r->latency.min}, {"median", r->latency.median}, {"p90", r->latency.p90}, {"mean", r->latency.mean}};
    j["compile_ms"] = r->compile_ms;
    j["weight_bytes"] = r->weight_bytes;
    j["arena_bytes"] = r->arena_bytes;
    j["packed_bytes"] = r->packed_bytes;
    j["released_bytes"] = r->released_bytes;
    j["peak_bytes"] = r->peak_bytes;
    j["nodes"] = r->nodes;
    j["kernels_per_iter"] = r->kernels_per_iter;
    if (r->cpu_wait_share >= 0) j["cpu_wait_share"] = r->cpu_wait_share;
    j["precision"] = low ? a.precision : std::string("f32");
    if (low)
      j["deviation"] = {{"max_rel", dev.max_rel}, {"mean_rel", dev.mean_rel}, {"argmax_equal", dev.argmax_equal}};
    // Graph mode compiles once for the run's exact shapes; every later iteration reuses it
    // (`bench-shapes` sweeps sizes through the shape-bucket cache).
    const bool graph = cfg.mode == runtime::ExecMode::Graph;
    j["compiles"] = graph ? 1 : 0;
    j["cache_hits"] = graph ? a.warmup + a.iters - 1 : 0;
    auto fallbacks = device_fallback(prep->note);
    runtime::merge_fallbacks(fallbacks, r->fallbacks);
    j["fallbacks"] = fallbacks_json(fallbacks);
    if (Status ws = write_file_atomic(a.report, j.dump(2) + '\n'); !ws) return fail(ws.message());
  }
  if (!a.session.empty()) {
    session::SessionData data;
    data.runs.push_back(session_run(a, *r, prep->backend->description()));
    if (Status ss = write_session(a.session, a.model, "run", std::move(data)); !ss) return fail(ss.message());
  }
  return 0;
}

}  // namespace ms::cli
