// `bench-profiler [MODEL]`: the profiler's own figures. Cost per recorded event (hot path), post-
// processing time per million events, recording overhead on a model (record on vs off, medians of
// several alternating runs), with --cupti CUPTI's share of it on a CUDA device, and streaming import
// (peak memory over file size) of a generated trace.
#include <malloc.h>
#include <unistd.h>
#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/cli/cmd_profile.h"
#include "app/cli/prepare.h"
#include "app/cli/registry.h"
#include "app/session/figures.h"
#include "app/session/run_loop.h"
#include "engine/core/atomic_file.h"
#include "profiler/io/chrome_trace.h"

namespace ms::cli {
namespace {

using clock_type = std::chrono::steady_clock;

struct BenchState {
  RunArgs args;
  std::string mode = "both";
  int runs = 5;
  int64_t events = 1000000;
  int import_mb = 0;
  std::string report;
  bool cupti = false;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// VmRSS / VmHWM of this process in bytes (Linux); 0 elsewhere.
uint64_t proc_status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::strlen(key) + 1)) * 1024;
  return 0;
}

void bench_hot_path(const BenchState& st, nlohmann::json& out) {
  ir::Graph g;
  ir::Node proto;
  proto.op_type = "Relu";
  proto.name = "relu";
  proto.inputs = {"x"};
  proto.outputs = {"y"};
  const ir::Node& node = g.add_node(proto);
  std::vector<double> per_event_ns, build_ms_per_m;
  const int64_t pairs = std::max<int64_t>(1, st.events / 2);
  for (int r = 0; r < st.runs; ++r) {
    prof::RecorderOptions ro;
    ro.chunk_events = 1u << 16;
    ro.preallocated_chunks = static_cast<size_t>(2 * pairs / static_cast<int64_t>(ro.chunk_events) + 2);
    prof::Recorder rec(ro);
    rec.on_run_begin({runtime::ExecMode::PyNative, Device{}, 0});  // registers the thread before timing
    const auto t0 = clock_type::now();
    for (int64_t i = 0; i < pairs; ++i) {
      rec.on_op_begin(node);
      rec.on_op_end(node);
    }
    const double ms = ms_since(t0);
    rec.on_run_end({runtime::ExecMode::PyNative, Device{}, 0});
    per_event_ns.push_back(ms * 1e6 / static_cast<double>(2 * pairs));
    prof::BuildContext ctx;
    ctx.graph = &g;
    const auto b0 = clock_type::now();
    prof::TracePtr t = rec.build(ctx);
    const double bms = ms_since(b0);
    build_ms_per_m.push_back(bms * 1e6 / static_cast<double>(std::max<size_t>(1, t->events.size())));
  }
  out["hot_path"] = {{"records", 2 * pairs}, {"ns_per_record_median", median(per_event_ns)}, {"runs", st.runs}};
  out["post_processing"] = {{"events", pairs}, {"ms_per_million_events_median", median(build_ms_per_m)}};
  std::printf("hot path:        %.1f ns per recorded event (median of %d runs, %lld records)\n", median(per_event_ns),
              st.runs, static_cast<long long>(2 * pairs));
  std::printf("post-processing: %.0f ms per million events (median)\n", median(build_ms_per_m));
}

// The timed loop's options for one mode (iterations, warm-up, compile options from the run args).
session::RunRequest timed_options(const RunArgs& a, runtime::ExecMode m) {
  session::RunRequest po;
  po.mode = m;
  po.iters = a.iters;
  po.warmup = a.warmup;
  po.compile = profile_compile_options(a);
  po.profile = true;
  return po;
}

