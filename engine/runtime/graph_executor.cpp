#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "engine/runtime/branch_pool.h"
#include "engine/runtime/capture.h"
#include "engine/runtime/interpreter.h"
#include "engine/runtime/packed_release.h"

namespace ms::runtime {

struct GraphExecutor::Impl {
  std::shared_ptr<const Executable> x;  // what the compiler decided; never changes
  const ir::Graph* graph = nullptr;
  const Program* program = nullptr;
  Backend* backend = nullptr;
  std::unique_ptr<Interpreter> interp;
  MemoryPlan plan;  // the executable's plan, planned again when kernel scratch outgrows it
  std::shared_ptr<Buffer> arena;
  std::vector<std::vector<Tensor>> planned;  // per step: arena views for static outputs (undefined otherwise)
  // Per step: arena blocks for outputs whose shape is known only at run time (a shape bucket's
  // symbolic dims), sized for the bucket's upper bound.
  std::vector<PlacedOutputs> placed;
  RunStats stats;
  // Concurrent x->branches on CPU threads: one interpreter per extra thread.
  std::vector<std::unique_ptr<Interpreter>> worker_interp;
  std::unique_ptr<BranchPool> pool;
  // Kernel scratch (reorders into a blocked layout, oneDNN scratchpads), one arena slot per step
  // live only during it: the bytes a step asked for are learned when it runs, and the plan grows
  // once to hold them.
  std::vector<uint64_t> scratch_need, scratch_offset, scratch_bytes;  // per step
  std::vector<char> scratch_grew;  // per step: asked for more than planned in the last run
  // Whole-graph replay (the executable allows it): the second run (plan final) records the steps
  // once; later runs copy the inputs into the staged buffers, launch the recording and read the
  // fixed output buffers. A run with an observer launches step by step (the profiler sees every
  // op), as does any run after the recording failed (replay_note says why).
  GraphCapture* capture = nullptr;
  std::string replay_note;
  bool replayed = false;
  int runs_done = 0;
  std::unique_ptr<CapturedRun> recorded;
  std::vector<Tensor> staged;         // per graph input, its device buffer
  std::vector<Tensor> pins;           // device copies of the constants the recording reads
  std::vector<Tensor> fixed_outputs;  // graph outputs where the recording leaves them
  bool record_again = false;          // the recording failed only because the plan must grow
  int recordings = 0;
  std::unique_ptr<PackedRelease> packed_release;  // armed by release_constants_once_packed

  // Whether the backend keeps values of dtype `t` in its own memory (a device keeps integer and bool
  // values on the host).
  bool on_backend_device(DType t) const { return backend->allocator_for(t).device().type == backend->device().type; }
  Status apply_plan();
  Status run_sequential(Frame& frame, const RunOptions& options, RunObserver* obs, bool recording, int all);
  Status record(Frame& frame, const RunOptions& options);
  Status run_step(Interpreter& in, Frame& frame, size_t si, std::vector<Tensor>& outs, RunObserver* obs);
  Status run_parallel(Frame& frame, const RunOptions& options, int all);
  Status bind_inputs(Frame& frame, const TensorMap& inputs) const;
  Status replay_or_record(Frame& frame, const RunOptions& options, bool& launched);
  Status copy_inputs_to_device(Frame& frame);
};

namespace {

// Kernel scratch of one step from its arena slot; what does not fit (before the plan learned the
// step's needs) comes from the backend's allocator as before.
class ArenaScratch final : public OutputAllocator {
 public:
  ArenaScratch(Backend& be, RunObserver* obs, const ir::Node& node, std::shared_ptr<Buffer> arena, uint64_t offset,
               uint64_t bytes, uint64_t budget)
      : be_(be), obs_(obs), node_(node), arena_(std::move(arena)), offset_(offset), bytes_(bytes), budget_(budget) {}
  Expected<Tensor> allocate(size_t, DType, const Shape&) override {
    return internal_error(node_.label() + ": scratch allocator asked for an output");
  }
  Expected<Tensor> scratch(DType dtype, const Shape& shape) override {
    size_t bytes = 0;
    if (!byte_size(shape, dtype_size(dtype), bytes)) return allocate_value(be_, obs_, "", node_.id, dtype, shape);
    const uint64_t n = align_up(static_cast<uint64_t>(bytes), 64);
    requested_ += n;
    if (arena_ && used_ + n <= bytes_) {
      Tensor t(arena_, dtype, shape, offset_ + used_);
      used_ += n;
      return t;
    }
    return allocate_value(be_, obs_, "", node_.id, dtype, shape);
  }
  uint64_t requested() const { return requested_; }
  uint64_t scratch_budget() const override { return budget_; }

