#include <chrono>

#include "engine/compiler/pipeline.h"
#include "engine/compiler/schedule.h"
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
};

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
  // O2: independent branches on concurrent CPU threads (recorded in the plan).
  m.step_threads.assign(p.steps.size(), 0);
  if (options.jit_level == JitLevel::O2 && options.parallel_branches)
    m.step_threads = compiler::schedule_branches(p, m.graph, std::max(1, backend.threads()));
  for (auto& sl : slots) sl.thread = m.step_threads[static_cast<size_t>(sl.first_step)];
  m.plan = plan_memory(std::move(slots), inplace);
  if (m.plan.arena_bytes) {
    m.arena = backend.arena_allocator().make_buffer(m.plan.arena_bytes);
    if (!m.arena)
      return Status::error(ErrorCode::OutOfMemory,
                           "out of memory allocating the " + std::to_string(m.plan.arena_bytes) + "-byte arena");
  }
  m.planned.resize(p.steps.size());
  for (size_t si = 0; si < p.steps.size(); ++si) m.planned[si].resize(p.steps[si].outputs.size());
  for (size_t k = 0; k < m.plan.slots.size(); ++k) {
    const MemorySlot& ms = m.plan.slots[k];
    const int v = slot_value[k];
    const size_t si = static_cast<size_t>(p.producer_step[static_cast<size_t>(v)]);
    const Step& s = p.steps[si];
    for (size_t o = 0; o < s.outputs.size(); ++o)
      if (s.outputs[o] == v) {
        const auto& t = m.out_types[si][o];
        m.planned[si][o] = Tensor(m.arena, t.dtype, *t.dims, ms.offset);
      }
  }
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
  for (size_t si = 0; si < p.steps.size() && st.is_ok(); ++si) {
    if (options.cancelled && options.cancelled()) {
      st = Status::error(ErrorCode::Cancelled, "cancelled");
      break;
    }
    const Step& step = p.steps[si];
    outs = m.planned[si];  // arena views; graph outputs allocated fresh below
    const bool is_static = m.is_static_step[si];
    if (is_static) {
      for (size_t o = 0; o < outs.size() && st.is_ok(); ++o) {
        if (outs[o].defined() || step.outputs[o] < 0) continue;
        const auto& t = m.out_types[si][o];
        auto a = allocate_value(*m.backend, obs, p.slot_names[static_cast<size_t>(step.outputs[o])], step.node->id,
                                t.dtype, *t.dims);
        if (!a) st = std::move(a).take_status();
        else outs[o] = std::move(*a);
      }
      if (!st.is_ok()) break;
    }
    st = in.dispatch(frame, step, outs, !is_static);
    if (!st.is_ok()) break;
    for (size_t o = 0; o < outs.size(); ++o)
      if (step.outputs[o] >= 0) frame.slots[static_cast<size_t>(step.outputs[o])] = std::move(outs[o]);
    for (int r : step.release) {
      if (obs && p.producer_step[static_cast<size_t>(r)] >= 0) {
        // Arena blocks end their lifetime here (the memory stays in the arena).
      }
      frame.slots[static_cast<size_t>(r)] = Tensor();
    }
  }
  m.backend->synchronize();
  if (obs) {
    for (const auto& s : m.plan.slots) obs->on_free(MemoryEvent{s.value, s.producer, s.offset, s.bytes, 0});
    obs->on_run_end(info);
  }
  in.set_options(nullptr);
  if (!st.is_ok()) return st;
  m.stats.kernels = in.kernels_launched;
  const size_t dyn_peak = m.backend->allocator().stats().peak_in_use;
  m.stats.peak_bytes = m.plan.arena_bytes + (dyn_peak > base_in_use ? dyn_peak - base_in_use : 0);
  std::vector<Tensor> result;
  for (int s : p.output_slots) result.push_back(frame.slots[static_cast<size_t>(s)]);
  return result;
}

const MemoryPlan& GraphExecutor::memory_plan() const { return impl_->plan; }
const ir::Graph& GraphExecutor::graph() const { return impl_->graph; }
const compiler::CompileResult& GraphExecutor::compile_result() const { return impl_->compiled; }
const std::vector<int>& GraphExecutor::step_threads() const { return impl_->step_threads; }
double GraphExecutor::compile_ms() const { return impl_->compile_ms; }
RunStats GraphExecutor::last_stats() const { return impl_->stats; }
size_t GraphExecutor::num_steps() const { return impl_->program ? impl_->program->steps.size() : 0; }

}  // namespace ms::runtime
