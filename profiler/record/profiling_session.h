// What profiling runs takes, whoever drives them: the Recorder and, on a CUDA backend, the CUPTI
// collector with each op's NodeId pushed as external correlation; then one trace built from both.
// The run loop (app/session/run_loop) profiles its timed iterations with it, and a training run
// its observed step (nn::train::RunOptions::observe_last_step), so both show GPU kernels, copies
// and flows the same way.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "engine/runtime/executor.h"
#include "profiler/record/cupti_collector.h"
#include "profiler/record/recorder.h"
#include "profiler/trace/trace.h"

namespace ms::prof {

// Makes the GPU collector; the default is create_cupti_collector(). Tests pass a scripted one.
using GpuCollectorFactory = std::function<Expected<std::unique_ptr<CuptiCollector>>()>;

struct ProfilingOptions {
  RecorderOptions recorder;
  // CUDA backend: also collect GPU kernels, copies and CUDA API calls through CUPTI. When CUPTI
  // cannot start, host ops are still recorded and gpu_note() (and the trace's "gpu_note") says why.
  bool gpu_activity = true;
  GpuCollectorFactory gpu_collector;
  // Sees every observed event after the recorder (a caller's own observer); may be null.
  runtime::RunObserver* also = nullptr;
};

class ProfilingSession {
 public:
  explicit ProfilingSession(runtime::Backend& backend, ProfilingOptions options = {});
  ~ProfilingSession();
  ProfilingSession(const ProfilingSession&) = delete;
  ProfilingSession& operator=(const ProfilingSession&) = delete;

  // The observer of the profiled runs: the recorder (and `also`), pushing NodeIds while GPU
  // activity is on. Start and stop the GPU activity around those runs yourself.
  runtime::RunObserver& observer();
  // The same observer for one run driven elsewhere (a training step): GPU activity starts at that
  // run's begin and stops at its end, so work before and after it stays out.
  runtime::RunObserver& observer_for_one_run();

  // CUDA backends only, once: synchronizes first so earlier work stays out of the activity. A
  // collector that cannot be made or started leaves a note and the host profile intact.
  void start_gpu();
  // Synchronizes (kernels still running would reach CUPTI incomplete) and keeps the activity.
  void stop_gpu();
  bool gpu_active() const;

  // The trace of everything observed: ctx's graph, plan and metadata, plus "device" and the GPU
  // activity ("gpu_activity": "cupti", or "none" with "gpu_note"). Stops GPU activity if on.
  TracePtr build(BuildContext ctx);

  const std::string& gpu_note() const { return gpu_note_; }
  uint64_t gpu_records() const { return gpu_records_; }  // kernels + copies + memsets collected
  uint64_t recorded() const { return recorder_.recorded(); }
  double build_ms() const { return build_ms_; }

 private:
  class Observer;
  runtime::Backend& backend_;
  ProfilingOptions options_;
  Recorder recorder_;
  std::unique_ptr<CuptiCollector> gpu_;
  std::unique_ptr<GpuActivity> activity_;
  std::unique_ptr<Observer> observer_;
  bool gpu_tried_ = false;
  std::string gpu_note_;
  uint64_t gpu_records_ = 0;
  double build_ms_ = 0;
};

}  // namespace ms::prof