 private:
  Backend& be_;
  RunObserver* obs_;
  const ir::Node& node_;
  std::shared_ptr<Buffer> arena_;
  uint64_t offset_, bytes_, budget_, used_ = 0, requested_ = 0;
};

// The run's dims against the compiled type: equal, where a symbolic dim (-1, a shape bucket's) takes
// the sizes of its range (any size when it has none).
bool fits_dims(const Shape& got, const ir::ValueType& compiled,
               const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) {
  const auto& dims = *compiled.dims;
  if (got.size() != dims.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (dims[i] >= 0) {
      if (got[i] != dims[i]) return false;
      continue;
    }
    auto r = i < compiled.dim_params.size() ? ranges.find(compiled.dim_params[i]) : ranges.end();
    if (r != ranges.end() && (got[i] < r->second.first || got[i] > r->second.second)) return false;
  }
  return true;
}

// " (seq in 5..8)" for the symbolic dims of `t` that have a range.
std::string ranges_text(const ir::ValueType& t, const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) {
  std::string text;
  for (const auto& param : t.dim_params)
    if (auto r = ranges.find(param); r != ranges.end() && text.find(" " + param + " in") == std::string::npos)
      text += (text.empty() ? " (" : ", ") + param + " in " + std::to_string(r->second.first) + ".." +
              std::to_string(r->second.second);
  return text.empty() ? text : text + ")";
}

}  // namespace

Status GraphExecutor::Impl::apply_plan() {
  const Program& p = *program;
  std::vector<MemorySlot> all = x->value_slots;
  std::vector<int> scratch_slot(p.steps.size(), -1);
  if (x->plan_scratch)
    for (size_t si = 0; si < p.steps.size(); ++si) {
      if (!scratch_need[si]) continue;
      MemorySlot sc;
      sc.value = p.steps[si].node->label() + " scratch";
      sc.producer = p.steps[si].node->id;
      sc.bytes = scratch_need[si];
      sc.first_step = x->branches.lo[si];  // whatever may run beside the step must not use these bytes
      sc.last_step = x->branches.hi[si];
      sc.thread = x->step_threads[si];
      scratch_slot[si] = static_cast<int>(all.size());
      all.push_back(std::move(sc));
    }
  if (scratch_slot == std::vector<int>(p.steps.size(), -1)) {
    plan = x->plan;  // nothing learned yet: the compiled plan
  } else {
    plan = x->planner(std::move(all), x->inplace);
  }
  arena.reset();
  if (plan.arena_bytes) {
    // Host arenas are freed with std::free directly, not through the backend's allocator, so an
    // executor that outlives its backend (kept in static storage until exit) still frees safely.
    Allocator& raw = backend->arena_allocator();
    if (dynamic_cast<HostAllocator*>(&raw)) {
      void* mem = raw.allocate(plan.arena_bytes);
      if (mem)
        arena = std::make_shared<Buffer>(mem, plan.arena_bytes, raw.device(), [](void* d, size_t) { std::free(d); });
    } else {
      arena = raw.make_buffer(plan.arena_bytes);
    }
    if (!arena)
      return Status::error(ErrorCode::OutOfMemory,
                           "out of memory allocating the " + std::to_string(plan.arena_bytes) + "-byte arena");
  }
  planned.assign(p.steps.size(), {});
  placed.assign(p.steps.size(), {});
  for (size_t si = 0; si < p.steps.size(); ++si) planned[si].resize(p.steps[si].outputs.size());
  for (size_t k = 0; k < x->value_slots.size(); ++k) {
    const MemorySlot& ms = plan.slots[k];
    const int v = x->slot_value[k];
    const size_t si = static_cast<size_t>(p.producer_step[static_cast<size_t>(v)]);
    const Step& s = p.steps[si];
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      if (s.outputs[o] != v) continue;
      const auto& t = x->out_types[si][o];
      // Values a device keeps in host memory (integer and bool ones: shapes, indices) stay out of its
      // arena; their kernels run on the host and allocate them there (allocator_for).
      if (!on_backend_device(t.dtype)) continue;
      if (t.is_static()) {
        planned[si][o] = Tensor(arena, t.dtype, *t.dims, ms.offset);
        continue;
      }
      placed[si].arena = arena;
      placed[si].blocks.resize(s.outputs.size());
      placed[si].blocks[o] = {ms.offset, ms.bytes};
    }
  }
  scratch_offset.assign(p.steps.size(), 0);
  scratch_bytes.assign(p.steps.size(), 0);
  for (size_t si = 0; si < p.steps.size(); ++si)
    if (scratch_slot[si] >= 0) {
      scratch_offset[si] = plan.slots[static_cast<size_t>(scratch_slot[si])].offset;
      scratch_bytes[si] = plan.slots[static_cast<size_t>(scratch_slot[si])].bytes;
    }
  return Status::ok();
}

