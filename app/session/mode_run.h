// A run asked for by names, the way the app's Run panel and its jobs ask: mode, device, jit level,
// threads, iterations, batch. Makes the inputs and the backend, runs the one loop (run_loop.h) with
// the profiler on, and returns what the app shows: figures, outputs as text, the Graph mode's pass
// snapshots and memory plan, and the trace (with GPU kernels on a CUDA device). Qt-free, so the
// app's run path is tested without a display.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/session/compile_cache.h"
#include "app/session/figures.h"
#include "app/session/run_loop.h"
#include "engine/backends/select.h"
#include "engine/compiler/buckets.h"
#include "engine/compiler/options.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/fallback.h"

namespace ms::session {

struct ModeRun {
  std::string mode = "pynative";  // pynative | graph
  std::string device = "cpu";
  std::string jit_level = compiler::kDefaultJitLevelName;
  int threads = 0;
  int iterations = 10;
  int warmup = 2;
  int batch = 1;                             // value for a symbolic leading dim
  std::vector<std::string> disabled_passes;  // Graph mode: pipeline arguments left out
  std::string precision = "f32";             // Graph mode: f32, bf16 or fp16 (precision.h)
  // Seams for tests: the backend for `device` (default backends::create_backend), the GPU
  // collector and an observer of the timed iterations (run_loop.h).
  std::function<Expected<backends::BackendChoice>(const std::string& device, int threads)> make_backend;
  prof::GpuCollectorFactory gpu_collector;
  runtime::RunObserver* observer = nullptr;
};

// Graph mode's compiled graphs as the run report counts them (`compiles`, `cache_hits`): compiled
// graphs made, and iterations that found their graph compiled.
struct CompileCounts {
  int64_t compiles = 0, cache_hits = 0;
  // A run of `iterations` (warm-up included) that compiled its graph or found it compiled.
  void add_run(bool compiled, int iterations) {
    compiles += compiled ? 1 : 0;
    cache_hits += std::max(0, iterations - (compiled ? 1 : 0));
  }
  CompileCounts& operator+=(const CompileCounts& o) {
    compiles += o.compiles;
    cache_hits += o.cache_hits;
    return *this;
  }
};

struct PassOutcome {
  std::string pass, description;
  bool ran = true, changed = false;
  int nodes_after = 0, added = 0, removed = 0, fused = 0;
  double ms = 0;
  std::shared_ptr<const ir::Graph> graph;  // snapshot after the pass
  // Read back from a session file (schema 6): the initializers of `graph` whose data the file did
  // not keep (over its budget for constants: their data is zeros), and those it left to the model
  // (value -> the model's initializer; restore_model_constants fills them in and empties this).
  std::vector<std::string> constants_not_kept;
  std::map<std::string, std::string> constants_from_model;
  // The same for the constants nested in `graph` (schema 7: subgraph initializers, tensor attributes
  // such as a Constant's value), by path (session_file.h's nested_constants).
  std::vector<std::string> nested_constants_not_kept;
};

struct ModeRunOutcome {
  std::string mode;
  std::string backend;
  std::string note;  // why the backend differs from the one asked for
  double median_ms = 0, min_ms = 0, mean_ms = 0, compile_ms = 0;
  double cpu_wait_share = -1;  // RunResult's (not kept in session files)
  size_t peak_bytes = 0;
  int64_t kernels = 0;
  std::vector<std::string> outputs;  // "name = tensor summary"
  // Graph mode: the input graph (as pass "input") and the graph after each compiler pass.
  std::vector<PassOutcome> passes;
  // The timed iterations as recorded by the profiler (timeline, heatmap, comparison), and in Graph
  // mode the compiler's memory plan (the heatmap's "planned" panel).
  prof::TracePtr trace;
  std::shared_ptr<const runtime::MemoryPlan> plan;
  uint64_t gpu_records = 0;
  std::string gpu_note;  // why a CUDA run's trace has no GPU kernels
  // What did not run as asked (runtime/fallback.h): per op and reason; op "*" is the whole run on
  // another backend than the one asked for (the reason is the backend's note).
  std::vector<runtime::Fallback> fallbacks;
  // A bf16 Graph run: its outputs' distance from one f32 PyNative pass on the same inputs.
  std::string precision = "f32";
  Deviation deviation;
  // Graph mode's compiled graphs (compiler/buckets.h): compiles made and iterations that found their
  // graph compiled (across runs, with a compile cache), the bucket of this run's inputs ("batch<=4",
  // or the exact shapes) and the buckets compiled so far, most recently used first. `cached`: this
  // run compiled nothing (compile_ms is 0).
  int64_t compiles = 0, cache_hits = 0;
  std::string bucket;
  std::vector<std::string> buckets;
  bool cached = false;
  // This run alone (compiles and cache_hits above count across runs), and how long the graph that
  // ran took to compile, this run's compile or the cached graph's.
  CompileCounts this_run;
  double graph_compile_ms = 0;
};

// A cut of the Graph-mode pipeline (numerics' pass bisection, CompileOptions::stop_after and
// rewrite_budget): the first `passes` passes, the last of them after `rewrites` rewrites (-1: all).
struct PipelineCut {
  int passes = -1;
  int64_t rewrites = -1;
  bool whole() const { return passes < 0; }
};

// A compile of the cache's model held by one job: the cache's entry for the request's options (and
// cut) taken out, or a new one, and handed back when the lease ends, unless a run on it failed
// (dropped: its executor may be half way through an iteration). A cut's graphs keep no snapshots.
class CompileLease {
 public:
  // Null when the cache does not hold `g` (runs of another graph are not cached).
  static Expected<std::unique_ptr<CompileLease>> take(CompileCache& cache, const ir::Graph& g, const ModeRun& request,
                                                      RunCallbacks& callbacks, PipelineCut cut = {});
  ~CompileLease();
  CompileLease(const CompileLease&) = delete;
  CompileLease& operator=(const CompileLease&) = delete;

