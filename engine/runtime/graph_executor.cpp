#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "engine/compiler/pipeline.h"
#include "engine/compiler/schedule.h"
#include "engine/runtime/branch_pool.h"
#include "engine/runtime/capture.h"
#include "engine/runtime/interpreter.h"
#include "engine/runtime/memory_plan.h"

namespace ms::runtime {

struct GraphExecutor::Impl {
  ir::Graph graph;
  Backend* backend = nullptr;
  std::unique_ptr<Interpreter> interp;
  const Program* program = nullptr;
  MemoryPlan plan;
  std::shared_ptr<Buffer> arena;
  std::vector<std::vector<Tensor>> planned;  // per step: arena views for static outputs (undefined otherwise)
  std::vector<char> is_static_step;          // all outputs static: no inference at run time
  std::vector<std::vector<ir::ValueType>> out_types;
  std::map<std::string, ir::ValueType> signature;
  double compile_ms = 0;
  RunStats stats;
  compiler::CompileResult compiled;
  std::vector<int> step_threads;
  // Concurrent branches (O2, threads_used > 1): per-step cross-thread waits, the steps each thread
  // runs, per release whether it is safe right after the step, one interpreter per extra thread.
  compiler::BranchPlan branches;
  std::vector<std::vector<size_t>> thread_steps;
  std::vector<std::vector<char>> release_now;  // per step, per entry of step.release
  std::vector<std::unique_ptr<Interpreter>> worker_interp;
  std::unique_ptr<BranchPool> pool;
  std::vector<char> single;  // O2: steps too small for a parallel region run on one thread
  // Memory plan inputs, kept for planning again: the values' slots (intervals widened for
  // concurrency), program slot of each, in-place pairs. Kernel scratch (reorders into a blocked
  // layout, oneDNN scratchpads) is planned in the arena too, one slot per step live only during it:
  // the bytes a step asked for are learned when it runs, and the plan grows once to hold them.
  std::vector<MemorySlot> value_slots;
  std::vector<int> slot_value;
  std::vector<std::pair<size_t, size_t>> inplace;
  bool plan_scratch = false;
  std::vector<uint64_t> scratch_need, scratch_offset, scratch_bytes;  // per step
  std::vector<char> scratch_grew;  // per step: asked for more than planned in the last run
  // Per step, the scratch a kernel may take for a faster algorithm (KernelContext::scratch_budget):
  // the room under 1.05x the values' lower bound beside the values live at the step (and at the
  // steps that may run beside it), from the first plan. A faster algorithm may so cost the arena at
  // most 5% (resnet50: Winograd in layers 1 and 3 needs 0.07 and 0.13 MiB more than the room under
  // the bound itself). Fixed at compile, so every run takes the same algorithms.
  std::vector<uint64_t> scratch_budget;
  // Whole-graph replay (O2, a backend with GraphCapture, every step recordable): the second run
  // (plan final) records the steps once; later runs copy the inputs into the staged buffers, launch
  // the recording and read the fixed output buffers. A run with an observer launches step by step
  // (the profiler sees every op), as does any run after the recording failed (replay_note says why).
  GraphCapture* capture = nullptr;
  std::string replay_note;
  bool replayed = false;
  int runs_done = 0;
  std::unique_ptr<CapturedRun> recorded;
  std::vector<Tensor> staged;  // per graph input, its device buffer
  std::vector<Tensor> pins;    // device copies of the constants the recording reads
  std::vector<Tensor> fixed_outputs;  // graph outputs where the recording leaves them
  bool record_again = false;          // the recording failed only because the plan must grow
  int recordings = 0;

  // CUDA at O2: concurrent branches on streams (step_threads is each step's stream); the host
  // enqueues in program order, stream k waiting on the streams of the steps it reads.
  bool gpu_streams = false;

  Status apply_plan();
  void check_replay(const CompileOptions& options);
  Status run_sequential(Frame& frame, const RunOptions& options, RunObserver* obs, bool recording, int all);
  Status record(Frame& frame, const RunOptions& options);

