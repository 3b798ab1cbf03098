#include "app/session/mode_run.h"

#include "app/session/precision.h"

#include <algorithm>
#include <map>

#include "app/session/compile_cache.h"
#include "app/session/model_inputs.h"
#include "engine/backends/select.h"
#include "engine/compiler/buckets.h"
#include "engine/compiler/pipeline.h"
#include "engine/plugin/loader.h"

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
  out.cpu_wait_share = r.cpu_wait_share;
  out.peak_bytes = r.peak_bytes;
  out.kernels = r.kernels_per_iter;
  for (size_t k = 0; k < r.outputs.size(); ++k)
    out.outputs.push_back((k < r.output_names.size() ? r.output_names[k] : "?") + " = " + r.outputs[k].to_string(4));
  if (const compiler::CompiledExecutor* ex = r.compiled ? r.compiled.get() : r.executor) {
    out.passes = pass_outcomes(ex->compile_result(), level);
    out.plan = std::make_shared<const runtime::MemoryPlan>(ex->memory_plan());
  }
  out.trace = r.trace;
  out.gpu_records = r.gpu_records;
  out.gpu_note = r.gpu_note;
  // Ops not run as asked on the device: logged with the run (the CLI's `note: fallbacks:` line).
  if (!r.fallbacks.empty()) out.note = "fallbacks: " + runtime::describe_fallbacks(r.fallbacks);
  out.fallbacks = r.fallbacks;
  return out;
}

Expected<runtime::TensorMap> mode_inputs(const ir::Graph& g, const ModeRun& req) {
  std::map<std::string, int64_t> dims;
  for (const auto& name : g.inputs) {
    const ir::Value* v = g.value(name);
    if (v && v->type.dims && !v->type.dims->empty() && (*v->type.dims)[0] < 0 && !v->type.dim_params.empty() &&
        !v->type.dim_params[0].empty())
      dims[v->type.dim_params[0]] = req.batch;
  }
  return make_inputs(g, {}, dims, 0);
}

Expected<ModeSetup> set_up_mode(const ir::Graph& g, const ModeRun& req) {
  auto be =
      req.make_backend ? req.make_backend(req.device, req.threads) : backends::create_backend(req.device, req.threads);
  if (!be) return std::move(be).take_status();
  ModeSetup out;
  out.backend = std::move(be->backend);
  out.note = std::move(be->note);
  MS_ASSIGN_OR_RETURN(out.inputs, mode_inputs(g, req));
  return out;
}

std::string compile_key(const ModeRun& req, PipelineCut cut) {
  std::vector<std::string> off = req.disabled_passes;
  std::sort(off.begin(), off.end());
  std::string key =
      req.device + "|threads " + std::to_string(req.threads) + "|" + req.jit_level + "|" + req.precision + "|without";
  for (const auto& p : off) key += " " + p;
  key += "|plugins";
  for (const auto& p : plugin::loaded_plugins()) key += " " + p.path;
  if (!cut.whole())
    key += "|cut after " + std::to_string(cut.passes) + " passes, " + std::to_string(cut.rewrites) + " rewrites";
  return key;
}

