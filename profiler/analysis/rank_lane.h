// One rank of a data-parallel training run as the Ranks view draws it and a session stores it: its
// compile, steps and collectives on a time scale that starts at its aligned step, and the figures
// over the steps they cover. Read from a rank's trace by views/timeline/ranks_data.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ms::prof {

struct RankSpan {
  int64_t t0 = 0, t1 = 0;  // ns from the rank's aligned step (RankLane::aligned_step)
  int step = 0;            // 1-based
};

struct RankCollective {
  int64_t sequence = -1;
  int64_t t0 = 0, t1 = 0;  // ns from the rank's aligned step
  int step = 0;            // the step it ran in (0: none)
  uint64_t bytes = 0;
};

struct RankLane {
  int rank = 0, world_size = 0;
  std::string label;  // the trace's process name
  std::string group;  // the run the rank belongs to: the process name before " rank" ("train graph")
  RankSpan compile;   // Graph mode's trace + compile before step 1 (step 0; t1 == t0: none)
  std::vector<RankSpan> steps;
  std::vector<RankCollective> collectives;
  int aligned_step = 1;  // the step at time 0: 2 when there are more (step 1 runs cold, after the compile)
  // The figures cover steps first_step..last_step: step 1 (warm-up, in both modes) is left out
  // unless it is the only step.
  int first_step = 1, last_step = 0;
  double median_step_ms = 0;
  double allreduce_ms_per_step = 0;  // time inside collectives, per step
};

// The warm-up steps the figures leave out (those before first_step): their time in ms, 0 if none.
inline double warmup_step_ms(const RankLane& lane) {
  double ms = 0;
  for (const RankSpan& s : lane.steps)
    if (s.step < lane.first_step) ms += static_cast<double>(s.t1 - s.t0) / 1e6;
  return ms;
}

}  // namespace ms::prof
