// The two executors. Both take a graph, a backend and inputs by name, and produce the graph's
// outputs in order; a RunObserver may watch. They produce the same outputs.
//   EagerExecutor (PyNative): node by node, as an eager program would dispatch: infer shapes from
//     the actual inputs, allocate outputs from the caching allocator, look the kernel up, run, free
//     each value after its last use (or keep intermediates for inspection).
//   GraphExecutor (Graph): compiled once per input signature into a plan (order, static shapes,
//     kernels, one arena with offsets from liveness); run() only binds and launches.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/amp.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/observer.h"

namespace ms::compiler {
struct CompileResult;  // engine/compiler/pipeline.h: snapshots and per-pass reports
}

namespace ms::runtime {

using TensorMap = std::map<std::string, Tensor>;

struct RunOptions {
  RunObserver* observer = nullptr;
  bool keep_intermediates = false;    // eager: keep every value for inspection
  std::function<bool()> cancelled;    // polled between ops
  int iteration = 0;
};

struct RunStats {
  int64_t kernels = 0;          // kernels launched in the last run
  size_t peak_bytes = 0;        // peak bytes of activations (allocator in_use or arena size + dynamic)
};

class EagerExecutor {
 public:
  EagerExecutor(const ir::Graph& graph, Backend& backend);
  ~EagerExecutor();
  Expected<std::vector<Tensor>> run(const TensorMap& inputs, const RunOptions& options = {});
  // Values kept by the last run with keep_intermediates.
  const TensorMap& intermediates() const;
  RunStats last_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Memory plan of a compiled graph: one arena, a slot per planned value.
struct MemorySlot {
  std::string value;
  ir::NodeId producer;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int first_step = 0;  // step that defines the value
  int last_step = 0;   // last step that reads it
  std::string reuses;  // value whose block this one takes over in place ("" none)
  int thread = 0;      // CPU thread (branch) of the producing step, from the branch scheduler
  int within = -1;             // index of the slot this value lives inside (a Concat's output it is
  uint64_t within_offset = 0;  // a part of), at this byte offset in it; -1: a block of its own
};
struct MemoryPlan {
  uint64_t arena_bytes = 0;
  uint64_t lower_bound = 0;  // max over steps of live bytes (blocks shared in place count once)
  uint64_t naive_bytes = 0;  // sum of every planned value's size (no reuse at all)
  std::vector<MemorySlot> slots;
  std::vector<uint64_t> live;  // per step: bytes of the blocks live at it (lower_bound is the max)
};

// Which Graph-mode pipeline runs (MindSpore's jit_level): O0 only what execution needs (type
// inference, memory planning); O1 adds the graph-level optimizations; O2 adds layout and
// scheduling work.
enum class JitLevel { O0, O1, O2 };

struct CompileOptions {
  // Values that stay alive to the end (graph outputs always do).
  bool plan_memory = true;
  JitLevel jit_level = JitLevel::O1;
  std::vector<std::string> disabled_passes;  // pass arguments left out of the pipeline
  int stop_after = -1;           // run only the first N passes of the pipeline (-1: all)
  bool keep_snapshots = true;    // a snapshot of the graph after each pass (compiler::Snapshot)
  bool verify_passes = false;    // ir::verify after each pass (tests, debugging)
  bool inplace = true;           // let elementwise outputs take over a dying input's block
  bool parallel_branches = true; // O2: run independent branches on concurrent CPU threads
  AmpLevel amp = AmpLevel::O0;   // mixed precision: O1..O3 put the amp-cast pass first (runtime/amp.h)
};

class GraphExecutor {
 public:
  // Compiles for the given input signature (each graph input's dtype and shape).
  static Expected<std::unique_ptr<GraphExecutor>> compile(const ir::Graph& graph, Backend& backend,
                                                          const std::map<std::string, ir::ValueType>& signature,
                                                          const CompileOptions& options = {});
  ~GraphExecutor();
  Expected<std::vector<Tensor>> run(const TensorMap& inputs, const RunOptions& options = {});
  const MemoryPlan& memory_plan() const;
  const ir::Graph& graph() const;  // the graph as compiled (types filled in)
  // Snapshots after each pass and the pass reports (engine/compiler/pipeline.h).
  const compiler::CompileResult& compile_result() const;
  // Concurrent branch (CPU thread) of each step, in step order (all 0 unless O2 found branches).
  const std::vector<int>& step_threads() const;
  double compile_ms() const;
  RunStats last_stats() const;
  size_t num_steps() const;
  // Whole-graph replay (O2 on a backend that records device work, i.e. CUDA Graphs): whether the
  // last run launched the recorded graph, and otherwise why the runs launch step by step ("" while
  // the recording is still ahead: the first runs learn the plan's kernel scratch).
  bool replayed() const;
  const std::string& replay_note() const;

 private:
  GraphExecutor();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Infers every value's type in `g` (and subgraphs) from the graph inputs' types, folding small
// constant shape computations on the CPU. Fills g's Value types. Errors name the node.
Status infer_graph_types(ir::Graph& g, Backend* fold_backend);

}  // namespace ms::runtime
