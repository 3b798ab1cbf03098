#include "engine/compiler/compile.h"
#include "engine/compiler/infer.h"
#include "profiler/record/profile_run.h"

#include <chrono>
#include <cstdio>

namespace ms::prof {

namespace {

// The Recorder plus CUPTI's external correlation: each op's NodeId is pushed while it runs, so the
// GPU work it launches names its node even when kernels run long after the op returned.
class GpuCorrelatingObserver final : public runtime::RunObserver {
 public:
  GpuCorrelatingObserver(Recorder& recorder, CuptiCollector& gpu) : rec_(recorder), gpu_(gpu) {}
  void on_run_begin(const runtime::RunInfo& i) override { rec_.on_run_begin(i); }
  void on_run_end(const runtime::RunInfo& i) override { rec_.on_run_end(i); }
  void on_op_begin(const ir::Node& n) override {
    rec_.on_op_begin(n);
    gpu_.push_external(n.id.value);
  }
  void on_op_end(const ir::Node& n) override {
    gpu_.pop_external();
    rec_.on_op_end(n);
  }
  void on_kernel_begin(const ir::Node& n, std::string_view impl) override { rec_.on_kernel_begin(n, impl); }
  void on_kernel_impl(const ir::Node& n, std::string_view impl) override { rec_.on_kernel_impl(n, impl); }
  void on_kernel_end(const ir::Node& n) override { rec_.on_kernel_end(n); }
  void on_alloc(const runtime::MemoryEvent& e) override { rec_.on_alloc(e); }
  void on_free(const runtime::MemoryEvent& e) override { rec_.on_free(e); }

 private:
  Recorder& rec_;
  CuptiCollector& gpu_;
};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

Expected<ProfiledRun> profile_run(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                                  const ProfileOptions& options) {
  using clock = std::chrono::steady_clock;
  ProfiledRun out;
  std::map<std::string, ir::ValueType> sig;
  for (const auto& [name, t] : inputs) sig[name] = ir::ValueType{t.dtype(), t.shape(), {}};

  std::unique_ptr<runtime::EagerExecutor> eager;
  std::unique_ptr<compiler::CompiledExecutor> graph;
  ir::Graph typed;  // eager: the model with types inferred from the inputs (shapes and cost per node)
  if (options.mode == runtime::ExecMode::PyNative) {
    eager = std::make_unique<runtime::EagerExecutor>(g, backend);
    typed = g.deep_copy();
    for (const auto& name : typed.inputs) {
      auto it = sig.find(name);
      if (ir::Value* v = typed.value(name); v && it != sig.end()) v->type = it->second;
    }
    // Best effort: a model whose types cannot be inferred statically still profiles (no shapes).
    if (!compiler::infer_graph_types(typed, &backend).is_ok()) typed = g.deep_copy();
  } else {
    auto c = compiler::compile_executor(g, backend, sig, options.compile);
    if (!c) return std::move(c).take_status();
    graph = std::move(*c);
    out.compile_ms = graph->compile_ms();
  }

  // GPU activity: only for a CUDA backend; any failure leaves a note and the host profile intact.
  std::unique_ptr<CuptiCollector> gpu;
  if (options.record && options.gpu_activity && backend.device().type == DeviceType::CUDA) {
    auto c = options.gpu_collector ? options.gpu_collector() : create_cupti_collector();
    if (c) gpu = std::move(*c);
    else out.gpu_note = c.status().message();
  }
  Recorder recorder(options.recorder);
  std::unique_ptr<GpuCorrelatingObserver> correlating;
  runtime::RunObserver* observer = &recorder;
  const int total = std::max(0, options.warmup) + std::max(1, options.iters);
  for (int i = 0; i < total; ++i) {
    runtime::RunOptions ro;
    ro.iteration = i - std::max(0, options.warmup);
    const bool timed = i >= options.warmup;
    if (timed && gpu && !gpu->active() && out.gpu_note.empty()) {
      backend.synchronize();  // warm-up work stays out of the activity
      if (Status s = gpu->start(); s.is_ok()) {
        correlating = std::make_unique<GpuCorrelatingObserver>(recorder, *gpu);
        observer = correlating.get();
      } else {
        out.gpu_note = s.message();
      }
    }
    if (timed && options.record) ro.observer = observer;
    const auto t0 = clock::now();
    auto outs = eager ? eager->run(inputs, ro) : graph->run(inputs, ro);
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    if (!outs) return std::move(outs).take_status();
    if (timed) out.latencies_ms.push_back(ms);
    // Observed buffers report their free to the recorder, which dies here: keep host copies.
    if (i == total - 1)
      for (const Tensor& t : *outs) out.outputs.push_back(ro.observer ? t.clone() : t);
  }
  if (!options.record) return out;

  GpuActivity activity;
  bool have_gpu = false;
  if (gpu && gpu->active()) {
    backend.synchronize();  // kernels still running would reach CUPTI incomplete
    auto a = gpu->stop();
    if (a) {
      activity = std::move(*a);
      have_gpu = true;
      out.gpu_records = activity.kernels.size() + activity.memcpys.size() + activity.memsets.size();
    } else {
      out.gpu_note = a.status().message();
    }
  }

  out.recorded_events = recorder.recorded();
  BuildContext ctx;
  ctx.graph = eager ? &typed : &graph->graph();
  ctx.plan = graph ? &graph->memory_plan() : nullptr;
  ctx.metadata = options.metadata;
  ctx.metadata["mode"] = runtime::exec_mode_name(options.mode);
  ctx.metadata["device"] = backend.description();
  if (have_gpu) {
    ctx.gpu = &activity;
    ctx.metadata["gpu_activity"] = "cupti";
  } else if (!out.gpu_note.empty()) {
    ctx.metadata["gpu_activity"] = "none";
    ctx.metadata["gpu_note"] = "GPU kernels missing: " + out.gpu_note;
  }
  if (graph) {
    ctx.metadata["compile_ms"] = number(out.compile_ms);
    ctx.metadata["kernel_steps"] = std::to_string(graph->num_steps());
  }
  const auto b0 = clock::now();
  out.trace = recorder.build(ctx);
  out.build_ms = std::chrono::duration<double, std::milli>(clock::now() - b0).count();
  return out;
}

TracePtr build_observed_trace(const Recorder& recorder, const ir::Graph& ran, const runtime::MemoryPlan* plan,
                              std::map<std::string, std::string> metadata, const runtime::Backend& backend) {
  BuildContext ctx;
  ctx.graph = &ran;
  ctx.plan = plan;
  ctx.metadata = std::move(metadata);
  ctx.metadata["device"] = backend.description();
  return recorder.build(ctx);
}

}  // namespace ms::prof
