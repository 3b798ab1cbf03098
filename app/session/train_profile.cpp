#include "app/session/train_profile.h"

#include "engine/frontend/nn/context.h"

namespace ms::session {

ProfiledTraining run_training_profiled(nn::train::RunOptions options, const nn::train::StepCallback& on_step,
                                       std::map<std::string, std::string> metadata, prof::ProfilingOptions profiling) {
  ProfiledTraining out;
  prof::ProfilingSession session(nn::backend(), std::move(profiling));
  options.observe_last_step = &session.observer_for_one_run();
  out.result = nn::train::run_training(options, on_step);
  if (!out.result || !out.result->observed_graph) return out;
  const nn::train::RunResult& r = *out.result;
  if (r.observed_plan) out.plan = std::make_shared<const runtime::MemoryPlan>(*r.observed_plan);
  prof::BuildContext ctx;
  ctx.graph = &*r.observed_graph;
  ctx.plan = out.plan.get();
  ctx.metadata = std::move(metadata);
  ctx.metadata["model"] = r.model;
  ctx.metadata["mode"] = options.mode == nn::Mode::Graph ? "graph" : "pynative";
  ctx.metadata["run"] = "training step " + std::to_string(options.steps);
  out.trace = session.build(std::move(ctx));
  out.gpu_note = session.gpu_note();
  return out;
}

}  // namespace ms::session