  runtime::Backend& backend() { return *entry_->backend; }
  // The executor of the inputs' bucket, compiled when new (`compiled` tells which).
  Expected<compiler::CompiledExecutor*> executor_for(const runtime::TensorMap& inputs, bool* compiled) {
    return entry_->executor->executor_for(inputs, compiled);
  }
  CompileCache::Entry& entry() { return *entry_; }
  void failed() { failed_ = true; }

 private:
  CompileLease(CompileCache& cache, std::unique_ptr<CompileCache::Entry> entry)
      : cache_(cache), entry_(std::move(entry)) {}
  CompileCache& cache_;
  std::unique_ptr<CompileCache::Entry> entry_;
  bool failed_ = false;
};

// With `cache` (compile_cache.h), a Graph-mode run of the cache's model reuses the graphs compiled
// by earlier runs with the same options and compiles per shape bucket; without it, or for another
// graph, it compiles the inputs' exact shapes and keeps nothing.
Expected<ModeRunOutcome> run_mode(const ir::Graph& g, const ModeRun& request, RunCallbacks& callbacks,
                                  CompileCache* cache = nullptr);

// What a compiled graph depends on besides the model and the inputs' bucket: device, threads, jit
// level, disabled passes, precision and the loaded plugins (the key of a compile-cache entry), and
// the pipeline's cut.
std::string compile_key(const ModeRun& request, PipelineCut cut = {});

// What a finished run of the loop yields as the app shows it (figures, outputs as text, the Graph
// mode's passes and memory plan, the trace); mode is set, backend and the backend note are not.
ModeRunOutcome mode_outcome(const RunResult& r, compiler::JitLevel level);

// The inputs run_mode makes for `g` (seed 0, the request's batch for a symbolic leading dim).
Expected<runtime::TensorMap> mode_inputs(const ir::Graph& g, const ModeRun& request);

// What a run by names runs on: the backend for the request's device and threads, and the inputs
// (seed 0, the request's batch for a symbolic leading dim). The backend is declared first so it is
// destroyed last: inputs may live in its memory.
struct ModeSetup {
  std::unique_ptr<runtime::Backend> backend;
  runtime::TensorMap inputs;
  std::string note;  // why the backend differs from the one asked for
};
Expected<ModeSetup> set_up_mode(const ir::Graph& g, const ModeRun& request);

}  // namespace ms::session
