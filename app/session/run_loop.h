// The one loop that runs a model N times, shared by the CLI (run, compare, profile, bench,
// bench-profiler) and every app job: executor set-up (Graph mode compiles), warm-up iterations,
// timed iterations, and when profiling the timed iterations under the Recorder with CUPTI on a CUDA
// backend (prof::ProfilingSession), cancellation and progress between iterations; then the figures,
// the outputs and the trace. Qt-free.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/session/figures.h"
#include "engine/compiler/compile.h"
#include "engine/ir/graph.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/fallback.h"
#include "profiler/analysis/compare.h"
#include "profiler/record/profiling_session.h"
#include "profiler/trace/trace.h"

namespace ms::session {

struct RunRequest {
  runtime::ExecMode mode = runtime::ExecMode::PyNative;
  int iters = 10;                    // timed iterations (at least 1)
  int warmup = 2;                    // iterations before them, never timed nor observed
  compiler::CompileOptions compile;  // Graph mode: jit level, disabled passes
  // Record the timed iterations and build their trace; on a CUDA backend with GPU activity
  // (profiling.gpu_activity), CUPTI runs from the first timed iteration to the last.
  bool profile = false;
  prof::ProfilingOptions profiling;
  std::map<std::string, std::string> metadata;  // trace metadata: model name, jit level, ...
  // Also observes the timed iterations, profiled or not (tests, a caller's own statistics).
  runtime::RunObserver* observer = nullptr;
  // Sees every value of the last iteration as it is produced (numerics: capture, the NaN trap).
  runtime::ValueTap* tap = nullptr;
  // Graph mode: runs this executor, compiled before for the inputs' shapes or their bucket
  // (compile_cache.h), instead of compiling (compile_ms stays 0). It must outlive the run.
  compiler::CompiledExecutor* executor = nullptr;
  // With `executor`: whether it compiled for this run (its caller's first call for these shapes).
  // The trace records the executor's compile time either way (what Graph mode costs, for the
  // comparison's break-even), and metadata `compile_cached` says whether this run paid it.
  bool executor_compiled_now = false;
  // Graph mode, compiled here for a caller that reads the model's constants no more once the run
  // ends (the CLI's Graph-only run): a weight that every kernel reading it packed gives its plain
  // bytes back as the first iteration packs it (GraphExecutor::release_constants_once_packed), so
  // peak memory holds the weights once. The model shares those buffers: the caller must not read
  // its constants after. Ignored with `executor`, `tap` or `profile`, which read them.
  bool release_packed_weights = false;
};

// Told between iterations; both may be called from the thread that runs the loop.
class RunCallbacks {
 public:
  virtual ~RunCallbacks() = default;
  // Checked before every iteration and handed to the executors, which check it between steps.
  virtual bool cancelled() const { return false; }
  // Fraction of the loop in [0, 1] and what runs now ("Compiling", "graph iteration 3 of 12").
  virtual void progress(double /*fraction*/, const std::string& /*what*/) {}
};

struct RunResult {
  runtime::ExecMode mode = runtime::ExecMode::PyNative;
  std::vector<std::string> output_names;
  std::vector<Tensor> outputs;       // of the last iteration (host copies when observed)
  std::vector<double> latencies_ms;  // per timed iteration, wall clock around run()
  LatencySummary latency;
  double compile_ms = 0;
  size_t peak_bytes = 0;  // of the last iteration
  int64_t kernels_per_iter = 0;
  size_t nodes = 0;  // of the graph as given
  // The timed iterations' threads waited for a CPU this share of their time (run-queue wait over
  // wall time x the backend's threads): other processes on the cores the run asked for. Above a few
  // percent the latencies measure the machine's load as much as the model (cpu_wait_note). -1 where
  // the system does not say.
  double cpu_wait_share = -1;
  // What the run needs, known before it starts: the weights (mapped external ones count: the run
  // reads them) and, in Graph mode, the planned arena. A run needing more than the machine has
  // available is refused before its first iteration.
  // Graph mode also counts the packed copies oneDNN makes of the weights its convs and matmuls read
  // (about their size); a mapped weight no op packs stays on disk until it is read.
  uint64_t weight_bytes = 0, arena_bytes = 0, packed_bytes = 0;
  // Of weight_bytes, what went back once packed (RunRequest::release_packed_weights).
  uint64_t released_bytes = 0;
  // Graph mode: the compiled executor (passes, snapshots, memory plan, replay). It refers to the
  // backend, which must outlive it.
  std::unique_ptr<compiler::CompiledExecutor> compiled;
  // Graph mode: the executor that ran (compiled's, or the request's).
  const compiler::CompiledExecutor* executor = nullptr;
  // Profiled runs only.
  prof::TracePtr trace;
  uint64_t recorded_events = 0;
  double build_ms = 0;       // trace post-processing
  uint64_t gpu_records = 0;  // CUPTI kernels + copies + memsets merged into the trace
  std::string gpu_note;      // why GPU activity is missing (empty: collected, or not a GPU run)
  // Ops that did not run as asked on this backend (CPU fallback, another precision), counted.
  std::vector<runtime::Fallback> fallbacks;
};

// A run whose threads waited for a CPU at least this share of the time is noted as inflated.
inline constexpr double kCpuWaitNoted = prof::kDisturbedCpuWait;
// "its threads waited for a CPU 38% of the time (...)" for a RunResult::cpu_wait_share at or above
// kCpuWaitNoted; empty below it or where unknown.
std::string cpu_wait_note(double share);

// Without callbacks: no progress and nothing to cancel, so the executors poll no predicate.
Expected<RunResult> run_model(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                              const RunRequest& request, RunCallbacks& callbacks);
Expected<RunResult> run_model(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                              const RunRequest& request);

// Several runs of the same loop with their iterations interleaved in turns of `turn` iterations
// (the first's iterations i..i+turn-1, the second's, ..., then i+turn), so a change in machine load
// hits all alike (bench). With turns longer than one, each turn after the first (past the warm-up)
// starts with one untimed iteration: the timed ones then find their weights and arena in the
// caches as in a loop of their own (a framework's benchmark loop), not evicted by the other mode's
// iteration. At most one of them may profile: two GPU collectors cannot run at once.
struct InterleavedRun {
  const ir::Graph* graph = nullptr;
  const runtime::TensorMap* inputs = nullptr;
  runtime::Backend* backend = nullptr;
  RunRequest request;
};
Expected<std::vector<RunResult>> run_interleaved(const std::vector<InterleavedRun>& runs, RunCallbacks& callbacks,
                                                 int turn = 1);
Expected<std::vector<RunResult>> run_interleaved(const std::vector<InterleavedRun>& runs, int turn = 1);

}  // namespace ms::session
