// Numerics work on a model, shared by the CLI (inspect, diff, bisect) and the app; Qt-free. Every run
// goes through the one run loop (run_loop.h) with a value tap on its last iteration.
//   capture_values  one run in either mode keeping chosen intermediate values (or trapping the first
//                   non-finite one)
//   diff_modes      both modes on the same inputs, every Graph value aligned with the PyNative value
//                   it stands for (runtime/mode_diff.h)
//   bisect_passes   the first pass, and inside it the first rewrite, after which Graph mode's
//                   outputs leave the tolerance against PyNative's
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/session/mode_run.h"
#include "app/session/run_loop.h"
#include "engine/compiler/options.h"
#include "engine/ir/graph.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/mode_diff.h"
#include "engine/runtime/value_capture.h"

namespace ms::session {

// Where Graph-mode runs get their compiled graphs instead of compiling their own: the app's compile
// cache (run_numerics with a cache), which counts what it compiled and what it found compiled.
class GraphSource {
 public:
  virtual ~GraphSource() = default;
  struct Compiled {
    compiler::CompiledExecutor* executor = nullptr;
    runtime::Backend* backend = nullptr;  // the one the executor runs on
  };
  // The graph of the inputs' bucket with the pipeline cut as asked, for a run of `iterations`
  // (0: the graph alone is wanted); it stays valid until the next call or the source's end.
  virtual Expected<Compiled> graph_for(const runtime::TensorMap& inputs, PipelineCut cut, int iterations) = 0;
  // The last run on the graph graph_for gave failed (not cancelled): that graph is not kept.
  virtual void run_failed() = 0;
};

struct CaptureRequest {
  runtime::ExecMode mode = runtime::ExecMode::PyNative;
  compiler::CompileOptions compile;  // Graph mode
  GraphSource* graphs = nullptr;     // Graph mode: the compiled graph from there (its cut: compile's)
  runtime::CaptureOptions capture;
  int warmup = 0;  // iterations before the captured one (Graph mode: kernel scratch learned)
};

struct CaptureResult {
  runtime::ExecMode mode = runtime::ExecMode::PyNative;
  std::vector<runtime::CapturedValue> values;  // in the order they were produced
  std::vector<std::string> output_names;
  std::vector<Tensor> outputs;  // host copies, independent of the backend
  // What ran: the model with its types (PyNative), or the compiled graph (Graph mode).
  std::shared_ptr<const ir::Graph> graph;
  size_t kept_bytes = 0, over_budget = 0;
  double run_ms = 0;  // the captured iteration, capture included
  // The trap fired: where, and the run's error (the trap's message). Outputs are then empty.
  std::optional<runtime::NonFiniteTrap> trap;
  std::string error;
};

// A run with a trap that fires returns its result (trap set), not an error.
// `callbacks` (may be null): cancellation between runs and steps, progress.
Expected<CaptureResult> capture_values(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                                       const CaptureRequest& request, RunCallbacks* callbacks = nullptr);

struct DiffRequest {
  compiler::CompileOptions compile;
  double tol = 1e-4;
  size_t budget_bytes = 0;  // per mode; 0: no limit
  GraphSource* graphs = nullptr;
};

struct DiffResult {
  runtime::ModeDiff diff;
  CaptureResult pynative, graph;
  double diff_ms = 0;  // aligning and comparing, after the runs
};

Expected<DiffResult> diff_modes(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                                const DiffRequest& request, RunCallbacks* callbacks = nullptr);

struct BisectRequest {
  compiler::CompileOptions compile;  // jit level, disabled passes, planted passes
  double tol = 1e-4;                 // largest relative error of any output against PyNative's
  bool rewrites = true;              // then bisect over the guilty pass's rewrites
  GraphSource* graphs = nullptr;     // every cut's compiled graph from there
};

// One Graph-mode run of the bisection: the pipeline cut after `passes` passes (-1: all), the last
// of them after `rewrites` rewrites (-1: all).
struct BisectProbe {
  int passes = -1;
  int64_t rewrites = -1;
  double error = 0;
  bool within = true;
};

struct BisectResult {
  double tol = 0;
  bool clean = false;             // the whole pipeline stays within the tolerance
  bool at_start = false;          // even with no pass the output is outside it (a kernel, not a pass)
  double full_error = 0;          // all passes
  int pass_index = -1;            // the first pass after which the output leaves the tolerance
  std::string pass;               // its argument
  int64_t pass_rewrites = 0;      // rewrites that pass applies (0: it counts none)
  int64_t rewrite = -1;           // the first of them that leaves the tolerance (1-based; -1 not found)
  std::vector<ir::NodeId> nodes;  // the nodes that rewrite made or changed (in `after`)
  std::shared_ptr<const ir::Graph> before, after;  // the compiled graphs around the guilty rewrite
  std::vector<BisectProbe> probes;      // every Graph-mode run, in order (the PyNative reference not counted)
  std::vector<std::string> pass_names;  // the pipeline, in order
  std::string summary() const;          // one line
};

Expected<BisectResult> bisect_passes(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                                     const BisectRequest& request, RunCallbacks* callbacks = nullptr);

// The app's numerics jobs, asked for by names as its runs are (mode_run.h: device, threads, jit
// level, batch, disabled passes; inputs as run_mode makes them).
struct NumericsJob {
  enum class Kind { Diff, Bisect, Trap };
  Kind kind = Kind::Diff;
  ModeRun run;
  double tol = 1e-4;
  size_t budget_bytes = size_t{512} << 20;  // per mode, for the diff's copies
};

struct NumericsOutcome {
  std::string backend, note;
  std::optional<DiffResult> diff;
  std::optional<BisectResult> bisect;
  std::vector<CaptureResult> traps;  // Trap: PyNative, then Graph mode
  // With a compile cache: the job's Graph-mode graphs compiled and its runs' iterations that found
  // theirs compiled (the run report's compiles and cache_hits).
  std::optional<CompileCounts> graphs;
};

// With `cache` holding `g`, the Graph-mode runs take their compiled graphs from it (those of the
// Run panel's runs with the same options among them) and leave theirs there, bisection's cuts too.
Expected<NumericsOutcome> run_numerics(const ir::Graph& g, const NumericsJob& job, RunCallbacks& callbacks,
                                       CompileCache* cache = nullptr);

}  // namespace ms::session
