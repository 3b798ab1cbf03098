#include "profiler/record/profile_run.h"

#include <chrono>
#include <cstdio>

namespace ms::prof {

namespace {

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
  std::unique_ptr<runtime::GraphExecutor> graph;
  ir::Graph typed;  // eager: the model with types inferred from the inputs (shapes and cost per node)
  if (options.mode == runtime::ExecMode::PyNative) {
    eager = std::make_unique<runtime::EagerExecutor>(g, backend);
    typed = g.deep_copy();
    for (const auto& name : typed.inputs) {
      auto it = sig.find(name);
      if (ir::Value* v = typed.value(name); v && it != sig.end()) v->type = it->second;
    }
    // Best effort: a model whose types cannot be inferred statically still profiles (no shapes).
    if (!runtime::infer_graph_types(typed, &backend).is_ok()) typed = g.deep_copy();
  } else {
    auto c = runtime::GraphExecutor::compile(g, backend, sig, options.compile);
    if (!c) return std::move(c).take_status();
    graph = std::move(*c);
    out.compile_ms = graph->compile_ms();
  }

  Recorder recorder(options.recorder);
  const int total = std::max(0, options.warmup) + std::max(1, options.iters);
  for (int i = 0; i < total; ++i) {
    runtime::RunOptions ro;
    ro.iteration = i - std::max(0, options.warmup);
    const bool timed = i >= options.warmup;
    if (timed && options.record) ro.observer = &recorder;
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

  out.recorded_events = recorder.recorded();
  BuildContext ctx;
  ctx.graph = eager ? &typed : &graph->graph();
  ctx.plan = graph ? &graph->memory_plan() : nullptr;
  ctx.metadata = options.metadata;
  ctx.metadata["mode"] = runtime::exec_mode_name(options.mode);
  ctx.metadata["device"] = backend.description();
  if (graph) {
    ctx.metadata["compile_ms"] = number(out.compile_ms);
    ctx.metadata["kernel_steps"] = std::to_string(graph->num_steps());
  }
  const auto b0 = clock::now();
  out.trace = recorder.build(ctx);
  out.build_ms = std::chrono::duration<double, std::milli>(clock::now() - b0).count();
  return out;
}

}  // namespace ms::prof