Status GraphExecutor::Impl::run_step(Interpreter& in, Frame& frame, size_t si, std::vector<Tensor>& outs,
                                     RunObserver* obs) {
  const Program& p = *program;
  const Step& step = p.steps[si];
  outs = planned[si];  // arena views; graph outputs allocated fresh below
  uint32_t packed = 0;
  const bool releasing = packed_release && packed_release->pending();
  const bool is_static = x->is_static_step[si];
  if (is_static) {
    for (size_t o = 0; o < outs.size(); ++o) {
      if (outs[o].defined() || step.outputs[o] < 0) continue;
      const auto& t = x->out_types[si][o];
      auto a = allocate_value(*backend, obs, p.slot_names[static_cast<size_t>(step.outputs[o])], step.node->id, t.dtype,
                              *t.dims);
      if (!a) return std::move(a).take_status();
      outs[o] = std::move(*a);
    }
  }
  if (x->plan_scratch) {
    ArenaScratch scratch(*backend, obs, *step.node, arena, scratch_offset[si], scratch_bytes[si],
                         x->scratch_budget[si]);
    MS_RETURN_IF_ERROR(in.dispatch(frame, step, outs, !is_static, &scratch,
                                   placed[si].blocks.empty() ? nullptr : &placed[si], &packed));
    if (scratch.requested() > scratch_need[si]) {
      scratch_need[si] = scratch.requested();
      scratch_grew[si] = 1;
    }
  } else {
    MS_RETURN_IF_ERROR(in.dispatch(frame, step, outs, !is_static, nullptr, nullptr, &packed));
  }
  if (releasing) packed_release->after_step(si, packed);
  for (size_t o = 0; o < outs.size(); ++o)
    if (step.outputs[o] >= 0) frame.slots[static_cast<size_t>(step.outputs[o])] = std::move(outs[o]);
  return tap_step(in.options(), frame, step, *backend, ExecMode::Graph);
}

// Records the steps once (nothing runs while recording). Inputs are copied into device buffers
// the recording reads, graph outputs get fixed buffers, and the constants' device copies are held.
Status GraphExecutor::Impl::record(Frame& frame, const RunOptions& options) {
  const Program& p = *program;
  staged.assign(graph->inputs.size(), Tensor());
  for (size_t i = 0; i < graph->inputs.size(); ++i) {
    Tensor& t = frame.slots[static_cast<size_t>(p.input_slots[i])];
    auto buf = backend->arena_allocator().make_buffer(std::max<size_t>(t.nbytes(), 1));
    if (!buf) return Status::error(ErrorCode::OutOfMemory, "out of memory staging input '" + graph->inputs[i] + "'");
    Tensor d(std::move(buf), t.dtype(), t.shape());
    MS_RETURN_IF_ERROR(backend->copy_from_host(t, d));
    staged[i] = d;
    t = std::move(d);
  }
  pins.clear();
  for (int s : p.constant_slots) {
    const Tensor& t = frame.slots[static_cast<size_t>(s)];
    if (!t.defined() || !is_float(t.dtype()) || t.device().type == backend->device().type) continue;
    MS_ASSIGN_OR_RETURN(Tensor d, capture->resident(t));
    pins.push_back(std::move(d));
  }
  for (size_t si = 0; si < p.steps.size(); ++si)
    for (size_t o = 0; o < p.steps[si].outputs.size(); ++o) {
      if (p.steps[si].outputs[o] < 0 || planned[si][o].defined()) continue;
      const auto& t = x->out_types[si][o];
      if (!on_backend_device(t.dtype)) continue;
      const uint64_t bytes = static_cast<uint64_t>(ops::static_numel(t)) * dtype_size(t.dtype);
      auto buf = backend->arena_allocator().make_buffer(std::max<uint64_t>(bytes, 1));
      if (!buf)
        return Status::error(ErrorCode::OutOfMemory, "out of memory for output of " + p.steps[si].node->label());
      planned[si][o] = Tensor(std::move(buf), t.dtype, *t.dims);
    }
  MS_RETURN_IF_ERROR(capture->begin_capture());
  Status st = run_sequential(frame, options, nullptr, true, 1);
  auto rec = capture->end_capture(st.is_ok());
  MS_RETURN_IF_ERROR(st);
  if (!rec) return std::move(rec).take_status();
  recorded = std::move(*rec);
  fixed_outputs.clear();
  for (int s : p.output_slots) fixed_outputs.push_back(frame.slots[static_cast<size_t>(s)]);
  return Status::ok();
}

