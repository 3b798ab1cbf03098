#include "engine/frontend/train/step.h"
#include "engine/compiler/compile.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <unordered_map>
#include <utility>

#include "engine/dist/world.h"
#include "engine/frontend/nn/autocast.h"
#include "engine/frontend/nn/autograd.h"
#include "engine/frontend/nn/eager_observe.h"
#include "engine/frontend/nn/jit.h"
#include "engine/frontend/nn/layers.h"
#include "engine/frontend/nn/trace.h"
#include "engine/runtime/allocator.h"
#include "engine/runtime/program.h"

namespace ms::nn::train {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Runs the eager parts of a step in PyNative whatever the global mode (a Graph-mode context would
// otherwise compile each module call on its own, out of the tape's sight).
class PyNativeScope {
 public:
  PyNativeScope() : saved_(get_mode()) { set_context(Mode::PyNative); }
  ~PyNativeScope() { set_context(saved_); }

 private:
  Mode saved_;
};

struct ScopeRestore {
  std::vector<const std::string*> saved;
  ~ScopeRestore() { swap_scope(std::move(saved)); }
};

std::string signature_key(const Vars& xs) {
  std::string k;
  for (const Var& x : xs) k += std::string(dtype_name(x.dtype())) + shape_to_string(x.shape()) + ";";
  return k;
}

Status check_update(size_t np, size_t ns, const std::pair<Vars, Vars>& upd) {
  if (upd.first.size() != np || upd.second.size() != ns)
    return invalid_argument("update rule returned " + std::to_string(upd.first.size()) + " params and " +
                            std::to_string(upd.second.size()) + " state values, expected " + std::to_string(np) +
                            " and " + std::to_string(ns));
  MS_RETURN_IF_ERROR(first_error(upd.first));
  return first_error(upd.second);
}

Var scalar_f32(double v) { return F::scalar(v, DType::F32); }

// The learning rate a step feeds: an f32 scalar, or one value per parameter group (shape [G]).
Tensor lr_tensor(const std::vector<double>& lrs) {
  if (lrs.size() == 1) return Tensor::scalar<float>(static_cast<float>(lrs[0]));
  std::vector<float> v(lrs.begin(), lrs.end());
  return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
}

// The graph inputs of a traced step, in the order the compiled step binds them: parameters,
// buffers, optimizer state, lr, step, with loss scaling the scale and good steps, then the batch.
struct StepInputs {
  Vars params, buffers, state, batch;
  Var lr, step, scale, good;
  std::unordered_map<const void*, Var> bound;  // parameter or buffer tensor -> its input
};

StepInputs add_step_inputs(TraceState& root, const std::vector<Module::Slot>& slots, const std::vector<Tensor>& state,
                           bool loss_scaled, const Vars& inputs, size_t lr_count) {
  StepInputs in;
  for (const auto& s : slots) {
    if (s.buffer) continue;
    Var v = root.add_input(s.name, static_type(s.tensor->dtype(), s.tensor->shape()));
    in.bound[s.tensor->raw()] = v;
    in.params.push_back(v);
  }
  for (const auto& s : slots) {
    if (!s.buffer) continue;
    Var v = root.add_input(s.name, static_type(s.tensor->dtype(), s.tensor->shape()));
    in.bound[s.tensor->raw()] = v;
    in.buffers.push_back(v);
  }
  for (size_t i = 0; i < state.size(); ++i)
    in.state.push_back(
        root.add_input("optimizer.state_" + std::to_string(i), static_type(state[i].dtype(), state[i].shape())));
  in.lr =
      root.add_input("lr", static_type(DType::F32, lr_count == 1 ? Shape{} : Shape{static_cast<int64_t>(lr_count)}));
  in.step = root.add_input("step", static_type(DType::F32, {}));
  if (loss_scaled) {
    in.scale = root.add_input("loss_scale.scale", static_type(DType::F32, {}));
    in.good = root.add_input("loss_scale.good_steps", static_type(DType::F32, {}));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    in.batch.push_back(root.add_input(inputs.size() == 1 ? "input" : "input_" + std::to_string(i),
                                      static_type(inputs[i].dtype(), inputs[i].shape())));
  return in;
}

// Each buffer's tensor -> its graph input (the value a skipped step keeps).
std::unordered_map<const void*, Var> buffer_inputs(const std::vector<Module::Slot>& slots,
                                                   std::unordered_map<const void*, Var>& bound) {
  std::unordered_map<const void*, Var> old_buffers;
  for (const auto& s : slots)
    if (s.buffer) old_buffers[s.tensor->raw()] = bound[s.tensor->raw()];
  return old_buffers;
}

// The traced loss (before scaling) and the parameters' gradients; with loss scaling (`scaling` not
// null) the loss is scaled and the gradients unscaled and checked for overflow (ls).
struct TracedGrads {
  Var raw_loss;
  Vars grads;
  LossScaleStep ls;
};

Expected<TracedGrads> trace_gradients(const std::function<Var(Module&, const Vars&)>& loss, Module& model,
                                      const StepInputs& in, const LossScaleConfig* scaling) {
  TracedGrads t;
  MS_ASSIGN_OR_RETURN(ValueAndGrad vg, value_and_grad(
                                           [&] {
                                             t.raw_loss = loss(model, in.batch);
                                             return scaling ? F::mul(t.raw_loss, in.scale) : t.raw_loss;
                                           },
                                           in.params));
  t.grads = vg.grads;
  if (scaling) {
    t.ls = unscale_and_check(*scaling, t.grads, in.scale, in.good);
    t.grads = t.ls.grads;
  }
  return t;
}

// With loss scaling, the skipped step is a select inside the graph: old values where some gradient
// overflowed, for the parameters, the state and the buffers (`targets`, whose inputs are in
// old_buffers).
Status keep_old_on_overflow(const LossScaleStep& ls, const StepInputs& in, const std::vector<Tensor*>& targets,
                            const std::unordered_map<const void*, Var>& old_buffers, std::pair<Vars, Vars>& upd,
                            Vars& buffer_updates) {
  upd.first = keep_on_overflow(ls.overflow, upd.first, in.params);
  upd.second = keep_on_overflow(ls.overflow, upd.second, in.state);
  Vars old;
  for (Tensor* t : targets) {
    auto it = old_buffers.find(t->raw());
    if (it == old_buffers.end()) return internal_error("training step: a buffer update has no buffer input");
    old.push_back(it->second);
  }
  buffer_updates = keep_on_overflow(ls.overflow, buffer_updates, old);
  return check_update(in.params.size(), in.state.size(), upd);
}

// The step graph's outputs: the loss, new parameters, new state and new buffers, then with loss
// scaling (`ls` not null) the new scale, good steps and overflow flag.
Vars step_outputs(const Var& raw_loss, const std::pair<Vars, Vars>& upd, const Vars& buffer_updates,
                  const LossScaleStep* ls) {
  Vars outs{raw_loss};
  outs.insert(outs.end(), upd.first.begin(), upd.first.end());
  outs.insert(outs.end(), upd.second.begin(), upd.second.end());
  outs.insert(outs.end(), buffer_updates.begin(), buffer_updates.end());
  if (ls) {
    outs.push_back(ls->new_scale);
    outs.push_back(ls->new_good);
    outs.push_back(ls->overflow);
  }
  return outs;
}

// The traced step graph, verified, compiled for the backend with its inputs typed as traced.
Expected<std::unique_ptr<compiler::CompiledExecutor>> compile_step_graph(ir::Graph& graph, compiler::AmpLevel amp,
                                                                         compiler::JitLevel level,
                                                                         const std::vector<std::string>& disabled,
                                                                         const DataParallelConfig* dp) {
  // The autocast Casts are in the graph already: the amp-cast pass only cleans them up.
  if (amp != compiler::AmpLevel::O0) graph.metadata["amp"] = compiler::amp_level_name(amp);
  runtime::link_subgraph_parents(graph);
  Status v = ir::verify(graph);
  if (!v.is_ok()) return v.prepend("traced training step: ");
  std::map<std::string, ir::ValueType> sig;
  for (const auto& name : graph.inputs)
    if (const ir::Value* val = graph.value(name)) sig[name] = val->type;
  compiler::CompileOptions opts;
  opts.jit_level = level;
  opts.amp = amp;
  opts.disabled_passes = disabled;
  if (dp) {
    const compiler::DataParallelPasses passes{dp->gradients_mean, dp->fusion_split, dp->fusion_mb};
    opts.customize_pipeline = [passes](compiler::PassManager& pm) { compiler::add_data_parallel_passes(pm, passes); };
    // Collectives run in the program's order on every rank: no concurrent branches.
    opts.parallel_branches = false;
  }
  auto ex = compiler::compile_executor(graph, backend(), sig, opts);
  if (!ex) return Status(ex.status()).prepend("training step: compile: ");
  return std::move(*ex);
}

}  // namespace

UpdateRule sgd_rule() {
  UpdateRule r;
  r.init_state = [](const Vars&) { return Vars{}; };
  r.update = [](const Vars& params, const Vars& grads, const Vars& state, const Var& lr, const Var&) {
    Vars out;
    for (size_t i = 0; i < params.size(); ++i) {
      Var l = params[i].dtype() == lr.dtype() ? lr : F::cast(lr, params[i].dtype());
      out.push_back(F::sub(params[i], F::mul(grads[i], l)));
    }
    return std::make_pair(out, state);
  };
  return r;
}

struct TrainStep::DataParallel {
  DataParallelConfig cfg;
  std::shared_ptr<dist::Communicator> comm;
  std::unique_ptr<GradReducer> reducer;
  bool synced = false;
  int sync_bn_layers = 0;
};

struct TrainStep::Compiled {
  ir::Graph graph;
  std::unique_ptr<compiler::CompiledExecutor> exec;
  std::vector<std::string> inputs;  // params, buffers, state, lr, step, batch
  size_t params = 0, buffers = 0, state = 0;
  std::vector<Tensor*> buffer_targets;  // one per buffer-update output, after loss/params/state
  bool loss_scaled = false;             // inputs scale, good steps; outputs scale, good steps, overflow
  double compile_ms = 0;
};

TrainStep::TrainStep(Module& model, std::function<Var(Module&, const Vars&)> loss, UpdateRule rule, Mode mode,
                     compiler::JitLevel level)
    : model_(model), loss_(std::move(loss)), rule_(std::move(rule)), mode_(mode), level_(level) {}
TrainStep::~TrainStep() = default;

const ir::Graph* TrainStep::graph() const { return last_ ? &last_->graph : nullptr; }
const compiler::CompiledExecutor* TrainStep::executor() const { return last_ ? last_->exec.get() : nullptr; }

void TrainStep::set_amp(const AmpOptions& amp) {
  amp_ = amp;
  scale_ = amp.loss_scale.enabled() ? amp.loss_scale.init_scale : 0;
  good_steps_ = 0;
  compiled_.clear();
  last_ = nullptr;
}

void TrainStep::set_mode(Mode mode) {
  if (mode == mode_) return;
  mode_ = mode;
  observed_ = false;  // observed_graph() and observed_plan() describe a step of the mode observed
}

void TrainStep::set_data_parallel(const DataParallelConfig& cfg) {
  dp_ = std::make_unique<DataParallel>();
  dp_->cfg = cfg;
  compiled_.clear();
  last_ = nullptr;
}

int TrainStep::sync_batchnorm_layers() const { return dp_ ? dp_->sync_bn_layers : 0; }

std::vector<GradBucket> TrainStep::grad_buckets() const {
  return dp_ && dp_->reducer ? dp_->reducer->buckets() : std::vector<GradBucket>{};
}

Status TrainStep::start_data_parallel() {
  if (!dp_) return Status::ok();
  // Checked at every step: the mode may change between steps (set_mode).
  if (mode_ == Mode::Graph && loss_scaled())
    return unsupported("data parallel Graph-mode training does not take loss scaling (PyNative does)");
  for (const std::string& p : disabled_passes_)
    if (mode_ == Mode::Graph && (p == "insert-allreduce" || p == "InsertAllReduce"))
      return invalid_argument(
          "data parallel Graph-mode training needs the insert-allreduce pass (without it the "
          "ranks would not share their gradients)");
  if (dp_->synced) return Status::ok();
  dp_->comm = dist::world();
  if (!dp_->comm) return invalid_argument("data parallel training needs a communicator: call dist::init() first");
  MS_RETURN_IF_ERROR(sync_model_from_rank0(*dp_->comm, model_));
  // Before the first forward (and so before Graph mode traces the step).
  if (dp_->cfg.sync_batchnorm && dp_->comm->size() > 1) dp_->sync_bn_layers = set_sync_batchnorm(model_, true);
  dp_->synced = true;
  return Status::ok();
}

// The gradients of a PyNative step; data parallel: each bucket reduced as soon as its gradients
// are final, all awaited here.
Expected<ValueAndGrad> TrainStep::pynative_grads(const std::function<Var()>& loss, const Vars& params, StepStats& st) {
  if (!dp_) return value_and_grad(loss, params);
  if (!dp_->reducer) dp_->reducer = std::make_unique<GradReducer>(*dp_->comm, params, dp_->cfg);
  GradReducer& red = *dp_->reducer;
  red.begin();
  Status hook;
  MS_ASSIGN_OR_RETURN(ValueAndGrad vg, value_and_grad(loss, params, [&](size_t i, const Var& g) {
                        auto t = g.tensor();
                        if (t)
                          red.grad_ready(i, *t);
                        else if (hook.is_ok())
                          hook = t.status();
                      }));
  MS_RETURN_IF_ERROR(hook);
  ReduceStats rs;
  MS_ASSIGN_OR_RETURN(std::vector<Tensor> reduced, red.finish(&rs));
  for (size_t i = 0; i < reduced.size(); ++i) vg.grads[i] = Var(reduced[i]);
  st.allreduce_ms = rs.allreduce_ms;
  st.overlap = rs.overlap;
  st.collectives = std::move(rs.collectives);
  return vg;
}

void TrainStep::record_loss_scale(double scale, double good, bool overflow, StepStats& st) {
  scale_ = scale;
  good_steps_ = good;
  if (overflow) ++skipped_;
  st.skipped = overflow;
  st.loss_scale = scale;
}

Status TrainStep::init_state() {
  if (state_ready_) return Status::ok();
  PyNativeScope eager;
  Vars s = rule_.init_state ? rule_.init_state(trainable_parameters(model_)) : Vars{};
  MS_RETURN_IF_ERROR(first_error(s));
  state_.clear();
  for (const Var& v : s) {
    MS_ASSIGN_OR_RETURN(Tensor t, v.tensor());
    state_.push_back(t.clone());
  }
  state_ready_ = true;
  return Status::ok();
}

Expected<StepStats> TrainStep::step(const Vars& inputs, double lr) { return step(inputs, std::vector<double>{lr}); }

Expected<StepStats> TrainStep::step(const Vars& inputs, const std::vector<double>& lr) {
  if (lr.empty()) return invalid_argument("TrainStep::step: no learning rate");
  MS_RETURN_IF_ERROR(first_error(inputs));
  if (active_trace()) return invalid_argument("TrainStep::step cannot run inside a trace");
  for (const Var& x : inputs)
    if (!x.is_concrete()) return invalid_argument("TrainStep::step: the batch must be concrete tensors");
  MS_RETURN_IF_ERROR(init_state());
  MS_RETURN_IF_ERROR(start_data_parallel());
  if (!observer_) return mode_ == Mode::PyNative ? step_pynative(inputs, lr) : step_graph(inputs, lr);
  // An observed step: the observer sees one run (begin/end even when the step fails).
  runtime::RunObserver* obs = std::exchange(observer_, nullptr);
  const runtime::RunInfo info{mode_ == Mode::PyNative ? runtime::ExecMode::PyNative : runtime::ExecMode::Graph,
                              backend().device(), static_cast<int>(step_)};
  observed_ = true;
  if (mode_ == Mode::Graph) return step_graph(inputs, lr, obs);
  eager_ops_ = ir::Graph();
  obs->on_run_begin(info);
  Expected<StepStats> r = [&] {
    const EagerObserveScope scope(*obs, eager_ops_);
    return step_pynative(inputs, lr);
  }();
  obs->on_run_end(info);
  return r;
}

const ir::Graph* TrainStep::observed_graph() const {
  if (!observed_) return nullptr;
  if (mode_ == Mode::PyNative) return &eager_ops_;
  return executor() ? &executor()->graph() : nullptr;
}

const runtime::MemoryPlan* TrainStep::observed_plan() const {
  const compiler::CompiledExecutor* ex = observed_ && mode_ == Mode::Graph ? executor() : nullptr;
  return ex ? &ex->memory_plan() : nullptr;
}

Expected<StepStats> TrainStep::step_pynative(const Vars& inputs, const std::vector<double>& lr) {
  PyNativeScope eager;
  runtime::Allocator& alloc = backend().allocator();
  alloc.reset_peak();
  const auto t0 = Clock::now();
  const AutocastGuard amp(amp_.level);
  Vars params = trainable_parameters(model_);
  // Buffers (BatchNorm running statistics) move during the forward: kept to undo a skipped step.
  std::vector<std::pair<Tensor*, Tensor>> saved_buffers;
  if (loss_scaled())
    for (const auto& s : model_.parameter_slots())
      if (s.buffer) saved_buffers.emplace_back(s.tensor, s.tensor->clone());
  Var raw_loss;
  const Var scale = scalar_f32(scale_);
  StepStats st;
  MS_ASSIGN_OR_RETURN(ValueAndGrad vg, pynative_grads(
                                           [&] {
                                             raw_loss = loss_(model_, inputs);
                                             return loss_scaled() ? F::mul(raw_loss, scale) : raw_loss;
                                           },
                                           params, st));
  Vars grads = vg.grads;
  LossScaleStep ls;
  if (loss_scaled()) {
    ls = unscale_and_check(amp_.loss_scale, grads, scale, scalar_f32(good_steps_));
    grads = ls.grads;
  }
  Vars state;
  for (const Tensor& t : state_) state.emplace_back(t);
  auto upd = rule_.update(params, grads, state, Var(lr_tensor(lr)), scalar_f32(static_cast<double>(step_ + 1)));
  MS_RETURN_IF_ERROR(check_update(params.size(), state.size(), upd));
  if (loss_scaled()) {
    upd.first = keep_on_overflow(ls.overflow, upd.first, params);
    upd.second = keep_on_overflow(ls.overflow, upd.second, state);
    MS_RETURN_IF_ERROR(check_update(params.size(), state.size(), upd));
    MS_ASSIGN_OR_RETURN(double overflow, ls.overflow.item());
    MS_ASSIGN_OR_RETURN(double new_scale, ls.new_scale.item());
    MS_ASSIGN_OR_RETURN(double new_good, ls.new_good.item());
    if (overflow != 0)
      for (auto& [target, old] : saved_buffers) std::memcpy(target->raw(), old.raw(), old.nbytes());
    record_loss_scale(new_scale, new_good, overflow != 0, st);
  }
  std::vector<Tensor> values;
  for (const Var& v : upd.first) {
    MS_ASSIGN_OR_RETURN(Tensor t, v.tensor());
    values.push_back(std::move(t));
  }
  MS_RETURN_IF_ERROR(assign_parameters(model_, values));
  std::vector<Tensor> new_state;
  for (const Var& v : upd.second) {
    MS_ASSIGN_OR_RETURN(Tensor t, v.tensor());
    new_state.push_back(std::move(t));
  }
  state_ = std::move(new_state);
  MS_ASSIGN_OR_RETURN(double loss, raw_loss.item());
  ++step_;
  st.loss = loss;
  st.step_ms = ms_since(t0);
  st.peak_bytes = static_cast<int64_t>(alloc.stats().peak_in_use);
  return st;
}

Expected<std::unique_ptr<TrainStep::Compiled>> TrainStep::trace_and_compile(const Vars& inputs, size_t lr_count) {
  const auto t0 = Clock::now();
  auto c = std::make_unique<Compiled>();
  auto slots = model_.parameter_slots();
  TraceState root("train_step", "");
  {
    TraceGuard trace(&root);
    ScopeRestore restore{swap_scope({})};
    c->loss_scaled = loss_scaled();
    StepInputs in = add_step_inputs(root, slots, state_, c->loss_scaled, inputs, lr_count);
    c->params = in.params.size();
    c->buffers = in.buffers.size();
    c->state = in.state.size();
    c->inputs = root.graph.inputs;

    const std::unordered_map<const void*, Var> old_buffers = buffer_inputs(slots, in.bound);
    ParameterBinding binding(std::move(in.bound));
    BufferSink sink;
    const AutocastGuard amp(amp_.level);
    MS_ASSIGN_OR_RETURN(TracedGrads tg,
                        trace_gradients(loss_, model_, in, c->loss_scaled ? &amp_.loss_scale : nullptr));
    std::pair<Vars, Vars> upd;
    {
      const std::string opt_scope = "optimizer";
      ScopeGuard scope(opt_scope);
      upd = rule_.update(in.params, tg.grads, in.state, in.lr, in.step);
    }
    MS_RETURN_IF_ERROR(check_update(in.params.size(), in.state.size(), upd));
    Vars buffer_updates;
    for (const auto& u : sink.updates()) {
      buffer_updates.push_back(u.value);
      c->buffer_targets.push_back(u.target);
    }
    if (c->loss_scaled)
      MS_RETURN_IF_ERROR(keep_old_on_overflow(tg.ls, in, c->buffer_targets, old_buffers, upd, buffer_updates));
    Vars outs = step_outputs(tg.raw_loss, upd, buffer_updates, c->loss_scaled ? &tg.ls : nullptr);
    MS_RETURN_IF_ERROR(add_graph_outputs(root, outs));
    if (!root.error().is_ok()) return root.error();
  }
  c->graph = std::move(root.graph);
  MS_ASSIGN_OR_RETURN(c->exec,
                      compile_step_graph(c->graph, amp_.level, level_, disabled_passes_, dp_ ? &dp_->cfg : nullptr));
  c->compile_ms = ms_since(t0);
  return c;
}

Expected<StepStats> TrainStep::step_graph(const Vars& inputs, const std::vector<double>& lr,
                                          runtime::RunObserver* observer) {
  StepStats st;
  const std::string key = signature_key(inputs) + "lr" + std::to_string(lr.size());
  auto it = compiled_.find(key);
  if (it == compiled_.end()) {
    MS_ASSIGN_OR_RETURN(auto c, trace_and_compile(inputs, lr.size()));
    st.compile_ms = c->compile_ms;
    it = compiled_.emplace(key, std::move(c)).first;
  }
  Compiled& c = *it->second;
  last_ = &c;
  const auto t0 = Clock::now();
  auto slots = model_.parameter_slots();
  std::vector<Tensor> feed_values;
  for (const auto& s : slots)
    if (!s.buffer) feed_values.push_back(*s.tensor);
  for (const auto& s : slots)
    if (s.buffer) feed_values.push_back(*s.tensor);
  for (const Tensor& t : state_) feed_values.push_back(t);
  feed_values.push_back(lr_tensor(lr));
  feed_values.push_back(Tensor::scalar<float>(static_cast<float>(step_ + 1)));
  if (c.loss_scaled) {
    feed_values.push_back(Tensor::scalar<float>(static_cast<float>(scale_)));
    feed_values.push_back(Tensor::scalar<float>(static_cast<float>(good_steps_)));
  }
  for (const Var& x : inputs) feed_values.push_back(x.impl()->value);
  if (feed_values.size() != c.inputs.size())
    return internal_error("training step: the model's parameters changed since the step was traced");
  runtime::TensorMap feed;
  std::set<const void*> fed;
  for (size_t i = 0; i < feed_values.size(); ++i) {
    feed[c.inputs[i]] = feed_values[i];
    if (feed_values[i].defined()) fed.insert(feed_values[i].buffer().get());
  }
  runtime::RunOptions run_options;
  run_options.observer = observer;
  run_options.iteration = static_cast<int>(step_);
  (void)dist::take_graph_collective_totals();
  auto run = c.exec->run(feed, run_options);
  if (!run) return Status(run.status()).prepend("training step: ");
  if (dp_) {
    const dist::CollectiveTotals totals = dist::take_graph_collective_totals();
    st.allreduce_ms = totals.ms;
    st.overlap = totals.ms > 0 && dp_->comm->size() > 1 ? totals.overlapped_ms / totals.ms : 0;
    for (const dist::GraphCollective& e : totals.events)
      st.collectives.push_back({e.sequence, e.bytes, std::chrono::duration<double, std::milli>(e.start - t0).count(),
                                std::chrono::duration<double, std::milli>(e.end - t0).count()});
  }
  std::vector<Tensor> outs = std::move(*run);
  const size_t expected = 1 + c.params + c.state + c.buffer_targets.size() + (c.loss_scaled ? 3 : 0);
  if (outs.size() != expected) return internal_error("training step: unexpected number of outputs");
  // An output may share memory with an input we are about to overwrite: copy those first.
  for (Tensor& t : outs)
    if (t.defined() && fed.count(t.buffer().get())) t = t.clone();
  size_t k = 1;
  for (const auto& s : slots) {
    if (s.buffer) continue;
    const Tensor& v = outs[k++];
    if (v.shape() != s.tensor->shape() || v.dtype() != s.tensor->dtype())
      return internal_error("training step: new value of '" + s.name + "' has the wrong type");
    if (v.nbytes()) std::memmove(s.tensor->raw(), v.raw(), v.nbytes());
  }
  for (size_t i = 0; i < c.state; ++i) state_[i] = outs[k++].clone();
  for (Tensor* target : c.buffer_targets) {
    const Tensor& v = outs[k++];
    if (v.nbytes() == target->nbytes()) std::memmove(target->raw(), v.raw(), v.nbytes());
  }
  if (c.loss_scaled) {
    const double new_scale = outs[k].at_double(0), new_good = outs[k + 1].at_double(0);
    record_loss_scale(new_scale, new_good, outs[k + 2].at_double(0) != 0, st);
  }
  clear_graph_caches(model_);
  ++step_;
  st.loss = outs[0].at_double(0);
  st.step_ms = ms_since(t0);
  st.peak_bytes = static_cast<int64_t>(c.exec->last_stats().peak_bytes);
  return st;
}

}  // namespace ms::nn::train