  Status run_step(Interpreter& in, Frame& frame, size_t si, std::vector<Tensor>& outs, RunObserver* obs);
  Status run_parallel(Frame& frame, const RunOptions& options, int all);
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
    const uint64_t n = align_up(static_cast<uint64_t>(numel(shape)) * dtype_size(dtype), 64);
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

}  // namespace

Status GraphExecutor::Impl::apply_plan() {
  const Program& p = *program;
  std::vector<MemorySlot> all = value_slots;
  std::vector<int> scratch_slot(p.steps.size(), -1);
  if (plan_scratch)
    for (size_t si = 0; si < p.steps.size(); ++si) {
      if (!scratch_need[si]) continue;
      MemorySlot sc;
      sc.value = p.steps[si].node->label() + " scratch";
      sc.producer = p.steps[si].node->id;
      sc.bytes = scratch_need[si];
      sc.first_step = branches.lo[si];  // whatever may run beside the step must not use these bytes
      sc.last_step = branches.hi[si];
      sc.thread = step_threads[si];
      scratch_slot[si] = static_cast<int>(all.size());
      all.push_back(std::move(sc));
    }
  // Concat inputs inside their output (`within`, set at compile): their output's bytes are taken
  // from the first input on, which may cost more arena than the copies it saves (an Inception block
  // at O1 with the convs' reorder scratch: 11.1 MiB against 10.3); then they keep blocks of their own.
  bool nested = false;
  for (const auto& sl : all) nested = nested || sl.within >= 0;
  if (nested) {
    std::vector<MemorySlot> apart = all;
    for (auto& sl : apart) sl.within = -1;
    MemoryPlan with = plan_memory(all, inplace), without = plan_memory(std::move(apart), inplace);
    plan = with.arena_bytes <= without.arena_bytes ? std::move(with) : std::move(without);
  } else {
    plan = plan_memory(std::move(all), inplace);
  }
  arena.reset();
  if (plan.arena_bytes) {
    // Host arenas are freed with std::free directly, not through the backend's allocator, so an
    // executor that outlives its backend (kept in static storage until exit) still frees safely.
    Allocator& raw = backend->arena_allocator();
    if (dynamic_cast<HostAllocator*>(&raw)) {
      void* mem = raw.allocate(plan.arena_bytes);
      if (mem) arena = std::make_shared<Buffer>(mem, plan.arena_bytes, raw.device(), [](void* d, size_t) { std::free(d); });
    } else {
      arena = raw.make_buffer(plan.arena_bytes);
    }
    if (!arena)
      return Status::error(ErrorCode::OutOfMemory,
                           "out of memory allocating the " + std::to_string(plan.arena_bytes) + "-byte arena");
  }
  planned.assign(p.steps.size(), {});
  for (size_t si = 0; si < p.steps.size(); ++si) planned[si].resize(p.steps[si].outputs.size());
  for (size_t k = 0; k < value_slots.size(); ++k) {
    const MemorySlot& ms = plan.slots[k];
    const int v = slot_value[k];
    const size_t si = static_cast<size_t>(p.producer_step[static_cast<size_t>(v)]);
    const Step& s = p.steps[si];
    for (size_t o = 0; o < s.outputs.size(); ++o)
      if (s.outputs[o] == v) {
        const auto& t = out_types[si][o];
        planned[si][o] = Tensor(arena, t.dtype, *t.dims, ms.offset);
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
  const bool is_static = is_static_step[si];
  if (is_static) {
    for (size_t o = 0; o < outs.size(); ++o) {
      if (outs[o].defined() || step.outputs[o] < 0) continue;
      const auto& t = out_types[si][o];
      auto a = allocate_value(*backend, obs, p.slot_names[static_cast<size_t>(step.outputs[o])], step.node->id,
                              t.dtype, *t.dims);
      if (!a) return std::move(a).take_status();
      outs[o] = std::move(*a);
    }
  }
  if (plan_scratch) {
    ArenaScratch scratch(*backend, obs, *step.node, arena, scratch_offset[si], scratch_bytes[si], scratch_budget[si]);
    MS_RETURN_IF_ERROR(in.dispatch(frame, step, outs, !is_static, &scratch));
    if (scratch.requested() > scratch_need[si]) {
      scratch_need[si] = scratch.requested();
      scratch_grew[si] = 1;
    }
  } else {
    MS_RETURN_IF_ERROR(in.dispatch(frame, step, outs, !is_static));
  }
  for (size_t o = 0; o < outs.size(); ++o)
    if (step.outputs[o] >= 0) frame.slots[static_cast<size_t>(step.outputs[o])] = std::move(outs[o]);
  return Status::ok();
}

// Replay needs every step recordable: static shapes, no subgraphs, no CPU work, no host waits.
void GraphExecutor::Impl::check_replay(const CompileOptions& options) {
  if (options.jit_level != JitLevel::O2 || backend->device().is_cpu()) return;
  auto* gc = dynamic_cast<GraphCapture*>(backend);
  if (!gc) return;
  if (const char* env = std::getenv("MODESCOPE_CUDA_GRAPHS"); env && std::string(env) == "0") {
    replay_note = "whole-graph replay turned off (MODESCOPE_CUDA_GRAPHS=0)";
    return;
  }
  const Program& p = *program;
  std::string why;
  if (!options.plan_memory) why = "memory planning is off";
  if (branches.threads_used > 1 && !gpu_streams) why = "branches run on CPU threads";
  for (size_t i = 0; why.empty() && i < graph.inputs.size(); ++i) {
    const ir::Value* v = graph.value(graph.inputs[i]);
    if (!v || !is_float(v->type.dtype) || !v->type.is_static())
      why = "input '" + graph.inputs[i] + "' is " + (v ? v->type.to_string() : std::string("untyped")) +
            " (only statically shaped float inputs are staged on the device)";
  }
  for (size_t si = 0; why.empty() && si < p.steps.size(); ++si) {
    const ir::Node& n = *p.steps[si].node;
    const std::string at = n.label() + " ";
    if (!is_static_step[si]) {
      why = at + "has a dynamic output shape";
    } else if (n.has_subgraph()) {
      why = at + "runs a subgraph";
    } else if (std::string r = gc->why_not_capturable(n); !r.empty()) {
      why = at + r;
    }
  }
  if (!why.empty()) {
    replay_note = "no whole-graph replay: " + why;
    return;
  }
  capture = gc;
}

// Records the steps once (nothing runs while recording). Inputs are copied into device buffers
// the recording reads, graph outputs get fixed buffers, and the constants' device copies are held.
Status GraphExecutor::Impl::record(Frame& frame, const RunOptions& options) {
  const Program& p = *program;
  staged.assign(graph.inputs.size(), Tensor());
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    Tensor& t = frame.slots[static_cast<size_t>(p.input_slots[i])];
    auto buf = backend->arena_allocator().make_buffer(std::max<size_t>(t.nbytes(), 1));
    if (!buf) return Status::error(ErrorCode::OutOfMemory, "out of memory staging input '" + graph.inputs[i] + "'");
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
      const auto& t = out_types[si][o];
      const uint64_t bytes = static_cast<uint64_t>(ops::static_numel(t)) * dtype_size(t.dtype);
      auto buf = backend->arena_allocator().make_buffer(std::max<uint64_t>(bytes, 1));
      if (!buf) return Status::error(ErrorCode::OutOfMemory, "out of memory for output of " + p.steps[si].node->label());
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

// The steps in program order on the caller's thread (on CUDA streams when gpu_streams: stream k
// first waits for the streams of the steps it reads, and the run forks from and joins stream 0).
// O2 runs small steps on one CPU thread. While recording, a step whose scratch outgrew the plan
// fails the recording (its scratch came from outside the arena).
Status GraphExecutor::Impl::run_sequential(Frame& frame, const RunOptions& options, RunObserver* obs, bool recording,
                                           int all) {
  const Program& p = *program;
  GraphCapture* gc = gpu_streams ? dynamic_cast<GraphCapture*>(backend) : nullptr;
  if (gc)
    for (int k = 1; k < branches.threads_used; ++k) MS_RETURN_IF_ERROR(gc->stream_wait(k, 0));
  Status st;
  std::vector<Tensor> outs;
  int cur = all;
  for (size_t si = 0; si < p.steps.size() && st.is_ok(); ++si) {
    if (options.cancelled && options.cancelled()) {
      st = Status::error(ErrorCode::Cancelled, "cancelled");
      break;
    }
    if (gc) {
      const int k = step_threads[si];
      for (int d : branches.waits[si])
        if (st.is_ok()) st = gc->stream_wait(k, step_threads[static_cast<size_t>(d)]);
      if (st.is_ok()) st = gc->use_stream(k);
      if (!st.is_ok()) break;
    } else if (!recording) {
      const int want = single[si] ? 1 : all;
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
    for (int k = 1; k < branches.threads_used && js.is_ok(); ++k) js = gc->stream_wait(0, k);
    if (st.is_ok()) st = js;
  }
  return st;
}

// Each thread runs its steps in program order, waiting for the steps of other threads it reads;
// a step with no concurrent peer runs on the caller's thread with all the cores, the others with
// one core each (their branches share the machine). A value another thread may still read is
// released at the end of the run instead of after its last reader in program order.
Status GraphExecutor::Impl::run_parallel(Frame& frame, const RunOptions& options, int all) {
  const Program& p = *program;
  const size_t n = p.steps.size();
  const int nthreads = branches.threads_used;
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
    for (size_t si : thread_steps[static_cast<size_t>(t)]) {
      for (int d : branches.waits[si]) {
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
      const bool alone = branches.lo[si] == static_cast<int>(si) && branches.hi[si] == static_cast<int>(si);
      const int want = alone && !single[si] ? all : 1;
      if (want != cur) omp_set_num_threads(cur = want);
      Status st = run_step(in, frame, si, outs, obs);
      if (!st.is_ok()) return fail(t, std::move(st));
      const Step& step = p.steps[si];
      for (size_t r = 0; r < step.release.size(); ++r)
        if (release_now[si][r]) frame.slots[static_cast<size_t>(step.release[r])] = Tensor();
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

GraphExecutor::GraphExecutor() : impl_(std::make_unique<Impl>()) {}
GraphExecutor::~GraphExecutor() = default;

Expected<std::unique_ptr<GraphExecutor>> GraphExecutor::compile(const ir::Graph& graph, Backend& backend,
                                                                const std::map<std::string, ir::ValueType>& signature,
                                                                const CompileOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<GraphExecutor> ex(new GraphExecutor());
  Impl& m = *ex->impl_;
  m.graph = graph.deep_copy();
  link_subgraph_parents(m.graph);
  m.backend = &backend;
  m.signature = signature;
  for (const auto& name : m.graph.inputs) {
    auto it = signature.find(name);
    ir::Value* v = m.graph.value(name);
    if (it != signature.end() && v) v->type = it->second;
  }
  compiler::JitConfig jit;
  jit.jit_level = options.jit_level;
  jit.disabled_passes = options.disabled_passes;
  jit.stop_after = options.stop_after;
  jit.snapshots = options.keep_snapshots;
  jit.verify = options.verify_passes;
  jit.amp = options.amp;
  auto compiled = compiler::run_pipeline(m.graph, &backend, jit);
  if (!compiled) return std::move(compiled).take_status();
  m.compiled = std::move(*compiled);
  // Types of the final graph, whatever passes ran (cheap; also validates what the passes made).
  MS_RETURN_IF_ERROR(infer_graph_types(m.graph, &backend));
  m.interp = std::make_unique<Interpreter>(backend, ExecMode::Graph);
  auto prog = m.interp->program_for(m.graph);
  if (!prog) return std::move(prog).take_status();
  m.program = *prog;
  // Kernels resolved once; report every op without one together.
  std::string missing;
  for (const Step& s : m.program->steps) {
    const_cast<Step&>(s).kernel = backend.find_kernel(*s.node);
    if (!s.kernel && missing.find(s.node->op_type) == std::string::npos)
      missing += (missing.empty() ? "" : ", ") + s.node->op_type + " (" + s.node->label() + ")";
  }
  if (!missing.empty()) return unsupported("no " + backend.name() + " kernel for: " + missing);

  // Liveness of statically shaped intermediates (graph outputs are allocated per run: callers keep them).
  const Program& p = *m.program;
  std::vector<MemorySlot> slots;
  std::vector<int> slot_value;  // plan slot -> program slot
  std::vector<int> plan_index(p.slot_names.size(), -1);  // program slot -> plan slot
  std::vector<std::pair<size_t, size_t>> inplace;
  m.out_types.resize(p.steps.size());
  m.is_static_step.assign(p.steps.size(), 1);
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& s = p.steps[si];
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      const int v = s.outputs[o];
      if (v < 0) {
        m.out_types[si].emplace_back();
        continue;
      }
      const ir::Value* val = m.graph.value(p.slot_names[static_cast<size_t>(v)]);
      const ir::ValueType t = val ? val->type : ir::ValueType{};
      m.out_types[si].push_back(t);
      if (!t.is_static() || t.dtype == DType::Undefined || dtype_size(t.dtype) == 0) {
        m.is_static_step[si] = 0;
        continue;
      }
      if (!options.plan_memory || p.last_use[static_cast<size_t>(v)] >= static_cast<int>(p.steps.size())) continue;
      MemorySlot ms;
      ms.value = p.slot_names[static_cast<size_t>(v)];
      ms.producer = s.node->id;
      ms.bytes = static_cast<uint64_t>(ops::static_numel(t)) * dtype_size(t.dtype);
      ms.first_step = static_cast<int>(si);
      ms.last_step = std::max(static_cast<int>(si), p.last_use[static_cast<size_t>(v)]);
      plan_index[static_cast<size_t>(v)] = static_cast<int>(slots.size());
      // In place: output 0 over an input whose last reader is this step, same dtype and shape.
      if (options.inplace && o == 0)
        for (size_t in : inplace_inputs(*s.node)) {
          if (in >= s.inputs.size() || s.inputs[in] < 0) continue;
          const int iv = s.inputs[in];
          const int pi = plan_index[static_cast<size_t>(iv)];
          if (pi < 0 || p.last_use[static_cast<size_t>(iv)] != static_cast<int>(si)) continue;
          const ir::Value* ival = m.graph.value(p.slot_names[static_cast<size_t>(iv)]);
          if (!ival || ival->type.dtype != t.dtype || !t.dims || !ival->type.dims || *ival->type.dims != *t.dims) continue;
          inplace.emplace_back(static_cast<size_t>(pi), slots.size());
          break;
        }
      slots.push_back(ms);
      slot_value.push_back(v);
    }
  }
  // A Concat along an axis with nothing but 1s before it takes each input as one contiguous piece of
  // its output: the producers write there directly and the Concat copies nothing (an Inception
  // block's branches at O2: 170 us of copies gone, arena 8.4 -> 8.0 MiB). Inputs that are not
  // planned here (graph inputs, initializers), repeated, taken in place by another op, already
  // inside another Concat or not 64-byte aligned in the output are copied as before. CPU only: the
  // CUDA Concat kernel copies every input, and a copy onto itself is not one to record.
  if (options.plan_memory && options.jit_level != JitLevel::O0 && backend.device().is_cpu()) {
    std::set<size_t> in_place;
    for (const auto& [a, b] : inplace) {
      in_place.insert(a);
      in_place.insert(b);
    }
    for (size_t si = 0; si < p.steps.size(); ++si) {
      const Step& s = p.steps[si];
      if (s.node->op_type != "Concat" || !s.node->domain.empty() || s.outputs.empty() || s.outputs[0] < 0) continue;
      const int oc = plan_index[static_cast<size_t>(s.outputs[0])];
      const ir::ValueType& t = m.out_types[si][0];
      if (oc < 0 || !t.is_static() || t.dims->empty()) continue;
      const int64_t rank = static_cast<int64_t>(t.dims->size());
      int64_t axis = s.node->attr_int("axis", 0);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) continue;
      bool prefix_one = true;
      for (int64_t d = 0; d < axis; ++d) prefix_one = prefix_one && (*t.dims)[static_cast<size_t>(d)] == 1;
      if (!prefix_one) continue;
      uint64_t offset = 0;
      std::set<int> seen;
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        const int iv = s.inputs[k];
        const ir::Value* ival = iv >= 0 ? m.graph.value(p.slot_names[static_cast<size_t>(iv)]) : nullptr;
        if (!ival || !ival->type.is_static() || ival->type.dtype != t.dtype) break;
        const uint64_t bytes = static_cast<uint64_t>(ops::static_numel(ival->type)) * dtype_size(t.dtype);
        const int pi = plan_index[static_cast<size_t>(iv)];
        if (pi >= 0 && seen.insert(iv).second && !in_place.count(static_cast<size_t>(pi)) && offset % 64 == 0 &&
            slots[static_cast<size_t>(pi)].within < 0 && pi != oc) {
          slots[static_cast<size_t>(pi)].within = oc;
          slots[static_cast<size_t>(pi)].within_offset = offset;
        }
        offset += bytes;
      }
    }
  }
  // O2: independent branches on concurrent CPU threads (recorded in the plan).
  m.step_threads.assign(p.steps.size(), 0);
  bool subgraphs = false;  // If/Loop bodies run through the shared interpreter: keep those graphs sequential
  for (const Step& s : p.steps) subgraphs = subgraphs || s.node->has_subgraph();
  // Happens-before bitsets are n^2 bits: very long programs stay sequential.
  // (CPU only: the CUDA backend has one stream and its library handles are not shared across threads.)
  // Each concurrent branch must keep at least two threads: measured on 2 cores, splitting them one per
  // branch made inception_block 0.73x PyNative against 1.30x with the branches in order.
  if (options.jit_level == JitLevel::O2 && options.parallel_branches && backend.device().is_cpu() && !subgraphs &&
      backend.threads() >= 4 && p.steps.size() <= 4096)
    m.step_threads = compiler::schedule_branches(p, m.graph, std::max(1, backend.threads()));
  // CUDA (O2): branches on separate streams with MODESCOPE_CUDA_STREAMS=N (default one stream).
  // Measured on an H200: the Inception block 1.21x faster on 4 streams, resnet50 batch 1 no faster
  // (3.72 / 3.16 ms against 3.18 ms on one: only its downsampling shortcuts overlap).
  if (options.jit_level == JitLevel::O2 && options.parallel_branches && !backend.device().is_cpu() && !subgraphs &&
      p.steps.size() <= 4096)
    if (auto* gc = dynamic_cast<GraphCapture*>(&backend)) {
      int streams = 1;
      if (const char* env = std::getenv("MODESCOPE_CUDA_STREAMS")) streams = std::atoi(env);
      streams = std::clamp(streams, 1, gc->max_streams());
      if (streams > 1) m.step_threads = compiler::schedule_branches(p, m.graph, streams);
    }
  m.branches = compiler::plan_branches(p, m.step_threads);
  m.gpu_streams = !backend.device().is_cpu() && m.branches.threads_used > 1;
  m.single.assign(p.steps.size(), 0);
  if (options.jit_level == JitLevel::O2) m.single = compiler::single_threaded_steps(p, m.graph);
  std::vector<std::vector<int>> readers(p.slot_names.size());
  for (size_t si = 0; si < p.steps.size(); ++si) {
    for (int v : p.steps[si].inputs)
      if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(si));
    for (int v : p.steps[si].implicit)
      if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(si));
  }
  if (m.branches.threads_used > 1) {
    // A block may be reused only by a value whose producer every use of the previous owner happens
    // before. Widening each value's interval to the steps that may run beside its producer or
    // readers makes the interval test of the planner say exactly that (and keeps in-place reuse to
    // steps nothing runs beside).
    std::vector<MemorySlot> widened = slots;
    for (size_t k = 0; k < widened.size(); ++k) {
      MemorySlot& sl = widened[k];
      const int prod = sl.first_step;
      sl.first_step = std::min(sl.first_step, m.branches.lo[static_cast<size_t>(prod)]);
      sl.last_step = std::max(sl.last_step, m.branches.hi[static_cast<size_t>(prod)]);
      for (int r : readers[static_cast<size_t>(slot_value[k])]) {
        sl.first_step = std::min(sl.first_step, m.branches.lo[static_cast<size_t>(r)]);
        sl.last_step = std::max(sl.last_step, m.branches.hi[static_cast<size_t>(r)]);
      }
    }
    // Concurrent branches cost memory (both branches' values live at once). Worth it when most of
    // the work overlaps (an Inception block) or when it costs little memory (projections side by
    // side); a ResNet, where only the downsampling shortcut can overlap, stays sequential.
    double total = 0, overlapping = 0;
    for (size_t si = 0; si < p.steps.size(); ++si) {
      const double c = compiler::step_cost(p.steps[si], m.graph);
      total += c;
      if (m.branches.lo[si] != static_cast<int>(si) || m.branches.hi[si] != static_cast<int>(si)) overlapping += c;
    }
    const uint64_t lb_par = plan_memory(widened, inplace).lower_bound;
    const uint64_t lb_seq = plan_memory(slots, inplace).lower_bound;
    // (Streams asked for on CUDA are kept: device memory is plentiful.)
    if (m.gpu_streams || overlapping >= 0.5 * total ||
        static_cast<double>(lb_par) <= 1.1 * static_cast<double>(lb_seq)) {
      slots = std::move(widened);
    } else {
      m.branches = compiler::plan_branches(p, std::vector<int>(p.steps.size(), 0));
    }
  }
  m.gpu_streams = m.gpu_streams && m.branches.threads_used > 1;
  m.step_threads = m.branches.thread;
  for (size_t k = 0; k < slots.size(); ++k)
    slots[k].thread = m.step_threads[static_cast<size_t>(p.producer_step[static_cast<size_t>(slot_value[k])])];
  if (m.branches.threads_used > 1 && !m.gpu_streams) {
    m.thread_steps.assign(static_cast<size_t>(m.branches.threads_used), {});
    for (size_t si = 0; si < p.steps.size(); ++si)
      m.thread_steps[static_cast<size_t>(m.step_threads[si])].push_back(si);
    // Release after the step only when every other reader happens before it.
    m.release_now.resize(p.steps.size());
    for (size_t si = 0; si < p.steps.size(); ++si)
      for (int r : p.steps[si].release) {
        bool ok = true;
        for (int q : readers[static_cast<size_t>(r)])
          ok = ok && (q == static_cast<int>(si) || m.branches.before(q, static_cast<int>(si)));
        m.release_now[si].push_back(ok);
      }
    for (int t = 1; t < m.branches.threads_used; ++t)
      m.worker_interp.push_back(std::make_unique<Interpreter>(backend, ExecMode::Graph));
    m.pool = std::make_unique<BranchPool>();
  }
  m.value_slots = std::move(slots);
  m.slot_value = std::move(slot_value);
  m.inplace = std::move(inplace);
  m.plan_scratch = options.plan_memory;
  m.scratch_need.assign(p.steps.size(), 0);
  m.scratch_grew.assign(p.steps.size(), 0);
  MS_RETURN_IF_ERROR(m.apply_plan());
  m.scratch_budget.assign(p.steps.size(), 0);
  const uint64_t cap = m.plan.lower_bound + m.plan.lower_bound / 20;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    uint64_t room = UINT64_MAX;
    for (int t = m.branches.lo[si]; t <= m.branches.hi[si]; ++t) {
      const uint64_t live = static_cast<size_t>(t) < m.plan.live.size() ? m.plan.live[static_cast<size_t>(t)] : 0;
      room = std::min(room, cap > live ? cap - live : 0);
    }
    m.scratch_budget[si] = room == UINT64_MAX ? 0 : room;
  }
  m.check_replay(options);
  m.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return ex;
}

Expected<std::vector<Tensor>> GraphExecutor::run(const TensorMap& inputs, const RunOptions& options) {
  Impl& m = *impl_;
  const Program& p = *m.program;
  Interpreter& in = *m.interp;
  Frame frame(in, p, nullptr);
  for (size_t i = 0; i < m.graph.inputs.size(); ++i) {
    const std::string& name = m.graph.inputs[i];
    auto it = inputs.find(name);
    Tensor t;
    if (it != inputs.end()) {
      t = it->second;
    } else if (const ir::Value* v = m.graph.value(name); v && v->constant) {
      t = *v->constant;
    } else {
      return invalid_argument("missing input '" + name + "'");
    }
    auto sig = m.signature.find(name);
    if (sig != m.signature.end() && sig->second.dims && (t.dtype() != sig->second.dtype || t.shape() != *sig->second.dims))
      return invalid_argument("input '" + name + "' is " + std::string(dtype_name(t.dtype())) +
                              shape_to_string(t.shape()) + " but the graph was compiled for " +
                              sig->second.to_string() + "; compile again for this signature");
    frame.slots[static_cast<size_t>(p.input_slots[i])] = std::move(t);
  }
  for (int s : p.constant_slots)
    frame.slots[static_cast<size_t>(s)] = *m.graph.value(p.slot_names[static_cast<size_t>(s)])->constant;

  // Steps whose scratch did not fit their arena slot last time: plan again so it is held there from
  // now on (here rather than after that run, so memory_plan() stays the plan of the last run).
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
    for (const auto& s : m.plan.slots)
      obs->on_alloc(MemoryEvent{s.value, s.producer, s.offset, s.bytes, 0});
  }
  std::vector<Tensor> outs;
  Status st;
  // Whole-graph replay: recorded at the second run (the first learned the kernel scratch), then
  // launched. A failed recording leaves the frame as it was for the step-by-step run below.
  m.replayed = false;
  bool launched = false;
  if (m.capture && !obs && m.runs_done >= 1) {
    if (!m.recorded) {
      ++m.recordings;
      m.record_again = false;
      Status rs = m.record(frame, options);
      if (!rs.is_ok()) {
        m.recorded.reset();
        in.kernels_launched = 0;
        if (!m.record_again || m.recordings >= 3) {
          m.capture = nullptr;
          m.replay_note = "no whole-graph replay: recording failed: " + rs.message();
        }
        for (size_t i = 0; i < m.graph.inputs.size(); ++i) {  // the staged copies are fine inputs too
          if (i < m.staged.size() && m.staged[i].defined())
            frame.slots[static_cast<size_t>(p.input_slots[i])] = m.staged[i];
        }
      } else {
        st = m.recorded->launch();
        launched = true;
      }
    } else {
      for (size_t i = 0; i < m.staged.size() && st.is_ok(); ++i)
        st = m.backend->copy_from_host(frame.slots[static_cast<size_t>(p.input_slots[i])], m.staged[i]);
      if (st.is_ok()) st = m.recorded->launch();
      launched = true;
    }
    if (launched && st.is_ok()) {
      for (size_t k = 0; k < p.output_slots.size(); ++k)
        frame.slots[static_cast<size_t>(p.output_slots[k])] = m.fixed_outputs[k];
      m.replayed = true;
      in.kernels_launched = static_cast<int64_t>(m.recorded->nodes());
    }
  }
  // Threads of the caller's parallel regions, restored after the steps that ran on fewer.
  const int all = std::max(1, omp_get_max_threads());
  // Step by step on a device: each host input is copied for this run (a replay copies them into its
  // staged buffers instead). Kernels would otherwise upload it through the backend's cache of host
  // buffers, which keeps the first copy while the buffer lives, and a training step rewrites its
  // parameters in place between runs.
  if (!launched && !m.backend->device().is_cpu())
    for (size_t i = 0; i < m.graph.inputs.size() && st.is_ok(); ++i) {
      Tensor& t = frame.slots[static_cast<size_t>(p.input_slots[i])];
      if (!t.defined() || t.device().type == m.backend->device().type) continue;
      Allocator& a = m.backend->allocator_for(t.dtype());
      if (a.device().type != m.backend->device().type) continue;  // integer inputs stay on the host
      auto buf = a.make_buffer(std::max<size_t>(t.nbytes(), 1));
      if (!buf) {
        st = Status::error(ErrorCode::OutOfMemory, "out of memory copying input '" + m.graph.inputs[i] + "' to the device");
        break;
      }
      Tensor d(std::move(buf), t.dtype(), t.shape());
      st = m.backend->copy_from_host(t, d);
      t = std::move(d);
    }
  if (launched || !st.is_ok()) {
    // replayed above, or the inputs could not be copied
  } else if (m.branches.threads_used > 1 && !m.gpu_streams) {
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

const MemoryPlan& GraphExecutor::memory_plan() const { return impl_->plan; }
const ir::Graph& GraphExecutor::graph() const { return impl_->graph; }
const compiler::CompileResult& GraphExecutor::compile_result() const { return impl_->compiled; }
const std::vector<int>& GraphExecutor::step_threads() const { return impl_->step_threads; }
double GraphExecutor::compile_ms() const { return impl_->compile_ms; }
RunStats GraphExecutor::last_stats() const { return impl_->stats; }
bool GraphExecutor::replayed() const { return impl_->replayed; }
const std::string& GraphExecutor::replay_note() const { return impl_->replay_note; }
size_t GraphExecutor::num_steps() const { return impl_->program ? impl_->program->steps.size() : 0; }

}  // namespace ms::runtime
