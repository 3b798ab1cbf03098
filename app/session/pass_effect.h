// What each compiler pass buys, as the app's Pass Effect dock measures it: Graph-mode runs of the
// whole pipeline and of the pipeline without each chosen pass (one at a time), then the whole
// pipeline once more (the faster of its two runs kept). Through run_mode, so with the app's compile
// cache a measurement taken again, or one whose whole pipeline the Run panel compiled, reuses the
// compiled graphs; only a changed model, option (device, threads, jit level, precision), batch
// bucket or pass list compiles. Qt-free.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "app/session/mode_run.h"

namespace ms::session {

// One run's figures as the dock compares them (error set: the run failed, the rest is zero).
struct PipelineRun {
  double latency_ms = 0;
  double compile_ms = 0;  // of the graph that ran, compiled by this measurement or kept from before
  size_t peak_bytes = 0, arena_bytes = 0;
  int64_t kernels = 0;
  int nodes = 0;  // after the last pass
  bool cached = false;
  std::string error;
};

struct PassEffects {
  PipelineRun full;
  std::vector<std::pair<std::string, PipelineRun>> without;  // pass argument, its run without it
  CompileCounts counts;                                      // all the measurement's runs together
};

// `request`'s disabled passes are ignored: the whole pipeline is the baseline. A cancelled
// measurement is an error; a failed run is its row's error.
Expected<PassEffects> measure_pass_effects(const ir::Graph& g, const ModeRun& request,
                                           const std::vector<std::string>& passes, RunCallbacks& callbacks,
                                           CompileCache* cache = nullptr);

}  // namespace ms::session