// The steps in program order on the caller's thread (on CUDA streams when x->gpu_streams: stream k
// first waits for the streams of the steps it reads, and the run forks from and joins stream 0).
// O2 runs small steps on one CPU thread. While recording, a step whose scratch outgrew the plan
// fails the recording (its scratch came from outside the arena).
Status GraphExecutor::Impl::run_sequential(Frame& frame, const RunOptions& options, RunObserver* obs, bool recording,
                                           int all) {
  const Program& p = *program;
  GraphCapture* gc = x->gpu_streams ? dynamic_cast<GraphCapture*>(backend) : nullptr;
  if (gc)
    for (int k = 1; k < x->branches.threads_used; ++k) MS_RETURN_IF_ERROR(gc->stream_wait(k, 0));
  Status st;
  std::vector<Tensor> outs;
  int cur = all;
  for (size_t si = 0; si < p.steps.size() && st.is_ok(); ++si) {
    if (options.cancelled && options.cancelled()) {
      st = Status::error(ErrorCode::Cancelled, "cancelled");
      break;
    }
    if (gc) {
      const int k = x->step_threads[si];
      for (int d : x->branches.waits[si])
        if (st.is_ok()) st = gc->stream_wait(k, x->step_threads[static_cast<size_t>(d)]);
      if (st.is_ok()) st = gc->use_stream(k);
      if (!st.is_ok()) break;
    } else if (!recording) {
      const int want = x->single[si] ? 1 : all;
      if (want != cur) omp_set_num_threads(cur = want);
    }
    st = run_step(*interp, frame, si, outs, obs);
    if (st.is_ok() && recording && scratch_grew[si]) {
      record_again = true;  // planned again at the next run, then recorded
      st = internal_error(p.steps[si].node->label() + ": kernel scratch outgrew its plan while recording");
    }
    // Arena blocks end their lifetime here (the memory stays in the arena).
    for (int r : p.steps[si].release) frame.slots[static_cast<size_t>(r)] = Tensor();
  }
  if (gc) {
    Status js = gc->use_stream(0);
    for (int k = 1; k < x->branches.threads_used && js.is_ok(); ++k) js = gc->stream_wait(0, k);
    if (st.is_ok()) st = js;
  }
  return st;
}

