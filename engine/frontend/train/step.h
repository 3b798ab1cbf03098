// One training step in either mode.
//   PyNative: forward with the tape, backward op by op, the update rule run eagerly, new values
//     written back into the module.
//   Graph: the first call traces the WHOLE step - forward, loss, backward (nodes under "grad."),
//     update rule (nodes under "optimizer.") - into one graph whose INPUTS are the parameters,
//     buffers (BatchNorm running statistics), optimizer state, lr, step and the batch (so constant
//     folding cannot fold them) and whose OUTPUTS are the loss, new parameters, new state and new
//     buffers; it is compiled once by the GraphExecutor and every later call runs it and writes
//     the outputs back. A new batch signature (dtypes/shapes) traces again.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/compiler/amp.h"
#include "engine/compiler/compile.h"
#include "engine/frontend/nn/autograd.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/module.h"
#include "engine/frontend/train/data_parallel.h"
#include "engine/frontend/train/loss_scale.h"
#include "engine/runtime/executor.h"

namespace ms::nn::train {

// The update rule is a pure function on Vars so it runs eagerly or traced into the step graph:
// given params, grads, optimizer state and a scalar lr Var, returns new params and new state.
struct UpdateRule {
  std::function<Vars(const Vars& params)> init_state;  // initial optimizer state (e.g. zeros_like)
  std::function<std::pair<Vars, Vars>(const Vars& params, const Vars& grads, const Vars& state, const Var& lr,
                                      const Var& step)>
      update;
};

// Plain SGD (no state): p - lr * g. Used by tests; the optimizers proper live in train/.
UpdateRule sgd_rule();

struct StepStats {
  double loss = 0;
  double step_ms = 0;
  double compile_ms = 0;  // Graph: trace + compile time of this call (0 when the cached step ran)
  int64_t peak_bytes = 0;
  bool skipped = false;   // loss scaling found an inf/NaN gradient: nothing was updated
  double loss_scale = 0;  // the scale after this step (0 without loss scaling)
  // Data parallel: the gradient collectives' time and the share of it inside the backward.
  double allreduce_ms = 0;
  double overlap = 0;
  std::vector<CollectiveEvent> collectives;  // PyNative: each bucket's all-reduce
};

// Mixed precision of a training step: the network runs under autocast at `level` (the same Casts
// in both modes; in Graph mode they are traced and the amp-cast pass of the step's compile
// cleans them up), optionally with loss scaling (loss_scale.h). Parameters stay f32 master weights.
struct AmpOptions {
  compiler::AmpLevel level = compiler::AmpLevel::O0;
  LossScaleConfig loss_scale;
};

class TrainStep {
 public:
  // loss(model, inputs) -> scalar loss Var; inputs e.g. {x, labels}.
  TrainStep(Module& model, std::function<Var(Module&, const Vars&)> loss, UpdateRule rule, Mode mode,
            compiler::JitLevel level = compiler::JitLevel::O1);
  ~TrainStep();
  // `lr` and `step` (f32 scalar, 1-based) reach the rule as scalar Vars: graph inputs in Graph mode.
  Expected<StepStats> step(const Vars& inputs, double lr);
  // One learning rate per parameter group: with more than one the rule's lr Var has shape [G]
  // (a graph input all the same: changing the values never re-traces).
  Expected<StepStats> step(const Vars& inputs, const std::vector<double>& lr);

  Mode mode() const { return mode_; }
  // Runs the next steps in `mode`: the optimizer state, the step count, loss scaling and the
  // compiled step graphs carry over, so steps in one mode continue those of the other (MindSpore
  // keeps an optimizer's state across set_context(mode=...)).
  void set_mode(Mode mode);
  int64_t steps() const { return step_; }
  // Graph mode: the traced step graph of the current signature and its compiled form (nullptr before
  // the first step or in PyNative).
  const ir::Graph* graph() const;
  const compiler::CompiledExecutor* executor() const;
  // Optimizer state (concrete) after the last step, in the rule's order.
  const std::vector<Tensor>& state() const { return state_; }

  // Before the first step.
  void set_amp(const AmpOptions& amp);
  // Graph mode: passes (arguments) left out of the step's compile pipeline.
  void set_disabled_passes(std::vector<std::string> passes) { disabled_passes_ = std::move(passes); }
  // Data parallel over the world communicator (dist::init() first; before the first step): the
  // first step checks that every rank built the same model and copies rank 0's weights; every step
  // averages (or sums) the gradients over the ranks (data_parallel.h). PyNative with loss scaling
  // reduces the scaled gradients; Graph mode refuses loss scaling.
  void set_data_parallel(const DataParallelConfig& cfg);
  bool data_parallel() const { return dp_ != nullptr; }
  // PyNative: the gradient buckets (empty before the first data-parallel step).
  std::vector<GradBucket> grad_buckets() const;
  // With sync_batchnorm over more than one rank: the BatchNorm layers the first step switched to
  // statistics over every rank (they stay so: the model is meant for this job's ranks).
  int sync_batchnorm_layers() const;
  const AmpOptions& amp() const { return amp_; }
  double loss_scale() const { return scale_; }  // current scale (0 without loss scaling)
  int64_t skipped_steps() const { return skipped_; }

  // Profiling: the next step reports to `observer` (run begin/end, every op and kernel, the
  // allocations). PyNative: the step's eager ops (forward, backward, update), each recorded as a node
  // of observed_graph(); Graph: the compiled step's run, observed_graph() its compiled graph.
  void observe_next_step(runtime::RunObserver* observer) { observer_ = observer; }
  const ir::Graph* observed_graph() const;           // null before an observed step
  const runtime::MemoryPlan* observed_plan() const;  // Graph mode: the step's memory plan

 private:
  struct Compiled;
  Expected<StepStats> step_pynative(const Vars& inputs, const std::vector<double>& lr);
  Expected<StepStats> step_graph(const Vars& inputs, const std::vector<double>& lr,
                                 runtime::RunObserver* observer = nullptr);
  Expected<std::unique_ptr<Compiled>> trace_and_compile(const Vars& inputs, size_t lr_count);
  Status init_state();
  Status start_data_parallel();
  Expected<ValueAndGrad> pynative_grads(const std::function<Var()>& loss, const Vars& params, StepStats& st);
  bool loss_scaled() const { return amp_.loss_scale.enabled(); }
  // The step's bookkeeping of loss scaling from its outputs (new scale, good steps, overflow flag).
  void record_loss_scale(double scale, double good, bool overflow, StepStats& st);

  Module& model_;
  std::function<Var(Module&, const Vars&)> loss_;
  UpdateRule rule_;
  Mode mode_;
  compiler::JitLevel level_;
  int64_t step_ = 0;
  bool state_ready_ = false;
  std::vector<Tensor> state_;
  std::map<std::string, std::unique_ptr<Compiled>> compiled_;
  const Compiled* last_ = nullptr;
  AmpOptions amp_;
  double scale_ = 0, good_steps_ = 0;
  int64_t skipped_ = 0;
  std::vector<std::string> disabled_passes_;
  runtime::RunObserver* observer_ = nullptr;  // for the next step only
  bool observed_ = false;
  ir::Graph eager_ops_;  // PyNative: the ops of the last observed step
  struct DataParallel;
  std::unique_ptr<DataParallel> dp_;
};

}  // namespace ms::nn::train
