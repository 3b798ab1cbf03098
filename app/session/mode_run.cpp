#include "app/session/mode_run.h"

#include "app/session/precision.h"

#include <algorithm>
#include <map>

#include "app/session/model_inputs.h"
#include "engine/backends/select.h"
#include "engine/compiler/buckets.h"
#include "engine/compiler/pipeline.h"

namespace ms::session {

namespace {

// The compiler's snapshots and reports as the pass stepper lists them: "input", then one per pass.
std::vector<PassOutcome> pass_outcomes(const compiler::CompileResult& cr, compiler::JitLevel level) {
  std::vector<PassOutcome> out;
  std::map<std::string, std::string> about;
  for (const auto& e : compiler::describe_pipeline(level)) about[e.argument] = e.description;
  if (!cr.snapshots.empty()) {
    PassOutcome input;
    input.pass = "input";
    input.description = "The graph as opened, before any pass";
    input.graph = cr.snapshots[0].graph;
    input.nodes_after = input.graph ? static_cast<int>(input.graph->nodes().size()) : 0;
    out.push_back(std::move(input));
  }
  for (size_t i = 0; i < cr.reports.size(); ++i) {
    const compiler::PassReport& r = cr.reports[i];
    PassOutcome p;
    p.pass = r.pass;
    p.description = about.count(r.pass) ? about[r.pass] : "";
    p.ran = r.ran;
    p.changed = r.changed;
    p.nodes_after = static_cast<int>(r.nodes_after);
    p.added = static_cast<int>(r.added);
    p.removed = static_cast<int>(r.removed);
    p.fused = static_cast<int>(r.fused);
    p.ms = r.ms;
    if (i + 1 < cr.snapshots.size()) p.graph = cr.snapshots[i + 1].graph;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

ModeRunOutcome mode_outcome(const RunResult& r, compiler::JitLevel level) {
  ModeRunOutcome out;
  out.mode = runtime::exec_mode_name(r.mode);
  out.median_ms = r.latency.median;
  out.min_ms = r.latency.min;
  out.mean_ms = r.latency.mean;
  out.compile_ms = r.compile_ms;
  out.peak_bytes = r.peak_bytes;
  out.kernels = r.kernels_per_iter;
  for (size_t k = 0; k < r.outputs.size(); ++k)
    out.outputs.push_back((k < r.output_names.size() ? r.output_names[k] : "?") + " = " + r.outputs[k].to_string(4));
  if (r.compiled) {
    out.passes = pass_outcomes(r.compiled->compile_result(), level);
    out.plan = std::make_shared<const runtime::MemoryPlan>(r.compiled->memory_plan());
  }
  out.trace = r.trace;
  out.gpu_records = r.gpu_records;
  out.gpu_note = r.gpu_note;
  // Ops not run as asked on the device: logged with the run (the CLI's `note: fallbacks:` line).
  if (!r.fallbacks.empty()) out.note = "fallbacks: " + runtime::describe_fallbacks(r.fallbacks);
  out.fallbacks = r.fallbacks;
  return out;
}

Expected<ModeSetup> set_up_mode(const ir::Graph& g, const ModeRun& req) {
  std::map<std::string, int64_t> dims;
  for (const auto& name : g.inputs) {
    const ir::Value* v = g.value(name);
    if (v && v->type.dims && !v->type.dims->empty() && (*v->type.dims)[0] < 0 && !v->type.dim_params.empty() &&
        !v->type.dim_params[0].empty())
      dims[v->type.dim_params[0]] = req.batch;
  }
  auto be =
      req.make_backend ? req.make_backend(req.device, req.threads) : backends::create_backend(req.device, req.threads);
  if (!be) return std::move(be).take_status();
  ModeSetup out;
  out.backend = std::move(be->backend);
  out.note = std::move(be->note);
  auto inputs = make_inputs(g, {}, dims, 0);
  if (!inputs) return std::move(inputs).take_status();
  out.inputs = std::move(*inputs);
  return out;
}

Expected<ModeRunOutcome> run_mode(const ir::Graph& g, const ModeRun& req, RunCallbacks& callbacks) {
  ModeRunOutcome out;
  out.mode = req.mode;
  MS_ASSIGN_OR_RETURN(ModeSetup setup, set_up_mode(g, req));
  out.backend = setup.backend->description();
  out.note = setup.note;

  RunRequest run;
  run.mode = req.mode == "graph" ? runtime::ExecMode::Graph : runtime::ExecMode::PyNative;
  run.iters = req.iterations;
  run.warmup = req.warmup;
  auto level = compiler::parse_jit_level(req.jit_level);
  if (!level) return std::move(level).take_status();
  run.compile.jit_level = *level;
  run.compile.disabled_passes = req.disabled_passes;
  const bool low = run.mode == runtime::ExecMode::Graph && req.precision == "bf16";
  if (low) MS_RETURN_IF_ERROR(apply_precision(run.compile, req.precision, *setup.backend));
  run.profile = true;  // cheap (a few records per op): the timeline, heatmap and comparison need it
  run.profiling.gpu_collector = req.gpu_collector;
  run.observer = req.observer;
  auto r = run_model(g, setup.inputs, *setup.backend, run, callbacks);
  if (!r) return std::move(r).take_status();

  ModeRunOutcome done = mode_outcome(*r, run.compile.jit_level);
  if (low) {
    RunRequest ref;
    ref.iters = 1;
    ref.warmup = 0;
    auto f32 = run_model(g, setup.inputs, *setup.backend, ref, callbacks);
    if (!f32) return std::move(f32).take_status().prepend("the f32 reference pass: ");
    done.precision = req.precision;
    done.deviation = deviation(r->outputs, f32->outputs);
  }
  done.mode = out.mode;
  done.backend = out.backend;
  done.note = out.note + (out.note.empty() || done.note.empty() ? "" : "; ") + done.note;
  if (!out.note.empty()) done.fallbacks.insert(done.fallbacks.begin(), runtime::Fallback{"*", 1, out.note});
  if (r->compiled) {
    // One compile for the inputs' shapes; every other iteration (warm-up included) found it.
    done.compiles = 1;
    done.cache_hits = std::max(0, req.warmup) + req.iterations - 1;
    auto key = compiler::bucket_of(g, setup.inputs, /*exact=*/true);  // the run loop compiles exact shapes
    if (key) done.bucket = key->text;
    done.buckets = {done.bucket};
  }
  out = std::move(done);
  return out;
}

}  // namespace ms::session
