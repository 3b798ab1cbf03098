#include "app/session/numerics.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "app/session/run_loop.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/diff.h"
#include "engine/compiler/pipeline.h"

namespace ms::session {

namespace {

using NumericsClock = std::chrono::steady_clock;

double ms_since(NumericsClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(NumericsClock::now() - t0).count();
}

// One Graph-mode run of the whole loop, outputs and the compiled graph kept.
Expected<RunResult> run_with(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                             const RunRequest& r, RunCallbacks* callbacks) {
  return callbacks ? run_model(g, inputs, backend, r, *callbacks) : run_model(g, inputs, backend, r);
}

// One run of r (Graph mode) on the source's graph for r.compile's cut, or compiling its own.
Expected<RunResult> graph_run_from(GraphSource* graphs, const ir::Graph& g, const runtime::TensorMap& inputs,
                                   runtime::Backend& backend, RunRequest r, RunCallbacks* callbacks) {
  if (!graphs) return run_with(g, inputs, backend, r, callbacks);
  const PipelineCut cut{r.compile.stop_after, r.compile.rewrite_budget};
  MS_ASSIGN_OR_RETURN(GraphSource::Compiled c,
                      graphs->graph_for(inputs, cut, std::max(0, r.warmup) + std::max(1, r.iters)));
  r.executor = c.executor;
  auto run = run_with(g, inputs, *c.backend, r, callbacks);
  if (!run && run.status().code() != ErrorCode::Cancelled) graphs->run_failed();
  return run;
}

Expected<RunResult> graph_run(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                              const compiler::CompileOptions& compile, GraphSource* graphs, RunCallbacks* callbacks) {
  RunRequest r;
  r.mode = runtime::ExecMode::Graph;
  r.iters = 1;
  r.warmup = 0;
  r.compile = compile;
  return graph_run_from(graphs, g, inputs, backend, std::move(r), callbacks);
}

// Largest relative error of any output against the reference (infinity for a non-finite mismatch
// or a missing output).
double output_error(const std::vector<Tensor>& outs, const std::vector<Tensor>& ref) {
  if (outs.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double e = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].numel() != ref[i].numel()) return std::numeric_limits<double>::infinity();
    const runtime::TensorDiff d = runtime::diff_tensors(outs[i], ref[i]);
    if (d.nonfinite_mismatches) return std::numeric_limits<double>::infinity();
    e = std::max(e, d.max_rel);
  }
  return e;
}

std::string short_number(double v) {
  std::ostringstream os;
  os.precision(3);
  os << v;
  return os.str();
}

}  // namespace

Expected<CaptureResult> capture_values(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                                       const CaptureRequest& request, RunCallbacks* callbacks) {
  if (!request.capture.pattern.empty()) MS_RETURN_IF_ERROR(runtime::check_capture_pattern(request.capture.pattern));
  runtime::ValueCapture capture(request.capture);
  RunRequest r;
  r.mode = request.mode;
  r.iters = 1;
  r.warmup = std::max(0, request.warmup);
  r.compile = request.compile;
  r.tap = &capture;
  const auto t0 = NumericsClock::now();
  auto run = request.mode == runtime::ExecMode::Graph ? graph_run_from(request.graphs, g, inputs, backend, r, callbacks)
                                                      : run_with(g, inputs, backend, r, callbacks);
  CaptureResult out;
  out.mode = request.mode;
  out.kept_bytes = capture.kept_bytes();
  out.over_budget = capture.over_budget();
  out.trap = capture.trap();
  if (!run) {
    if (!out.trap) return std::move(run).take_status();
    out.error = run.status().message();
    out.values = capture.take_values();
    out.graph = std::make_shared<ir::Graph>(g.deep_copy());
    return out;
  }
  out.run_ms = run->latencies_ms.empty() ? ms_since(t0) : run->latencies_ms.back();
  out.values = capture.take_values();
  out.output_names = run->output_names;
  // Host copies of their own: the run's buffers return to the backend's allocator, which the caller
  // may destroy before the result (the app's jobs make a backend per job).
  for (const Tensor& t : run->outputs) out.outputs.push_back(t.clone());
  out.graph = std::make_shared<ir::Graph>(run->executor ? run->executor->graph().deep_copy() : g.deep_copy());
  return out;
}

