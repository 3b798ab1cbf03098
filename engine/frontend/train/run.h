// A whole training run of a zoo template, shared by the CLI (`train`, `compare --train`), the GUI
// and the tests: the template adapted to the data (input size, class count, batch), the data split
// and loader, the loss, the optimizer and lr schedule, the training step in one mode, and the test
// accuracy at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/compiler/amp.h"
#include "engine/compiler/pipeline.h"
#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/train/data_parallel.h"
#include "engine/frontend/train/loss_scale.h"
#include "engine/runtime/executor.h"

namespace ms::nn::train {

struct RunOptions {
  std::string model;  // zoo:NAME?key=value&...
  Mode mode = Mode::PyNative;
  compiler::JitLevel jit_level = compiler::JitLevel::O1;
  std::vector<std::string> disabled_passes;  // Graph mode: passes left out of the step's compile
  std::string optimizer = "sgd";             // sgd | adam | adamw
  double lr = 0;                             // 0: the optimizer's default (sgd 0.05, adam/adamw 0.001)
  std::string schedule = "constant";         // constant | step | cosine
  int64_t lr_warmup = 0;
  double momentum = 0.9;
  double weight_decay = 0;  // biases and norm parameters are never decayed
  double label_smoothing = 0;
  int64_t steps = 200;
  int64_t batch = 0;          // 0: the template's batch parameter
  std::string data = "auto";  // digits | synthetic | auto (digits when the template can take 8x8 images)
  std::string data_dir;       // digits files; "" finds samples/data
  int64_t test_size = 360;    // digits: 1,437 train / 360 test
  uint64_t seed = 0;          // data split, shuffling and synthetic values (init: the URI's seed)
  bool evaluate = true;       // test accuracy at the end
  // Mixed precision (autocast at this level in both modes; evaluation too) and loss scaling.
  // bf16 keeps f32's exponent range, so no loss scaling is the default.
  compiler::AmpLevel amp = compiler::AmpLevel::O0;
  LossScaleConfig loss_scale;
  // Profiling: the last step reports to this observer (TrainStep::observe_next_step); the result
  // keeps the graph it ran and, in Graph mode, its memory plan, for building the trace.
  runtime::RunObserver* observe_last_step = nullptr;
  // Data parallel over the world communicator (dist::init first): `batch` is the global batch and
  // each rank trains on its slice. Unset: the auto parallel context decides (nn/context.h).
  std::optional<DataParallelConfig> data_parallel;
  bool keep_parameters = false;  // RunResult::final_parameters (tests compare the trained weights)
  // Polled before every step (and between the step's compile passes): true stops the run with a
  // Cancelled error. Empty: never cancelled.
  std::function<bool()> cancelled;
};

struct StepSummary {
  double median = 0, p10 = 0, p90 = 0, mean = 0, min = 0;
};
StepSummary summarize_steps(std::vector<double> ms);

struct RunResult {
  std::string model;  // canonical URI after adapting the template to the data
  std::string data;   // "digits" | "synthetic"
  int64_t train_examples = 0, test_examples = 0;
  int64_t parameters = 0;
  double lr = 0;                // base lr used
  std::vector<double> losses;   // one per step
  std::vector<double> lrs;      // lr of each step
  std::vector<double> step_ms;  // every step; the first includes tracing and compiling in Graph mode
  StepSummary steady;           // steps 2..N (all when N == 1)
  double compile_ms = 0;        // sum over steps
  // Graph mode: the passes that compiled the step (per-pass ms, node counts before and after).
  std::vector<compiler::PassReport> passes;
  int64_t peak_bytes = 0;  // max over steps
  double accuracy = -1;    // test accuracy, -1 when not measured
  int64_t correct = 0;
  double loss_scale = 0;      // final scale (0 without loss scaling)
  int64_t skipped_steps = 0;  // steps loss scaling skipped (inf/NaN gradients)
  // Data parallel: this rank among world_size; per step, the gradient collectives' ms and the share
  // of them that overlapped the backward (PyNative buckets; Graph: AllReduceStart ... Wait).
  int world_size = 1, rank = 0;
  std::vector<double> allreduce_ms, overlap;
  std::vector<std::vector<CollectiveEvent>> collectives;  // per step (the trace's collective events)
  std::string communicator;                               // "local", "mpi", "nccl" ("" when not data parallel)
  int sync_batchnorm_layers = 0;  // BatchNorm layers taking statistics over every rank (sync_batchnorm)
  // With keep_parameters: the trained parameters (copies), by name in parameter order.
  std::vector<std::pair<std::string, Tensor>> final_parameters;
  // With observe_last_step: what that step ran (PyNative: its eager ops, one node each).
  std::optional<ir::Graph> observed_graph;
  std::optional<runtime::MemoryPlan> observed_plan;
};

// Called after every step (1-based).
using StepCallback = std::function<void(int64_t step, double loss, double step_ms)>;

// The template's URI adapted to the data: batch; for digits size=8 and classes=10 where the
// template takes them. "auto" data is digits when the template has size and classes parameters and
// one f32 [batch,1,size,size] input, else synthetic. Errors when the template cannot take the data.
struct Adapted {
  std::string model;  // canonical URI
  std::string data;   // digits | synthetic
};
Expected<Adapted> adapt_model(const RunOptions& o);

Expected<RunResult> run_training(const RunOptions& o, const StepCallback& on_step = {});

}  // namespace ms::nn::train
