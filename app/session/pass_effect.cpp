#include "app/session/pass_effect.h"

#include <algorithm>

#include "app/session/compile_cache.h"

namespace ms::session {

namespace {

PipelineRun pipeline_run(const Expected<ModeRunOutcome>& r) {
  PipelineRun f;
  if (!r) {
    f.error = r.status().message();
    return f;
  }
  f.latency_ms = r->median_ms;
  f.compile_ms = r->graph_compile_ms;
  f.peak_bytes = r->peak_bytes;
  f.arena_bytes = r->plan ? r->plan->arena_bytes : 0;
  f.kernels = r->kernels;
  f.nodes = r->passes.empty() ? 0 : r->passes.back().nodes_after;
  f.cached = r->cached;
  return f;
}

// Progress of one run of the measurement, mapped into its share of the whole.
class RunShare final : public RunCallbacks {
 public:
  RunShare(RunCallbacks& outer, double from, double width) : outer_(outer), from_(from), width_(width) {}
  bool cancelled() const override { return outer_.cancelled(); }
  void progress(double fraction, const std::string& what) override {
    outer_.progress(from_ + width_ * std::clamp(fraction, 0.0, 1.0), what);
  }

 private:
  RunCallbacks& outer_;
  const double from_, width_;
};

}  // namespace

Expected<PassEffects> measure_pass_effects(const ir::Graph& g, const ModeRun& request,
                                           const std::vector<std::string>& passes, RunCallbacks& callbacks,
                                           CompileCache* cache) {
  ModeRun req = request;
  req.mode = "graph";
  req.disabled_passes.clear();
  // The baseline and one graph per pass left out stay compiled beside the Run panel's graphs: the
  // cache's count limit would evict the measurement's first graphs while it compiles its last.
  if (cache) cache->reserve(passes.size() + 1);
  PassEffects out;
  const double total = static_cast<double>(passes.size() + 2);
  int step = 0;
  // One Graph-mode run of the measurement; a cancelled one ends it.
  auto measure = [&](const ModeRun& r, const std::string& what) -> Expected<PipelineRun> {
    if (callbacks.cancelled()) return Status::error(ErrorCode::Cancelled, "cancelled");
    callbacks.progress(step / total, what);
    RunShare share(callbacks, step / total, 1.0 / total);
    ++step;
    auto run = run_mode(g, r, share, cache);
    if (!run && run.status().code() == ErrorCode::Cancelled) return std::move(run).take_status();
    if (run) out.counts += run->this_run;
    return pipeline_run(run);
  };
  MS_ASSIGN_OR_RETURN(out.full, measure(req, "Full pipeline"));
  for (const std::string& pass : passes) {
    ModeRun without = req;
    without.disabled_passes = {pass};
    MS_ASSIGN_OR_RETURN(PipelineRun r, measure(without, "Without " + pass));
    out.without.emplace_back(pass, std::move(r));
  }
  // The whole pipeline once more at the end, the faster of the two kept: a machine that got busier
  // (or warmer) during the runs does not pass for an effect of the first pass.
  MS_ASSIGN_OR_RETURN(PipelineRun again, measure(req, "Full pipeline again"));
  if (again.error.empty() && (!out.full.error.empty() || again.latency_ms < out.full.latency_ms))
    out.full = std::move(again);
  return out;
}

}  // namespace ms::session