Expected<DiffResult> diff_modes(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                                const DiffRequest& request, RunCallbacks* callbacks) {
  DiffResult out;
  CaptureRequest c;
  c.capture.budget_bytes = request.budget_bytes;
  c.mode = runtime::ExecMode::PyNative;
  MS_ASSIGN_OR_RETURN(out.pynative, capture_values(g, inputs, backend, c, callbacks));
  c.mode = runtime::ExecMode::Graph;
  c.compile = request.compile;
  c.graphs = request.graphs;
  MS_ASSIGN_OR_RETURN(out.graph, capture_values(g, inputs, backend, c, callbacks));
  const auto t0 = NumericsClock::now();
  out.diff = runtime::diff_modes(g, out.pynative.values, *out.graph.graph, out.graph.values, request.tol);
  out.diff_ms = ms_since(t0);
  return out;
}

Expected<BisectResult> bisect_passes(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                                     const BisectRequest& request, RunCallbacks* callbacks) {
  BisectResult out;
  out.tol = request.tol;
  RunRequest ref_req;
  ref_req.mode = runtime::ExecMode::PyNative;
  ref_req.iters = 1;
  ref_req.warmup = 0;
  MS_ASSIGN_OR_RETURN(RunResult ref, run_with(g, inputs, backend, ref_req, callbacks));

  compiler::CompileOptions base = request.compile;
  base.keep_snapshots = false;
  base.stop_after = -1;
  base.rewrite_budget = -1;
  // Graph mode cut after `passes` passes (the last after `rewrites` rewrites); its reports kept.
  compiler::CompileResult last_reports;
  auto probe = [&](int passes, int64_t rewrites) -> Expected<BisectProbe> {
    compiler::CompileOptions co = base;
    co.stop_after = passes;
    co.rewrite_budget = passes > 0 ? rewrites : -1;
    MS_ASSIGN_OR_RETURN(RunResult run, graph_run(g, inputs, backend, co, request.graphs, callbacks));
    BisectProbe p{passes, rewrites, output_error(run.outputs, ref.outputs), true};
    p.within = p.error <= request.tol;
    last_reports = run.executor->compiled().passes;
    out.probes.push_back(p);
    return p;
  };

  MS_ASSIGN_OR_RETURN(BisectProbe full, probe(-1, -1));
  const compiler::CompileResult full_reports = last_reports;
  for (const auto& rep : full_reports.reports) out.pass_names.push_back(rep.pass);
  out.full_error = full.error;
  if (full.within) {
    out.clean = true;
    return out;
  }
  // lo: a cut known within the tolerance (0 is assumed and checked at the end), hi: one known past it.
  int lo = 0, hi = static_cast<int>(full_reports.reports.size());
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    MS_ASSIGN_OR_RETURN(BisectProbe p, probe(mid, -1));
    (p.within ? lo : hi) = mid;
  }
  if (lo == 0) {
    MS_ASSIGN_OR_RETURN(BisectProbe none, probe(0, -1));
    if (!none.within) {
      out.at_start = true;
      return out;
    }
  }
  out.pass_index = hi - 1;
  out.pass = out.pass_names[static_cast<size_t>(out.pass_index)];
  out.pass_rewrites = static_cast<int64_t>(full_reports.reports[static_cast<size_t>(out.pass_index)].work.rewrites);
  if (!request.rewrites || out.pass_rewrites == 0) return out;

  // The pass's first k rewrites: 0 is the cut before it (within), all of them past the tolerance.
  int64_t rlo = 0, rhi = out.pass_rewrites;
  while (rhi - rlo > 1) {
    const int64_t mid = rlo + (rhi - rlo) / 2;
    MS_ASSIGN_OR_RETURN(BisectProbe p, probe(hi, mid));
    (p.within ? rlo : rhi) = mid;
  }
  out.rewrite = rhi;
  // The graphs around that rewrite (compiled only), and the nodes it made or changed.
  auto compiled_graph = [&](int64_t budget) -> Expected<std::shared_ptr<const ir::Graph>> {
    if (request.graphs) {
      MS_ASSIGN_OR_RETURN(GraphSource::Compiled c, request.graphs->graph_for(inputs, {hi, budget}, 0));
      return std::make_shared<const ir::Graph>(c.executor->graph().deep_copy());
    }
    compiler::CompileOptions co = base;
    co.stop_after = hi;
    co.rewrite_budget = budget;
    std::map<std::string, ir::ValueType> sig;
    for (const auto& [name, t] : inputs) sig[name] = ir::ValueType{t.dtype(), t.shape(), {}};
    MS_ASSIGN_OR_RETURN(compiler::CompiledGraph c, compiler::compile(g, backend, sig, co));
    return std::make_shared<const ir::Graph>(c.graph().deep_copy());
  };
  MS_ASSIGN_OR_RETURN(out.before, compiled_graph(rhi - 1));
  MS_ASSIGN_OR_RETURN(out.after, compiled_graph(rhi));
  const compiler::GraphDiff d = compiler::diff_graphs(*out.before, *out.after);
  out.nodes = d.added;
  out.nodes.insert(out.nodes.end(), d.rewritten.begin(), d.rewritten.end());
  for (const auto& f : d.fused) out.nodes.push_back(f.node);
  return out;
}

