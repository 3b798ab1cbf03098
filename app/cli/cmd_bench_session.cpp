// `bench-session`: what session files cost.
//   bench-session autosave MODEL [--iters N] [--threads N]
//       runs MODEL in both modes (profiled, as the app does), then times an autosave the way the app
//       splits it: the snapshot of the session on the UI thread (a copy of SessionData: shared
//       traces and graphs, no deep copy) and the save in a job (model described, database built,
//       written atomically). Median of 5.
//   bench-session write-trace FILE [--events N]
//       writes a session with one run whose synthetic trace has N events (default 10M) on 8 tracks.
//   bench-session open-trace FILE [--window-ns W]
//       opens that session for queries (header checks only), reads the trace strings and one window
//       of W ns (default 1 ms) in the middle of the busiest track; prints the times and the peak
//       resident memory of this process (run it on its own: nothing else is loaded).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "app/cli/prepare.h"
#include "app/cli/registry.h"
#include "app/cli/session_out.h"
#include "app/session/figures.h"
#include "app/session/run_loop.h"
#include "app/session/session_file.h"

namespace ms::cli {
namespace {

using BenchClock = std::chrono::steady_clock;
double elapsed_ms(BenchClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(BenchClock::now() - t0).count();
}

long long file_size_of(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<long long>(n);
}

double peak_rss_mib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

struct BenchSessionArgs {
  RunArgs run;
  std::string what, file;
  int64_t events = 10'000'000;
  int64_t window_ns = 1'000'000;
};

int bench_autosave(const BenchSessionArgs& b) {
  const RunArgs& a = b.run;
  auto prep = prepare(a);
  if (!prep) return fail(prep.status().message());
  session::SessionData data;
  for (runtime::ExecMode m : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    session::RunRequest req;
    req.mode = m;
    req.iters = a.iters;
    req.warmup = a.warmup;
    req.profile = true;
    auto r = session::run_model(prep->graph, prep->inputs, *prep->backend, req);
    if (!r) return fail(a.model + ": " + r.status().message());
    data.runs.push_back(session_run(a, *r, prep->backend->description()));
  }
  data.comparisons.push_back(session_comparison(data.runs, 0, 1));
  data.model.source = a.model;
  size_t events = 0;
  for (const auto& r : data.runs) events += r.outcome.trace ? r.outcome.trace->events.size() : 0;
  const std::string path = b.file.empty() ? "/tmp/modescope_bench_autosave.modescope" : b.file;
  std::vector<double> snap, save;
  for (int i = 0; i < 5; ++i) {
    auto t0 = BenchClock::now();
    auto copy = std::make_shared<session::SessionData>(data);  // what the UI thread does
    snap.push_back(elapsed_ms(t0));
    t0 = BenchClock::now();
    auto model = session::describe_model(copy->model.source);
    if (!model) return fail(model.status().message());
    copy->model = std::move(*model);
    if (Status s = session::save_session(path, *copy); !s) return fail(s.message());
    save.push_back(elapsed_ms(t0));
  }
  std::sort(snap.begin(), snap.end());
  std::sort(save.begin(), save.end());
  std::printf(
      "{\"model\": \"%s\", \"runs\": %zu, \"events\": %zu, \"ui_thread_ms\": %.3f, \"job_ms\": %.1f, "
      "\"file_bytes\": %lld}\n",
      a.model.c_str(), data.runs.size(), events, snap[2], save[2], file_size_of(path));
  return 0;
}

int bench_write_trace(const BenchSessionArgs& b) {
  if (b.file.empty()) return fail("bench-session write-trace: FILE is required");
  const auto t0 = BenchClock::now();
  prof::TraceBuilder tb;
  constexpr int kTracks = 8, kOps = 64;
  for (int k = 0; k < kTracks; ++k)
    tb.add_track({prof::TrackKind::KernelThread, 1, k, "bench", "thread " + std::to_string(k), k});
  std::vector<prof::StrId> names;
  for (int i = 0; i < kOps; ++i) names.push_back(tb.intern("op" + std::to_string(i)));
  const int64_t per_track = b.events / kTracks;
  tb.raw().events.reserve(static_cast<size_t>(per_track * kTracks));
  for (int k = 0; k < kTracks; ++k)
    for (int64_t i = 0; i < per_track; ++i) {
      prof::Event e;
      e.track = static_cast<uint32_t>(k);
      e.ts_ns = i * 1000 + k;
      e.dur_ns = 900;
      e.kind = prof::EventKind::Kernel;
      e.iteration = static_cast<int32_t>(i / 10000);
      e.name = names[static_cast<size_t>(i % kOps)];
      tb.raw().events.push_back(e);
    }
  session::SessionData data;
  data.model.source = "generated:1";
  data.model.kind = "spec";
  session::SessionRun run;
  run.label = "synthetic";
  run.outcome.trace = tb.finish();
  data.runs.push_back(std::move(run));
  const double build_ms = elapsed_ms(t0);
  const auto t1 = BenchClock::now();
  if (Status s = session::save_session(b.file, data); !s) return fail(s.message());
  std::printf("{\"events\": %zu, \"build_ms\": %.0f, \"save_ms\": %.0f, \"file_bytes\": %lld}\n",
              data.runs[0].outcome.trace->events.size(), build_ms, elapsed_ms(t1), file_size_of(b.file));
  return 0;
}

int bench_open_trace(const BenchSessionArgs& b) {
  if (b.file.empty()) return fail("bench-session open-trace: FILE is required");
  const auto t0 = BenchClock::now();
  auto reader = session::SessionReader::open(b.file, false);
  if (!reader) return fail(reader.status().message());
  auto strings = reader->trace_strings(0);
  auto count = reader->event_count(0);
  if (!strings || !count) return fail(!strings ? strings.status().message() : count.status().message());
  const double open_ms = elapsed_ms(t0);
  // The middle of track 0 (the synthetic trace's tracks are alike): a timeline's first window.
  const int64_t per_track = *count / 8, mid = per_track / 2 * 1000;
  const auto t1 = BenchClock::now();
  auto events = reader->events_in_window(0, 0, mid, mid + b.window_ns);
  if (!events) return fail(events.status().message());
  const double window_ms = elapsed_ms(t1);
  std::printf(
      "{\"events\": %lld, \"open_ms\": %.1f, \"window_ns\": %lld, \"window_events\": %zu, \"window_ms\": %.1f, "
      "\"first_window_total_ms\": %.1f, \"peak_rss_mib\": %.1f}\n",
      static_cast<long long>(*count), open_ms, static_cast<long long>(b.window_ns), events->size(), window_ms,
      open_ms + window_ms, peak_rss_mib());
  return 0;
}

const RegisterCommand kBenchSession{
    "bench-session", "Benchmarks of session files: autosave of a model's runs, a large trace's window", 92,
    [](CLI::App& cmd) -> CommandRunner {
      auto b = std::make_shared<BenchSessionArgs>();
      cmd.add_option("WHAT", b->what, "autosave | write-trace | open-trace")
          ->required()
          ->check(CLI::IsMember({"autosave", "write-trace", "open-trace"}));
      cmd.add_option("TARGET", b->file, "autosave: MODEL; write-trace, open-trace: the session FILE")->required();
      cmd.add_option("--threads", b->run.threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
      cmd.add_option("--iters", b->run.iters, "autosave: timed iterations per run")->check(CLI::PositiveNumber);
      cmd.add_option("--events", b->events, "write-trace: events in the trace")->check(CLI::PositiveNumber);
      cmd.add_option("--window-ns", b->window_ns, "open-trace: the window queried")->check(CLI::PositiveNumber);
      return [b] {
        if (b->what == "autosave") {
          BenchSessionArgs a = *b;
          a.run.model = a.file;
          a.file.clear();
          return bench_autosave(a);
        }
        return b->what == "write-trace" ? bench_write_trace(*b) : bench_open_trace(*b);
      };
    }};

}  // namespace
}  // namespace ms::cli
