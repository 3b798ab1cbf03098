// What a Graph-mode compile is asked for. Every threshold the compiler decides by is a named field
// here, with the measurement behind its default; environment variables only override a few of them,
// read in one place (with_environment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/compiler/amp.h"

namespace ms::compiler {

class PassManager;

// Which Graph-mode pipeline runs (MindSpore's jit_level): O0 only what execution needs (type
// inference, memory planning); O1 adds the graph-level optimizations; O2 adds layout and
// scheduling work.
enum class JitLevel { O0, O1, O2 };

// The level `run`, `bench`, `compare`, `profile` and the app's Run panel start at: the fastest on the
// bench set (scripts/bench-peers, 2 threads, batch 1: O2 ahead on every CNN, ResNet-50 52 against 65
// ms, MobileNetV2 9 against 16, ConvNeXt-T 67 against 116; the transformers within the spread).
// CompileOptions below keep O1 for the library and the training step.
inline constexpr JitLevel kDefaultJitLevel = JitLevel::O2;
inline constexpr const char* kDefaultJitLevelName = "O2";

struct CompileOptions {
  JitLevel jit_level = JitLevel::O1;
  std::vector<std::string> disabled_passes;  // pass arguments left out of the pipeline
  int stop_after = -1;                       // run only the first N passes of the pipeline (-1: all)
  // With stop_after N > 0: pass N-1 applies only its first this many rewrites (-1: all). Pass
  // bisection cuts a pass after rewrite k this way (work.h, take_rewrite).
  int64_t rewrite_budget = -1;
  // Called on the level's pipeline before it runs: tests plant passes in it (a pass that perturbs
  // one output, for bisection), an embedding program adds its own.
  std::function<void(PassManager&)> customize_pipeline;
  bool keep_snapshots = true;     // a snapshot of the graph after each pass (compiler::Snapshot)
  bool verify_passes = false;     // ir::verify after each pass (tests, debugging)
  bool plan_memory = true;        // one arena with offsets from liveness (off: every value allocated)
  bool inplace = true;            // let elementwise outputs take over a dying input's block
  bool view_aliases = true;       // Reshape-like outputs in their input's bytes (no copy), CPU
  bool parallel_branches = true;  // O2: run independent branches on concurrent CPU threads / streams
  AmpLevel amp = AmpLevel::O0;    // mixed precision: O1..O3 put the amp-cast pass first (compiler/amp.h)
  // With amp: the matrix ops reading a graph input as fed (an image model's first conv, a patch
  // embedding) compute in f32, as quantization keeps its first layer wider. Inference precision
  // (--precision bf16) sets it; training AMP leaves it off, so eager autocast makes the same choices.
  bool amp_input_layers_f32 = false;
  // The type AMP computes in: bf16, or f16 (--precision fp16; a device's, the CPU has no f16 math).
  DType amp_type = DType::BF16;
  // A shape bucket: the signature's symbolic dims (-1, named by the type's dim_params) with the
  // largest size each takes in the bucket; the bucket holds the sizes in (bound / 2, bound]. Types
  // are inferred across that range (compiler/infer.h, SymbolicRangesScope), values whose shape
  // depends on the dims are inferred again at run time and get arena blocks planned for the bounds,
  // and a run at a size outside the range is refused (compiler/buckets.h).
  std::map<std::string, int64_t> dim_bounds;

  // Concurrent branches on the CPU (O2).
  // Each branch must keep at least two threads: on 2 cores, splitting them one per branch made the
  // Inception block 0.73x PyNative against 1.30x with the branches in order.
  int branch_min_threads = 4;
  // Kept when at least this share of the work overlaps (an Inception block) ...
  double branch_min_overlap = 0.5;
  // ... or when the memory lower bound grows by at most this factor (projections side by side); a
  // ResNet, where only the downsampling shortcut overlaps, stays sequential.
  double branch_max_memory_growth = 1.1;
  // Happens-before bitsets are n^2 bits: longer programs stay sequential.
  size_t branch_max_steps = 4096;
  // A step under this cost (FLOPs + bytes, compiler/schedule.h) runs on one thread at O2: about
  // 2e5 is ~10 us on one core, while waking and joining a team of threads costs a few us.
  double parallel_step_min_cost = 2e5;
  // The scratch a kernel may take for a faster algorithm (Winograd) is the room under the larger of
  // the values' lower bound times (1 + scratch_over_lower_bound) and the bound plus
  // scratch_min_room, beside the values live at the step: a large model's arena grows at most 5%, a
  // small one's by 8 MiB at most. ResNet-50's layer-2 Winograd convs need 7.2 MiB beyond the bound
  // (arena 5.1 -> 12.3 MiB); they run in 0.55 instead of 1.1 ms each at 2 threads (model 4% faster,
  // 15% at one thread).
  double scratch_over_lower_bound = 0.05;
  uint64_t scratch_min_room = uint64_t{8} << 20;

  // CUDA (O2). Whole-graph replay as a CUDA Graph when every step is recordable
  // (MODESCOPE_CUDA_GRAPHS=0 turns it off).
  bool cuda_graphs = true;
  // Branches on this many streams (MODESCOPE_CUDA_STREAMS=N). Measured on an H200: the Inception
  // block 1.21x faster on 4 streams, resnet50 batch 1 no faster (only its shortcuts overlap).
  int cuda_streams = 1;

  // Polled between passes and between the closing stages: true stops the compile with a Cancelled
  // error (a job's cancel button). Empty: never cancelled.
  std::function<bool()> cancelled;
};

// `options` with the environment's overrides applied (MODESCOPE_CUDA_GRAPHS, MODESCOPE_CUDA_STREAMS);
// `notes` gets one line per override taken.
CompileOptions with_environment(CompileOptions options, std::vector<std::string>* notes = nullptr);

}  // namespace ms::compiler