namespace {

// The app's numerics graphs from its compile cache: the whole pipeline is the entry of the job's
// options (the Run panel's, when they match), held for the job; a cut's entry is held until the
// next cut is asked for. Handed back cut first, so the whole pipeline's is the most recently used.
class CachedGraphs final : public GraphSource {
 public:
  CachedGraphs(CompileCache& cache, const ir::Graph& g, const ModeRun& req, RunCallbacks& callbacks,
               std::unique_ptr<CompileLease> whole)
      : cache_(cache), g_(g), req_(req), callbacks_(callbacks), whole_(std::move(whole)) {}
  ~CachedGraphs() override {
    cut_.reset();
    whole_.reset();
  }

  runtime::Backend& backend() { return whole_->backend(); }
  const std::string& note() { return whole_->entry().note; }
  const CompileCounts& counts() const { return counts_; }

  Expected<Compiled> graph_for(const runtime::TensorMap& inputs, PipelineCut cut, int iterations) override {
    CompileLease* lease = whole_.get();
    if (!cut.whole()) {
      if (!cut_ || cut.passes != cut_at_.passes || cut.rewrites != cut_at_.rewrites) {
        cut_.reset();
        MS_ASSIGN_OR_RETURN(cut_, CompileLease::take(cache_, g_, req_, callbacks_, cut));
        if (!cut_) return Status::error(ErrorCode::Internal, "the compile cache no longer holds the model");
        cut_at_ = cut;
      }
      lease = cut_.get();
    }
    bool compiled = false;
    MS_ASSIGN_OR_RETURN(compiler::CompiledExecutor * ex, lease->executor_for(inputs, &compiled));
    CompileCounts run;
    run.add_run(compiled, iterations);
    counts_ += run;
    lease->entry().cache_hits += run.cache_hits;
    last_ = lease;
    return Compiled{ex, &lease->backend()};
  }

  void run_failed() override {
    if (last_) last_->failed();
  }

