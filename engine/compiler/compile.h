// Graph-mode compilation: a graph and CompileOptions in, a CompiledGraph out. The compile runs in
// named stages, each a short function in compile.cpp:
//   passes      the pipeline of the jit level (pipeline.h), snapshots and per-pass reports
//   types       every value's type on the final graph
//   kernels     the program (values numbered into slots) with each step's kernel resolved
//   values      the planned values: liveness, in-place pairs, Concat inputs inside their output
//   schedule    concurrent branches (CPU threads or CUDA streams) and steps too small to share
//   memory      the arena plan, and each step's room for kernel scratch
//   replay      whether the whole graph can be recorded and replayed (CUDA Graphs)
// The runtime only executes the product (runtime::Executable, runtime::GraphExecutor).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/compiler/options.h"
#include "engine/compiler/pipeline.h"
#include "engine/compiler/work.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/fallback.h"

namespace ms::compiler {

using Signature = std::map<std::string, ir::ValueType>;

struct StageTime {
  std::string stage;
  double ms = 0;
};

struct CompiledGraph {
  std::shared_ptr<const runtime::Executable> executable;  // what the runtime runs
  CompileResult passes;                                   // snapshots after each pass, and the per-pass reports
  std::vector<StageTime> stages;                          // time of each compile stage
  WorkCounters work;  // the whole compile's work (passes, types, memory plan), counted
  // Per step: "op_type (node) -> backend kernel" or "... -> cpu-fallback" for ops a device runs on
  // the host.
  std::vector<std::string> kernels;
  // What the user should know: environment overrides taken, ops that fall back to the CPU, why the
  // whole graph is not replayed.
  std::vector<std::string> notes;
  // The ops the backend runs through its CPU fallback, counted (runtime/fallback.h).
  std::vector<runtime::Fallback> fallbacks;
  double compile_ms = 0;

  const ir::Graph& graph() const { return executable->graph; }
  const runtime::MemoryPlan& memory_plan() const { return executable->plan; }
};

// Compiles `graph` for `signature` (each graph input's dtype and shape) on `backend`. The closing
// stages can be disabled by name like passes: "plan-memory" (every value allocated per run) and
// "branch-schedule" (no concurrent branches); an unknown name is an error listing the valid ones.
Expected<CompiledGraph> compile(const ir::Graph& graph, runtime::Backend& backend, const Signature& signature,
                                const CompileOptions& options = {});

// A compiled graph and an executor over it: compile once, run many times.
class CompiledExecutor {
 public:
  CompiledExecutor(CompiledGraph compiled, runtime::Backend& backend);
  Expected<std::vector<Tensor>> run(const runtime::TensorMap& inputs, const runtime::RunOptions& options = {}) {
    return executor_.run(inputs, options);
  }
  const CompiledGraph& compiled() const { return compiled_; }
  runtime::GraphExecutor& executor() { return executor_; }
  const CompileResult& compile_result() const { return compiled_.passes; }
  double compile_ms() const { return compiled_.compile_ms; }
  const runtime::MemoryPlan& memory_plan() const { return executor_.memory_plan(); }
  const ir::Graph& graph() const { return executor_.graph(); }
  const std::vector<int>& step_threads() const { return executor_.step_threads(); }
  runtime::RunStats last_stats() const { return executor_.last_stats(); }
  size_t num_steps() const { return executor_.num_steps(); }
  bool replayed() const { return executor_.replayed(); }
  const std::string& replay_note() const { return executor_.replay_note(); }

 private:
  CompiledGraph compiled_;
  runtime::GraphExecutor executor_;
};

// compile() and an executor with its arena allocated.
Expected<std::unique_ptr<CompiledExecutor>> compile_executor(const ir::Graph& graph, runtime::Backend& backend,
                                                             const Signature& signature,
                                                             const CompileOptions& options = {});

}  // namespace ms::compiler