namespace {

// The run loop's request for a run by names; in bf16 the backend must have native bf16.
Expected<RunRequest> loop_request(const ModeRun& req, const runtime::Backend& backend) {
  RunRequest run;
  run.mode = req.mode == "graph" ? runtime::ExecMode::Graph : runtime::ExecMode::PyNative;
  run.iters = req.iterations;
  run.warmup = req.warmup;
  MS_ASSIGN_OR_RETURN(run.compile.jit_level, compiler::parse_jit_level(req.jit_level));
  run.compile.disabled_passes = req.disabled_passes;
  if (run.mode == runtime::ExecMode::Graph && is_low_precision(req.precision))
    MS_RETURN_IF_ERROR(apply_precision(run.compile, req.precision, backend));
  run.profile = true;  // cheap (a few records per op): the timeline, heatmap and comparison need it
  run.profiling.gpu_collector = req.gpu_collector;
  run.observer = req.observer;
  return run;
}

// The figures of a finished run as the app shows them, with the f32 reference pass of a bf16 run
// (PyNative, one iteration, on the same backend and inputs) and the backend's note.
Expected<ModeRunOutcome> finish_mode_run(const ir::Graph& g, const ModeRun& req, const RunRequest& run,
                                         const RunResult& r, const runtime::TensorMap& inputs,
                                         runtime::Backend& backend, const std::string& note, RunCallbacks& callbacks) {
  ModeRunOutcome done = mode_outcome(r, run.compile.jit_level);
  if (run.mode == runtime::ExecMode::Graph && is_low_precision(req.precision)) {
    RunRequest ref;
    ref.iters = 1;
    ref.warmup = 0;
    auto f32 = run_model(g, inputs, backend, ref, callbacks);
    if (!f32) return std::move(f32).take_status().prepend("the f32 reference pass: ");
    done.precision = req.precision;
    done.deviation = deviation(r.outputs, f32->outputs);
  }
  done.mode = req.mode;
  done.backend = backend.description();
  done.note = note + (note.empty() || done.note.empty() ? "" : "; ") + done.note;
  if (!note.empty()) done.fallbacks.insert(done.fallbacks.begin(), runtime::Fallback{"*", 1, note});
  return done;
}

// A new entry for `model` and the request's options (cut as asked): its backend and its bucketed
// executor, whose compiles check the cancel flag of the run that holds the entry.
Expected<std::unique_ptr<CompileCache::Entry>> new_cache_entry(std::shared_ptr<const ir::Graph> model,
                                                               const ModeRun& req, const std::string& key,
                                                               PipelineCut cut, size_t max_graphs) {
  auto e = std::make_unique<CompileCache::Entry>();
  e->key = key;
  e->graph = std::move(model);
  auto be =
      req.make_backend ? req.make_backend(req.device, req.threads) : backends::create_backend(req.device, req.threads);
  if (!be) return std::move(be).take_status();
  e->backend = std::move(be->backend);
  e->note = std::move(be->note);
  MS_ASSIGN_OR_RETURN(RunRequest run, loop_request(req, *e->backend));
  compiler::CompileOptions co = run.compile;
  if (!cut.whole()) {
    co.stop_after = cut.passes;
    co.rewrite_budget = cut.passes > 0 ? cut.rewrites : -1;
    co.keep_snapshots = false;
  }
  CompileCache::Entry* held = e.get();
  co.cancelled = [held] { return held->callbacks && held->callbacks->cancelled(); };
  e->executor = std::make_unique<compiler::BucketedExecutor>(*e->graph, *e->backend, std::move(co), max_graphs);
  return e;
}

// A Graph-mode run on a leased compile: the inputs' bucket compiled when new, then the loop on it.
Expected<ModeRunOutcome> run_through_cache(const ir::Graph& g, const ModeRun& req, RunCallbacks& callbacks,
                                           CompileLease& lease) {
  CompileCache::Entry& e = lease.entry();
  MS_ASSIGN_OR_RETURN(runtime::TensorMap inputs, mode_inputs(g, req));
  MS_ASSIGN_OR_RETURN(RunRequest run, loop_request(req, *e.backend));
  MS_ASSIGN_OR_RETURN(compiler::BucketKey key, compiler::bucket_of(g, inputs));
  const auto kept = e.executor->buckets();
  const bool known = std::find(kept.begin(), kept.end(), key.text) != kept.end();
  callbacks.progress(0.02, known ? "Compiled graph cached" : "Compiling");
  bool compiled = false;
  MS_ASSIGN_OR_RETURN(run.executor, lease.executor_for(inputs, &compiled));
  run.executor_compiled_now = compiled;
  if (callbacks.cancelled()) return Status::error(ErrorCode::Cancelled, "cancelled");
  MS_ASSIGN_OR_RETURN(RunResult r, run_model(g, inputs, *e.backend, run, callbacks));
  MS_ASSIGN_OR_RETURN(ModeRunOutcome done, finish_mode_run(g, req, run, r, inputs, *e.backend, e.note, callbacks));
  // Every iteration but a compiling run's first found its graph compiled.
  done.this_run.add_run(compiled, std::max(0, req.warmup) + std::max(1, req.iterations));
  e.cache_hits += done.this_run.cache_hits;
  done.graph_compile_ms = run.executor->compile_ms();
  done.compile_ms = compiled ? done.graph_compile_ms : 0;
  done.cached = !compiled;
  done.compiles = e.executor->stats().compiles;
  done.cache_hits = e.cache_hits;
  done.bucket = e.executor->last_bucket();
  done.buckets = e.executor->buckets();
  return done;
}

}  // namespace

Expected<ModeRunOutcome> run_mode(const ir::Graph& g, const ModeRun& req, RunCallbacks& callbacks,
                                  CompileCache* cache) {
  if (cache && req.mode == "graph") {
    MS_ASSIGN_OR_RETURN(std::unique_ptr<CompileLease> lease, CompileLease::take(*cache, g, req, callbacks));
    if (lease) {
      auto out = run_through_cache(g, req, callbacks, *lease);
      if (!out && out.status().code() != ErrorCode::Cancelled) lease->failed();
      return out;
    }
  }
  MS_ASSIGN_OR_RETURN(ModeSetup setup, set_up_mode(g, req));
  MS_ASSIGN_OR_RETURN(RunRequest run, loop_request(req, *setup.backend));
  MS_ASSIGN_OR_RETURN(RunResult r, run_model(g, setup.inputs, *setup.backend, run, callbacks));
  MS_ASSIGN_OR_RETURN(ModeRunOutcome done,
                      finish_mode_run(g, req, run, r, setup.inputs, *setup.backend, setup.note, callbacks));
  if (r.compiled) {
    // One compile for the inputs' shapes; every other iteration (warm-up included) found it.
    done.this_run.add_run(true, std::max(0, req.warmup) + std::max(1, req.iterations));
    done.compiles = done.this_run.compiles;
    done.cache_hits = done.this_run.cache_hits;
    done.graph_compile_ms = done.compile_ms;
    auto key = compiler::bucket_of(g, setup.inputs, /*exact=*/true);  // the run loop compiles exact shapes
    if (key) done.bucket = key->text;
    done.buckets = {done.bucket};
  }
  return done;
}

Expected<std::unique_ptr<CompileLease>> CompileLease::take(CompileCache& cache, const ir::Graph& g, const ModeRun& req,
                                                           RunCallbacks& callbacks, PipelineCut cut) {
  std::shared_ptr<const ir::Graph> model = cache.model_of(g);
  if (!model) return std::unique_ptr<CompileLease>();
  const std::string key = compile_key(req, cut);
  std::unique_ptr<CompileCache::Entry> e = cache.take(key);
  if (!e) {
    MS_ASSIGN_OR_RETURN(e, new_cache_entry(model, req, key, cut, cache.max_graphs()));
  }
  e->callbacks = &callbacks;
  return std::unique_ptr<CompileLease>(new CompileLease(cache, std::move(e)));
}

CompileLease::~CompileLease() {
  entry_->callbacks = nullptr;
  if (!failed_) cache_.give_back(std::move(entry_));
}

}  // namespace ms::session
