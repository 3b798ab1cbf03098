// The pass pipelines per JitLevel and their driver (compile.h runs it as its first stage):
//   O0  only what execution needs: type inference (then memory planning)
//   O1  + graph-level optimizations: simplification, constant folding, CSE, BatchNorm folding,
//       operator fusion, DCE
//   O2  + layout work (conv activations in oneDNN's blocked layout) and scheduling (branch
//       scheduler) (and, on CUDA, whole-graph replay later)
// Memory planning and scheduling run on the final graph in compile.h's later stages (they need the
// kernel plan); they are listed here as the pipeline's closing stages.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/compiler/diff.h"
#include "engine/compiler/instrumentations.h"
#include "engine/compiler/options.h"
#include "engine/runtime/backend.h"

namespace ms::compiler {

struct JitConfig {
  JitLevel jit_level = JitLevel::O1;
  std::vector<std::string> disabled_passes;     // pass arguments (or names)
  int stop_after = -1;                          // run passes [0, n) only; -1 all
  int64_t rewrite_budget = -1;                  // with stop_after n > 0: pass n-1 applies its first this many rewrites
  std::function<void(PassManager&)> customize;  // called on the pipeline before it runs (planted passes)
  bool snapshots = true;                        // keep a snapshot after each pass
  bool verify = false;                          // ir::verify after each pass (tests, debug builds)
  AmpLevel amp = AmpLevel::O0;                  // O1..O3: the amp-cast pass runs first (compiler/amp.h)
  bool amp_input_layers_f32 = false;            // white ops reading a graph input stay f32 (inference bf16)
  DType amp_type = DType::BF16;                 // the low type: bf16, or f16 (a device's --precision fp16)
  std::function<bool()> cancelled;              // polled before each pass: true stops with Cancelled
};

Expected<JitLevel> parse_jit_level(const std::string& s);  // "O0" | "O1" | "O2"
const char* jit_level_name(JitLevel l);

// The passes of a level, in order (backend used for folding; may be null for listing). An AMP level
// other than O0 puts the amp-cast pass first.
PassManager build_pipeline(JitLevel level, runtime::Backend* backend, AmpLevel amp = AmpLevel::O0,
                           bool amp_input_layers_f32 = false, DType amp_type = DType::BF16);

struct PipelineEntry {
  std::string argument, name, description;
};
// Passes of a level plus the closing stages (memory planning, scheduling), for --list; with
// `data_parallel` the data-parallel passes too.
std::vector<PipelineEntry> describe_pipeline(JitLevel level, AmpLevel amp = AmpLevel::O0, bool data_parallel = false);

// A data-parallel training step's passes (insert-allreduce, then fuse-allreduce with `fusion`),
// right after type inference, before any fusion can merge a gradient's producer with the update
// rule. Given to the compile as CompileOptions::customize_pipeline.
struct DataParallelPasses {
  bool mean = true;            // gradients_mean
  std::vector<int64_t> split;  // all_reduce_fusion as split indices
  double size_mb = 0;          // or as a size in MiB (neither: one fused collective)
};
void add_data_parallel_passes(PassManager& pm, const DataParallelPasses& dp);

// Every name --disable accepts: the argument and the name of each pass of any level (amp-cast
// included) and of the closing stages (plan-memory, branch-schedule). Error: the first unknown name
// and the list of valid arguments (a typo must not silently leave the pass on).
Status check_pass_names(const std::vector<std::string>& names);

// One row of the pass report.
struct PassReport {
  int index = 0;
  std::string pass;  // argument
  bool ran = true;
  bool changed = false;
  double ms = 0;
  size_t nodes_before = 0, nodes_after = 0;
  size_t added = 0, removed = 0, rewritten = 0, fused = 0;
  WorkCounters work;  // what the pass did (its snapshot copy included), counted
};

struct CompileResult {
  std::vector<Snapshot> snapshots;  // [0] the input graph, then one per pass
  std::vector<PassReport> reports;
  double passes_ms = 0;
  WorkCounters work;  // all passes together (the memory plan runs later: see WorkScope)
};

// Runs the pipeline of `config` on `g` in place.
Expected<CompileResult> run_pipeline(ir::Graph& g, runtime::Backend* backend, const JitConfig& config);

}  // namespace ms::compiler
