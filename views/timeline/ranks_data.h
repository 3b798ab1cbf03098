// Ranks of a data-parallel training run, one trace per rank (`train --profile 'DIR{rank}'` under
// mpirun: a "steps" track with one event per step, a "collectives" track with one event per
// all-reduce, named "all-reduce #SEQ"; Graph mode's "trace + compile step" before step 1): per rank
// its compile, steps and collectives on a time scale that starts at step 2 (the first step after
// the compile; step 1 when there is only one, earlier times negative), the median step time and
// the all-reduce wait per step (time inside collectives) over the steps after step 1 (warm-up in
// both modes: Graph mode's first run after the compile, PyNative's first allocations), and
// across ranks the collectives of one sequence number lined up and, per run (mode), the straggler
// (the rank whose collectives start last most often). Qt-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/analysis/rank_lane.h"
#include "profiler/trace/trace.h"

namespace ms::views {

using prof::RankCollective;
using prof::RankLane;
using prof::RankSpan;

struct RanksData {
  std::vector<RankLane> lanes;  // by group, then rank
  int64_t start_ns = 0;         // the earliest time drawn (<= 0: the compile and step 1 come before)
  int64_t span_ns = 1;          // the latest
  // Per sequence number: the spread of the collective's end across ranks (how well aligned they
  // are) and the rank that started it last.
  // Keyed by (group, sequence): each run numbers its collectives on its own.
  std::map<std::pair<std::string, int64_t>, int64_t> end_spread_ns;
  std::map<std::pair<std::string, int64_t>, int> last_to_start;
  // Per group (run): the rank most often last to start a collective of the steps its figures cover,
  // among that run's ranks only. Groups of fewer than 2 ranks have none.
  std::map<std::string, int> stragglers;
  // The straggler of `group`, -1 for none.
  int straggler(const std::string& group) const;
};

// One lane from one rank's trace; `fallback_rank` when the trace does not say its rank. Errors
// (no "steps" track) name `what` (the file).
Expected<RankLane> rank_lane(const prof::Trace& t, int fallback_rank, const std::string& what);
// Each step's loss and learning rate as a rank's trace records them (the "steps" track's "step N"
// events, args "loss" and "lr"), by step from 1; empty when the trace has none (no steps track, or
// steps without a loss).
struct RankStepValues {
  std::vector<double> losses, lrs;
};
RankStepValues rank_step_values(const prof::Trace& t);
// The lanes' figures (median step time, all-reduce wait) over steps first_step..last_step.
void measure_lane(RankLane& lane);
// The lanes sorted by group and rank, aligned and compared.
RanksData ranks_data(std::vector<RankLane> lanes);

}  // namespace ms::views
