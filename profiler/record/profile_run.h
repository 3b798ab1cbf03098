// One profiled run of a model in one mode: warm-up iterations unobserved, then `iters` iterations
// with a Recorder, then the trace built from the records with the graph that ran (and, in Graph mode,
// its memory plan). Shared by the CLI's profile and compare commands and by the GUI's jobs.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/compiler/options.h"
#include "engine/runtime/executor.h"
#include "profiler/record/cupti_collector.h"
#include "profiler/record/recorder.h"
#include "profiler/trace/trace.h"

namespace ms::prof {

struct ProfileOptions {
  runtime::ExecMode mode = runtime::ExecMode::PyNative;
  int iters = 10;
  int warmup = 2;
  bool record = true;  // false: the same loop without an observer (overhead baseline)
  compiler::CompileOptions compile;
  std::map<std::string, std::string> metadata;  // model name, device, ...
  RecorderOptions recorder;
  // CUDA backend: also collect GPU kernels, copies and CUDA API calls through CUPTI (timed
  // iterations only). When CUPTI cannot start, the run still profiles host ops and the trace's
  // "gpu_note" metadata (and ProfiledRun::gpu_note) says why kernels are missing.
  bool gpu_activity = true;
  // Replaces create_cupti_collector() (tests drive the CUDA path with a scripted collector).
  std::function<Expected<std::unique_ptr<CuptiCollector>>()> gpu_collector;
};

struct ProfiledRun {
  TracePtr trace;                    // null when record is false
  std::vector<double> latencies_ms;  // per timed iteration (wall clock around run())
  double compile_ms = 0;
  std::vector<Tensor> outputs;       // of the last iteration
  uint64_t recorded_events = 0;
  double build_ms = 0;               // post-processing time
  uint64_t gpu_records = 0;          // CUPTI kernels + copies + memsets merged into the trace
  std::string gpu_note;              // why GPU activity is missing (empty: collected, or not a GPU run)
};

Expected<ProfiledRun> profile_run(const ir::Graph& g, const runtime::TensorMap& inputs, runtime::Backend& backend,
                                  const ProfileOptions& options);

// The trace of a run observed elsewhere (a training step: nn::train::RunOptions::observe_last_step)
// from its recorder, the graph that ran and, in Graph mode, its memory plan. Metadata as given,
// plus "device".
TracePtr build_observed_trace(const Recorder& recorder, const ir::Graph& ran, const runtime::MemoryPlan* plan,
                              std::map<std::string, std::string> metadata, const runtime::Backend& backend);

}  // namespace ms::prof