int bench_model(const BenchState& st, nlohmann::json& out) {
  const RunArgs& a = st.args;
  auto prep = prepare(a);
  if (!prep) return fail(prep.status().message());
  for (runtime::ExecMode m : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    const std::string name = runtime::exec_mode_name(m);
    if (st.mode != "both" && st.mode != name) continue;
    std::vector<double> off, on, events, off_min, on_min;
    for (int r = 0; r < st.runs; ++r) {
      for (int rec = 0; rec < 2; ++rec) {  // alternate so drift hits both alike
        session::RunRequest po = timed_options(a, m);
        po.profile = rec == 1;
        auto run = session::run_model(prep->graph, prep->inputs, *prep->backend, po);
        if (!run) return fail(name + ": " + run.status().message());
        (rec ? on : off).push_back(median(run->latencies_ms));
        (rec ? on_min : off_min).push_back(*std::min_element(run->latencies_ms.begin(), run->latencies_ms.end()));
        if (rec) events.push_back(static_cast<double>(run->recorded_events) / std::max(1, a.iters));
      }
    }
    const double overhead = median(off) > 0 ? median(on) / median(off) - 1 : 0;
    // Background load only ever adds time: the fastest iterations are a second, steadier view.
    const double best_off = *std::min_element(off_min.begin(), off_min.end());
    const double best_on = *std::min_element(on_min.begin(), on_min.end());
    const double overhead_min = best_off > 0 ? best_on / best_off - 1 : 0;
    out["overhead"][name] = {{"median_ms_off", median(off)},
                             {"median_ms_on", median(on)},
                             {"overhead", overhead},
                             {"min_ms_off", best_off},
                             {"min_ms_on", best_on},
                             {"overhead_of_minima", overhead_min},
                             {"records_per_iteration", median(events)},
                             {"runs", st.runs},
                             {"iters", a.iters}};
    std::printf(
        "%-9s overhead: off %.3f ms, on %.3f ms per iteration -> %+.2f%% (minima %.3f / %.3f ms -> %+.2f%%; "
        "%.0f records/iteration)\n",
        name.c_str(), median(off), median(on), overhead * 100, best_off, best_on, overhead_min * 100, median(events));
  }
  return 0;
}

// CUPTI's share of the overhead: recorded runs without and with GPU activity, alternating. Needs a
// CUDA backend; otherwise (or when CUPTI cannot start) the reason is reported instead of a figure.
int bench_cupti(const BenchState& st, nlohmann::json& out) {
  const RunArgs& a = st.args;
  auto prep = prepare(a);
  if (!prep) return fail(prep.status().message());
  if (prep->backend->device().type != DeviceType::CUDA) {
    const std::string why = "no CUDA device (backend: " + prep->backend->description() + ")";
    out["cupti"] = {{"error", why}};
    std::printf("cupti overhead:  %s\n", why.c_str());
    return 0;
  }
  for (runtime::ExecMode m : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    const std::string name = runtime::exec_mode_name(m);
    if (st.mode != "both" && st.mode != name) continue;
    std::vector<double> without, with;
    uint64_t records = 0;
    for (int r = 0; r < st.runs; ++r) {
      for (int gpu = 0; gpu < 2; ++gpu) {
        session::RunRequest po = timed_options(a, m);
        po.profiling.gpu_activity = gpu == 1;
        auto run = session::run_model(prep->graph, prep->inputs, *prep->backend, po);
        if (!run) return fail(name + ": " + run.status().message());
        if (gpu && !run->gpu_note.empty()) {
          out["cupti"][name] = {{"error", run->gpu_note}};
          std::printf("cupti overhead:  %s: %s\n", name.c_str(), run->gpu_note.c_str());
          return 0;
        }
        (gpu ? with : without).push_back(median(run->latencies_ms));
        if (gpu) records = run->gpu_records;
      }
    }
    const double overhead = median(without) > 0 ? median(with) / median(without) - 1 : 0;
    out["cupti"][name] = {{"median_ms_recorder", median(without)},
                          {"median_ms_recorder_cupti", median(with)},
                          {"overhead", overhead},
                          {"gpu_records_per_run", records},
                          {"runs", st.runs},
                          {"iters", a.iters}};
    std::printf("%-9s cupti overhead: %.3f ms -> %.3f ms per iteration (%+.2f%%, %llu GPU records per run)\n",
                name.c_str(), median(without), median(with), overhead * 100, static_cast<unsigned long long>(records));
  }
  return 0;
}

