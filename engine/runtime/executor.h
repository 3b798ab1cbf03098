// The two executors. Both take a graph, a backend and inputs by name, and produce the graph's
// outputs in order; a RunObserver may watch. They produce the same outputs.
//   EagerExecutor (PyNative): node by node, as an eager program would dispatch: infer shapes from
//     the actual inputs, allocate outputs from the caching allocator, look the kernel up, run, free
//     each value after its last use (a value tap, value_tap.h, sees each as it is made).
//   GraphExecutor (Graph): runs an Executable the compiler made once per input signature (order,
//     static shapes, kernels, one arena with offsets from liveness); run() only binds and launches.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executable.h"
#include "engine/runtime/observer.h"
#include "engine/runtime/value_tap.h"

namespace ms::runtime {

using TensorMap = std::map<std::string, Tensor>;

struct RunOptions {
  RunObserver* observer = nullptr;
  std::function<bool()> cancelled;  // polled between ops
  ValueTap* tap = nullptr;          // sees every top-level step's values (value_tap.h)
  int iteration = 0;
};

struct RunStats {
  int64_t kernels = 0;    // kernels launched in the last run
  size_t peak_bytes = 0;  // peak bytes of activations (allocator in_use or arena size + dynamic)
};

// Advises the OS that the graph's host constants of 1 MiB or more are about to be read in full
// (advise_will_read): a run or a compile reads every weight, so a model's mapped external weights
// then come from storage in large reads ahead of the kernels rather than a page per fault (437 MB
// of a cold transformer encoder's weights: a first PyNative run of 8.8 s). PyNative's executor
// and the Graph-mode compile call it once.
void advise_constants_will_be_read(const ir::Graph& g);

class EagerExecutor {
 public:
  EagerExecutor(const ir::Graph& graph, Backend& backend);
  ~EagerExecutor();
  Expected<std::vector<Tensor>> run(const TensorMap& inputs, const RunOptions& options = {});
  RunStats last_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs an Executable (the compiler's product: engine/compiler/compile.h builds it and pairs it with
// an executor). Holds what changes from run to run: the arena, kernel scratch learned on the first
// run, the whole-graph recording, worker threads.
class GraphExecutor {
 public:
  GraphExecutor(std::shared_ptr<const Executable> executable, Backend& backend);
  ~GraphExecutor();
  // Allocates the arena of the executable's plan; the first error a run would otherwise hit.
  Status prepare();
  Expected<std::vector<Tensor>> run(const TensorMap& inputs, const RunOptions& options = {});
  const Executable& executable() const;
  // The plan of the last run: the compiled one, grown once kernel scratch is known.
  const MemoryPlan& memory_plan() const;
  const ir::Graph& graph() const;  // the graph as compiled (types filled in)
  // Concurrent branch (CPU thread) of each step, in step order (all 0 unless O2 found branches).
  const std::vector<int>& step_threads() const;
  RunStats last_stats() const;
  size_t num_steps() const;
  // Whole-graph replay (O2 on a backend that records device work, i.e. CUDA Graphs): whether the
  // last run launched the recorded graph, and otherwise why the runs launch step by step ("" while
  // the recording is still ahead: the first runs learn the plan's kernel scratch).
  bool replayed() const;
  const std::string& replay_note() const;

  // For an owner that reads the graph's constants no more (the CLI's Graph-only run): from the next
  // run on (CPU), a constant whose every reader keeps a packed copy of it
  // (KernelContext::keeps_packed_copy) gives its bytes back once the last of those readers ran, so
  // the weights are not held twice, as a runtime that packs its weights at load time frees the
  // originals. Constants that are graph outputs, default graph inputs, read by a subgraph or share
  // bytes with another constant are kept, and a graph with subgraphs keeps all. The source graph, the
  // compile's snapshots and taps share these buffers: none of them may read a released constant's
  // bytes (Buffer::released). Off unless called; it cannot be undone.
  void release_constants_once_packed();
  uint64_t released_bytes() const;  // given back so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ms::runtime