// Each thread runs its steps in program order, waiting for the steps of other threads it reads;
// a step with no concurrent peer runs on the caller's thread with all the cores, the others with
// one core each (their x->branches share the machine). A value another thread may still read is
// released at the end of the run instead of after its last reader in program order.
Status GraphExecutor::Impl::run_parallel(Frame& frame, const RunOptions& options, int all) {
  const Program& p = *program;
  const size_t n = p.steps.size();
  const int nthreads = x->branches.threads_used;
  std::vector<std::atomic<int>> done(n);
  for (auto& d : done) d.store(0, std::memory_order_relaxed);
  std::atomic<bool> failed{false};
  std::vector<Status> errors(static_cast<size_t>(nthreads));
  // A failing thread marks every step done so no thread stays blocked; they see `failed` and stop.
  auto fail = [&](int t, Status st) {
    errors[static_cast<size_t>(t)] = std::move(st);
    failed.store(true);
    for (auto& d : done) {
      d.store(1, std::memory_order_release);
      d.notify_all();
    }
  };
  RunObserver* obs = options.observer;
  for (auto& wi : worker_interp) {
    wi->set_options(&options);
    wi->kernels_launched = 0;
  }
  auto body = [&](int t) {
    Interpreter& in = t == 0 ? *interp : *worker_interp[static_cast<size_t>(t - 1)];
    std::vector<Tensor> outs;
    int cur = -1;
    for (size_t si : x->thread_steps[static_cast<size_t>(t)]) {
      for (int d : x->branches.waits[si]) {
        // Spin briefly (the other branch is usually about to finish), then sleep on the flag so a
        // waiting thread leaves its core to the running ones.
        std::atomic<int>& f = done[static_cast<size_t>(d)];
        for (int spin = 0; !f.load(std::memory_order_acquire); ++spin) {
          if (spin < 256) {
            if (spin > 32) std::this_thread::yield();
            continue;
          }
          f.wait(0, std::memory_order_acquire);
        }
      }
      if (failed.load()) return;
      if (options.cancelled && options.cancelled()) return fail(t, Status::error(ErrorCode::Cancelled, "cancelled"));
      const bool alone = x->branches.lo[si] == static_cast<int>(si) && x->branches.hi[si] == static_cast<int>(si);
      const int want = alone && !x->single[si] ? all : 1;
      if (want != cur) omp_set_num_threads(cur = want);
      Status st = run_step(in, frame, si, outs, obs);
      if (!st.is_ok()) return fail(t, std::move(st));
      const Step& step = p.steps[si];
      for (size_t r = 0; r < step.release.size(); ++r)
        if (x->release_now[si][r]) frame.slots[static_cast<size_t>(step.release[r])] = Tensor();
      done[si].store(1, std::memory_order_release);
      done[si].notify_all();
    }
  };
  pool->run(nthreads, body);
  for (auto& wi : worker_interp) {
    interp->kernels_launched += wi->kernels_launched;
    wi->set_options(nullptr);
  }
  for (auto& e : errors)
    if (!e.is_ok()) return e;
  return Status::ok();
}

GraphExecutor::GraphExecutor(std::shared_ptr<const Executable> executable, Backend& backend)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.x = std::move(executable);
  m.graph = &m.x->graph;
  m.program = &m.x->program;
  m.backend = &backend;
  m.interp = std::make_unique<Interpreter>(backend, ExecMode::Graph);
  const size_t n = m.program->steps.size();
  m.scratch_need.assign(n, 0);
  m.scratch_grew.assign(n, 0);
  if (m.x->branches.threads_used > 1 && !m.x->gpu_streams) {
    for (int t = 1; t < m.x->branches.threads_used; ++t)
      m.worker_interp.push_back(std::make_unique<Interpreter>(backend, ExecMode::Graph));
    m.pool = std::make_unique<BranchPool>();
  }
  m.replay_note = m.x->replay_note;
  if (m.x->replay) m.capture = dynamic_cast<GraphCapture*>(&backend);
  // The compiled graph's constants never change: kernels may keep what they derive from them.
  for (int s : m.program->constant_slots) {
    const ir::Value* v = m.graph->value(m.program->slot_names[static_cast<size_t>(s)]);
    if (v && v->constant && v->constant->is_tensor() && v->constant->buffer()) v->constant->buffer()->freeze();
  }
}

GraphExecutor::~GraphExecutor() = default;

Status GraphExecutor::prepare() { return impl_->planned.empty() ? impl_->apply_plan() : Status::ok(); }