 private:
  CompileCache& cache_;
  const ir::Graph& g_;
  const ModeRun& req_;
  RunCallbacks& callbacks_;
  std::unique_ptr<CompileLease> whole_, cut_;
  PipelineCut cut_at_;
  CompileLease* last_ = nullptr;
  CompileCounts counts_;
};

Status run_numerics_on(const ir::Graph& g, const NumericsJob& job, RunCallbacks& callbacks,
                       const runtime::TensorMap& inputs, runtime::Backend& backend, GraphSource* graphs,
                       NumericsOutcome& out) {
  MS_ASSIGN_OR_RETURN(compiler::JitLevel level, compiler::parse_jit_level(job.run.jit_level));
  compiler::CompileOptions compile;
  compile.jit_level = level;
  compile.disabled_passes = job.run.disabled_passes;
  switch (job.kind) {
    case NumericsJob::Kind::Diff: {
      DiffRequest req{compile, job.tol, job.budget_bytes, graphs};
      MS_ASSIGN_OR_RETURN(DiffResult d, diff_modes(g, inputs, backend, req, &callbacks));
      out.diff = std::move(d);
      break;
    }
    case NumericsJob::Kind::Bisect: {
      BisectRequest req;
      req.compile = compile;
      req.tol = job.tol;
      req.graphs = graphs;
      MS_ASSIGN_OR_RETURN(BisectResult b, bisect_passes(g, inputs, backend, req, &callbacks));
      out.bisect = std::move(b);
      break;
    }
    case NumericsJob::Kind::Trap:
      for (auto mode : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
        CaptureRequest req;
        req.mode = mode;
        req.compile = compile;
        req.graphs = graphs;
        req.capture.all = false;
        req.capture.trap_nonfinite = true;
        MS_ASSIGN_OR_RETURN(CaptureResult c, capture_values(g, inputs, backend, req, &callbacks));
        if (c.trap && mode == runtime::ExecMode::Graph && graphs) graphs->run_failed();  // stopped mid-iteration
        out.traps.push_back(std::move(c));
      }
      break;
  }
  return Status::ok();
}

}  // namespace

Expected<NumericsOutcome> run_numerics(const ir::Graph& g, const NumericsJob& job, RunCallbacks& callbacks,
                                       CompileCache* cache) {
  NumericsOutcome out;
  // The Graph-mode runs' options as the Run panel's runs name them (so an f32 Run's graph is found);
  // numerics compare f32 graphs.
  ModeRun graph_run_req = job.run;
  graph_run_req.mode = "graph";
  graph_run_req.precision = "f32";
  std::unique_ptr<CompileLease> whole;
  if (cache) {
    MS_ASSIGN_OR_RETURN(whole, CompileLease::take(*cache, g, graph_run_req, callbacks));
  }
  if (whole) {
    MS_ASSIGN_OR_RETURN(runtime::TensorMap inputs, mode_inputs(g, job.run));
    CachedGraphs graphs(*cache, g, graph_run_req, callbacks, std::move(whole));
    out.backend = graphs.backend().description();
    out.note = graphs.note();
    Status s = run_numerics_on(g, job, callbacks, inputs, graphs.backend(), &graphs, out);
    if (!s.is_ok() && s.code() != ErrorCode::Cancelled) graphs.run_failed();
    MS_RETURN_IF_ERROR(s);
    out.graphs = graphs.counts();
    return out;
  }
  MS_ASSIGN_OR_RETURN(ModeSetup setup, set_up_mode(g, job.run));
  out.backend = setup.backend->description();
  out.note = setup.note;
  MS_RETURN_IF_ERROR(run_numerics_on(g, job, callbacks, setup.inputs, *setup.backend, nullptr, out));
  return out;
}

std::string BisectResult::summary() const {
  const std::string runs = " (" + std::to_string(probes.size()) + " Graph-mode runs)";
  if (clean)
    return "no pass leaves the tolerance " + short_number(tol) + ": largest output error " + short_number(full_error) +
           runs;
  if (at_start)
    return "the outputs leave the tolerance " + short_number(tol) + " with no pass at all (error " +
           short_number(probes.back().error) + "): a kernel differs, not a pass" + runs;
  std::string s = "pass " + std::to_string(pass_index) + " '" + pass + "' takes the outputs past " + short_number(tol);
  if (rewrite > 0)
    s += ", at its rewrite " + std::to_string(rewrite) + " of " + std::to_string(pass_rewrites) + " (" +
         std::to_string(nodes.size()) + " node" + (nodes.size() == 1 ? "" : "s") + ")";
  else if (pass_rewrites == 0)
    s += " (the pass counts no rewrites)";
  return s + "; error with every pass " + short_number(full_error) + runs;
}

}  // namespace ms::session
