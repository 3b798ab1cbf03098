// A training run whose last step is profiled the way the run loop profiles its iterations
// (prof::ProfilingSession: the Recorder, and CUPTI around that step on a CUDA backend), shared by
// the CLI's `train --profile` and the app's Training tab. The steps themselves keep their own loop
// (nn::train::run_training: data, optimizer, schedule), which is not the run loop's N runs of one
// graph; only the observation of a step is shared.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "engine/frontend/train/run.h"
#include "profiler/record/profiling_session.h"
#include "profiler/trace/trace.h"

namespace ms::session {

struct ProfiledTraining {
  Expected<nn::train::RunResult> result = Status::error(ErrorCode::Cancelled, "not run");
  prof::TracePtr trace;                             // the last step; null when the run failed
  std::shared_ptr<const runtime::MemoryPlan> plan;  // Graph mode: the compiled step's plan
  std::string gpu_note;                             // why a CUDA step's trace has no GPU kernels
};

// Runs `options` (its observe_last_step is replaced) on nn::backend(); the trace's metadata is
// `metadata` plus model, mode, run and device.
ProfiledTraining run_training_profiled(nn::train::RunOptions options, const nn::train::StepCallback& on_step,
                                       std::map<std::string, std::string> metadata = {},
                                       prof::ProfilingOptions profiling = {});

}  // namespace ms::session