// Inputs by name (or the initializer a graph input defaults to), checked against the signature the
// graph was compiled for, then the constants.
Status GraphExecutor::Impl::bind_inputs(Frame& frame, const TensorMap& inputs) const {
  const Program& p = *program;
  for (size_t i = 0; i < graph->inputs.size(); ++i) {
    const std::string& name = graph->inputs[i];
    auto it = inputs.find(name);
    Tensor t;
    if (it != inputs.end()) {
      t = it->second;
    } else if (const ir::Value* v = graph->value(name); v && v->constant) {
      t = *v->constant;
    } else {
      return invalid_argument("missing input '" + name + "'");
    }
    auto sig = x->signature.find(name);
    if (sig != x->signature.end() && (!sig->second.is_tensor() || !t.is_tensor())) {
      // A sequence or optional: kind, element type and the element dims compiled for.
      const ir::ValueType got = ir::type_of(t);
      if (got.kind != sig->second.kind || (sig->second.dims && got.dims != sig->second.dims) ||
          (sig->second.dtype != DType::Undefined && got.dtype != sig->second.dtype))
        return invalid_argument("input '" + name + "' is " + got.to_string() + " but the graph was compiled for " +
                                sig->second.to_string() + "; compile again for this signature");
    } else if (sig != x->signature.end() && sig->second.dims &&
               (t.dtype() != sig->second.dtype || !fits_dims(t.shape(), sig->second, x->dim_ranges)))
      return invalid_argument("input '" + name + "' is " + std::string(dtype_name(t.dtype())) +
                              shape_to_string(t.shape()) + " but the graph was compiled for " +
                              sig->second.to_string() + ranges_text(sig->second, x->dim_ranges) +
                              "; compile again for this signature");
    frame.slots[static_cast<size_t>(p.input_slots[i])] = std::move(t);
  }
  for (int s : p.constant_slots)
    frame.slots[static_cast<size_t>(s)] = *graph->value(p.slot_names[static_cast<size_t>(s)])->constant;
  return Status::ok();
}

// Whole-graph replay: recorded at the second run (the first learned the kernel scratch), then
// launched. A failed recording leaves the frame as it was for the step-by-step run.
Status GraphExecutor::Impl::replay_or_record(Frame& frame, const RunOptions& options, bool& launched) {
  const Program& p = *program;
  Status st;
  if (!recorded) {
    ++recordings;
    record_again = false;
    Status rs = record(frame, options);
    if (!rs.is_ok()) {
      recorded.reset();
      interp->kernels_launched = 0;
      if (!record_again || recordings >= 3) {
        capture = nullptr;
        replay_note = "no whole-graph replay: recording failed: " + rs.message();
      }
      for (size_t i = 0; i < graph->inputs.size(); ++i) {  // the staged copies are fine inputs too
        if (i < staged.size() && staged[i].defined()) frame.slots[static_cast<size_t>(p.input_slots[i])] = staged[i];
      }
      return Status::ok();
    }
  } else {
    for (size_t i = 0; i < staged.size() && st.is_ok(); ++i)
      st = backend->copy_from_host(frame.slots[static_cast<size_t>(p.input_slots[i])], staged[i]);
  }
  if (st.is_ok()) st = recorded->launch();
  launched = true;
  if (st.is_ok()) {
    for (size_t k = 0; k < p.output_slots.size(); ++k)
      frame.slots[static_cast<size_t>(p.output_slots[k])] = fixed_outputs[k];
    replayed = true;
    interp->kernels_launched = static_cast<int64_t>(recorded->nodes());
  }
  return st;
}

// Step by step on a device: each host input is copied for this run (a replay copies them into its
// staged buffers instead). Kernels would otherwise upload it through the backend's cache of host
// buffers, which keeps the first copy while the buffer lives, and a training step rewrites its
// parameters in place between runs.
Status GraphExecutor::Impl::copy_inputs_to_device(Frame& frame) {
  const Program& p = *program;
  for (size_t i = 0; i < graph->inputs.size(); ++i) {
    Tensor& t = frame.slots[static_cast<size_t>(p.input_slots[i])];
    // Sequences and optionals stay on the host: their kernels run there (through the CPU fallback).
    if (!t.defined() || !t.is_tensor() || t.device().type == backend->device().type) continue;
    Allocator& a = backend->allocator_for(t.dtype());
    if (a.device().type != backend->device().type) continue;  // integer inputs stay on the host
    auto buf = a.make_buffer(std::max<size_t>(t.nbytes(), 1));
    if (!buf)
      return Status::error(ErrorCode::OutOfMemory,
                           "out of memory copying input '" + graph->inputs[i] + "' to the device");
    Tensor d(std::move(buf), t.dtype(), t.shape());
    MS_RETURN_IF_ERROR(backend->copy_from_host(t, d));
    t = std::move(d);
  }
  return Status::ok();
}