int bench_import(const BenchState& st, nlohmann::json& out) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("modescope-bench-" + std::to_string(::getpid()) + ".json")).string();
  {
    // A synthetic own-format trace of about import_mb MB (~330 bytes per op event).
    prof::TraceBuilder b;
    const uint32_t host = b.add_track({prof::TrackKind::HostThread, 1, 1, "modescope", "host", 0});
    for (uint64_t id = 1; id <= 64; ++id)
      b.add_node({id,
                  "node_" + std::to_string(id),
                  id % 2 ? "Conv" : "Relu",
                  {id},
                  "f32[1,64,56,56] -> f32[1,64,56,56]",
                  1e6,
                  2e6});
    const int64_t n = static_cast<int64_t>(st.import_mb) * 1024 * 1024 / 330;
    for (int64_t i = 0; i < n; ++i) {
      prof::Event e;
      e.ts_ns = i * 1000;
      e.dur_ns = 900;
      e.track = host;
      e.node = static_cast<int32_t>(i % 64);
      e.name = b.intern(i % 2 ? "Relu" : "Conv");
      e.category = b.intern("op");
      b.add_event(e);
    }
    prof::TracePtr t = b.finish();
    Status s = prof::export_chrome_trace_file(*t, path);
    if (!s.is_ok()) return fail(s.message());
  }
  const uint64_t size = std::filesystem::file_size(path);
  ::malloc_trim(0);  // hand the generator's freed heap back, so the import's growth shows in RSS
  { std::ofstream("/proc/self/clear_refs") << "5"; }  // resets VmHWM to the current RSS
  const uint64_t rss0 = proc_status_kb("VmRSS:");
  const auto t0 = clock_type::now();
  auto r = prof::import_chrome_trace_file(path);
  const double ms = ms_since(t0);
  const uint64_t hwm = proc_status_kb("VmHWM:");
  std::filesystem::remove(path);
  if (!r) return fail(r.status().message());
  const double ratio = static_cast<double>(hwm > rss0 ? hwm - rss0 : 0) / static_cast<double>(size);
  out["import"] = {{"file_bytes", size},
                   {"events", r->trace->events.size()},
                   {"ms", ms},
                   {"mb_per_s", static_cast<double>(size) / 1e6 / (ms * 1e-3)},
                   {"peak_extra_rss_bytes", hwm > rss0 ? hwm - rss0 : 0},
                   {"peak_over_file_size", ratio}};
  std::printf("import:          %.1f MB in %.0f ms (%.0f MB/s), %zu events, peak memory %.2fx the file size\n",
              static_cast<double>(size) / 1e6, ms, static_cast<double>(size) / 1e6 / (ms * 1e-3),
              r->trace->events.size(), ratio);
  return 0;
}

int bench_profiler_command(const BenchState& st) {
  nlohmann::json out;
  bench_hot_path(st, out);
  if (!st.args.model.empty())
    if (int rc = bench_model(st, out)) return rc;
  if (st.cupti && !st.args.model.empty())
    if (int rc = bench_cupti(st, out)) return rc;
  if (st.import_mb > 0)
    if (int rc = bench_import(st, out)) return rc;
  if (!st.report.empty()) {
    if (Status ws = write_file_atomic(st.report, out.dump(2) + '\n'); !ws) return fail(ws.message());
  }
  return 0;
}

const RegisterCommand kBenchProfiler{
    "bench-profiler", "Profiler figures: cost per event, post-processing, overhead on a model, streaming import", 91,
    [](CLI::App& cmd) -> CommandRunner {
      auto st = std::make_shared<BenchState>();
      RunArgs& a = st->args;
      cmd.add_option("MODEL", a.model, "Model for the on/off overhead (an .onnx file or zoo:...); optional");
      cmd.add_option("--mode", st->mode, "pynative, graph or both")
          ->check(CLI::IsMember({"pynative", "graph", "both"}));
      cmd.add_option("--device", a.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
      cmd.add_option("--threads", a.threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
      cmd.add_option("--iters", a.iters, "Timed iterations per run")->check(CLI::PositiveNumber);
      cmd.add_option("--warmup", a.warmup, "Warm-up iterations per run")->check(CLI::NonNegativeNumber);
      cmd.add_option("--jit-level", a.jit_level, "Graph-mode pipeline: O0, O1 or O2")
          ->check(CLI::IsMember({"O0", "O1", "O2"}));
      cmd.add_option("--runs", st->runs, "Runs per figure (medians are reported)")->check(CLI::PositiveNumber);
      cmd.add_option("--events", st->events, "Records for the hot-path and post-processing figures")
          ->check(CLI::PositiveNumber);
      cmd.add_option("--import-mb", st->import_mb, "Generate a trace of this many MB and import it (0: skip)")
          ->check(CLI::NonNegativeNumber);
      cmd.add_option("--report", st->report, "Write the figures as JSON");
      cmd.add_flag("--cupti", st->cupti,
                   "Also CUPTI's overhead on MODEL (recorder with vs without GPU activity; CUDA)");
      return [st] { return bench_profiler_command(*st); };
    }};

}  // namespace
}  // namespace ms::cli
