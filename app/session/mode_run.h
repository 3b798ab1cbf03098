// A run asked for by names, the way the app's Run panel and its jobs ask: mode, device, jit level,
// threads, iterations, batch. Makes the inputs and the backend, runs the one loop (run_loop.h) with
// the profiler on, and returns what the app shows: figures, outputs as text, the Graph mode's pass
// snapshots and memory plan, and the trace (with GPU kernels on a CUDA device). Qt-free, so the
// app's run path is tested without a display.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/session/figures.h"
#include "app/session/run_loop.h"
#include "engine/backends/select.h"
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
  std::string precision = "f32";             // Graph mode: f32 or bf16 (precision.h)
  // Seams for tests: the backend for `device` (default backends::create_backend), the GPU
  // collector and an observer of the timed iterations (run_loop.h).
  std::function<Expected<backends::BackendChoice>(const std::string& device, int threads)> make_backend;
  prof::GpuCollectorFactory gpu_collector;
  runtime::RunObserver* observer = nullptr;
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
};

class CompileCache;

// With `cache` (compile_cache.h), a Graph-mode run of the cache's model reuses the graphs compiled
// by earlier runs with the same options and compiles per shape bucket; without it, or for another
// graph, it compiles the inputs' exact shapes and keeps nothing.
Expected<ModeRunOutcome> run_mode(const ir::Graph& g, const ModeRun& request, RunCallbacks& callbacks,
                                  CompileCache* cache = nullptr);

// What a compiled graph depends on besides the model and the inputs' bucket: device, threads, jit
// level, disabled passes, precision and the loaded plugins (the key of a compile-cache entry).
std::string compile_key(const ModeRun& request);

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