Expected<std::vector<Tensor>> GraphExecutor::run(const TensorMap& inputs, const RunOptions& options) {
  Impl& m = *impl_;
  const Program& p = *m.program;
  Interpreter& in = *m.interp;
  Frame frame(in, p, nullptr);
  MS_RETURN_IF_ERROR(m.bind_inputs(frame, inputs));
  // The first run, or steps whose scratch did not fit their arena slot last time: plan (again) so
  // it is held there from now on (here rather than after that run, so memory_plan() stays the plan
  // of the last run).
  if (m.planned.empty()) MS_RETURN_IF_ERROR(m.apply_plan());
  if (std::find(m.scratch_grew.begin(), m.scratch_grew.end(), 1) != m.scratch_grew.end()) {
    std::fill(m.scratch_grew.begin(), m.scratch_grew.end(), 0);
    MS_RETURN_IF_ERROR(m.apply_plan());
    m.recorded.reset();  // it read the old arena
  }
  in.set_options(&options);
  in.kernels_launched = 0;
  m.backend->allocator().reset_peak();
  const size_t base_in_use = m.backend->allocator().stats().in_use;
  RunObserver* obs = options.observer;
  const RunInfo info{ExecMode::Graph, m.backend->device(), options.iteration};
  if (obs) {
    obs->on_run_begin(info);
    for (const auto& s : m.plan.slots) obs->on_alloc(MemoryEvent{s.value, s.producer, s.offset, s.bytes, 0});
  }
  Status st;
  m.replayed = false;
  bool launched = false;
  if (m.packed_release && m.packed_release->pending()) m.packed_release->begin_run();
  // A replay runs no step on the host, so observed and tapped runs go step by step.
  if (m.capture && !obs && !options.tap && m.runs_done >= 1) st = m.replay_or_record(frame, options, launched);
  // Threads of the caller's parallel regions, restored after the steps that ran on fewer.
  const int all = std::max(1, omp_get_max_threads());
  if (!launched && st.is_ok() && !m.backend->device().is_cpu()) st = m.copy_inputs_to_device(frame);
  if (launched || !st.is_ok()) {
    // replayed above, or the inputs could not be copied
  } else if (m.x->branches.threads_used > 1 && !m.x->gpu_streams) {
    st = m.run_parallel(frame, options, all);
  } else {
    st = m.run_sequential(frame, options, obs, false, all);
  }
  omp_set_num_threads(all);
  m.backend->synchronize();
  if (obs) {
    for (const auto& s : m.plan.slots) obs->on_free(MemoryEvent{s.value, s.producer, s.offset, s.bytes, 0});
    obs->on_run_end(info);
  }
  in.set_options(nullptr);
  if (!st.is_ok()) return st;
  ++m.runs_done;
  m.stats.kernels = in.kernels_launched;
  const size_t dyn_peak = m.backend->allocator().stats().peak_in_use;
  m.stats.peak_bytes = m.plan.arena_bytes + (dyn_peak > base_in_use ? dyn_peak - base_in_use : 0);

  std::vector<Tensor> result;
  for (int s : p.output_slots) result.push_back(frame.slots[static_cast<size_t>(s)]);
  if (!m.backend->device().is_cpu()) MS_RETURN_IF_ERROR(to_host(*m.backend, result));
  return result;
}

void GraphExecutor::release_constants_once_packed() {
  Impl& m = *impl_;
  if (!m.packed_release && m.backend->device().is_cpu())
    m.packed_release = std::make_unique<PackedRelease>(*m.program, *m.graph);
}

uint64_t GraphExecutor::released_bytes() const {
  return impl_->packed_release ? impl_->packed_release->released_bytes() : 0;
}

const Executable& GraphExecutor::executable() const { return *impl_->x; }
const MemoryPlan& GraphExecutor::memory_plan() const { return impl_->planned.empty() ? impl_->x->plan : impl_->plan; }
const ir::Graph& GraphExecutor::graph() const { return *impl_->graph; }
const std::vector<int>& GraphExecutor::step_threads() const { return impl_->x->step_threads; }
RunStats GraphExecutor::last_stats() const { return impl_->stats; }
bool GraphExecutor::replayed() const { return impl_->replayed; }
const std::string& GraphExecutor::replay_note() const { return impl_->replay_note; }
size_t GraphExecutor::num_steps() const { return impl_->program->steps.size(); }

}  // namespace ms::runtime
