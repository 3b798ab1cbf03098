// Ranks of a data-parallel training run, one trace per rank (`train --profile 'DIR{rank}'` under
// mpirun: a "steps" track with one event per step, a "collectives" track with one event per
// all-reduce, named "all-reduce #SEQ"): per rank its steps and collectives on a time scale that
// starts at its first step, the median step time, the all-reduce wait per step (time inside
// collectives), and across ranks the collectives of one sequence number lined up and the straggler
// (the rank whose collectives start last most often). Qt-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace ms::views {

struct RankSpan {
  int64_t t0 = 0, t1 = 0;  // ns from the rank's first step
  int step = 0;            // 1-based
};

struct RankCollective {
  int64_t sequence = -1;
  int64_t t0 = 0, t1 = 0;  // ns from the rank's first step
  int step = 0;            // the step it ran in (0: none)
  uint64_t bytes = 0;
};

struct RankLane {
  int rank = 0, world_size = 0;
  std::string label;  // the trace's process name
  std::string group;  // the run the rank belongs to: the process name before " rank" ("train graph")
  std::vector<RankSpan> steps;
  std::vector<RankCollective> collectives;
  double median_step_ms = 0;
  double allreduce_ms_per_step = 0;  // time inside collectives, per step
};

struct RanksData {
  std::vector<RankLane> lanes;  // by rank
  int64_t span_ns = 1;
  // Per sequence number: the spread of the collective's end across ranks (how well aligned they
  // are) and the rank that started it last.
  // Keyed by (group, sequence): each run numbers its collectives on its own.
  std::map<std::pair<std::string, int64_t>, int64_t> end_spread_ns;
  std::map<std::pair<std::string, int64_t>, int> last_to_start;
  int straggler = -1;  // the rank most often last to start a collective (-1: fewer than 2 ranks)
};

// One lane from one rank's trace; `fallback_rank` when the trace does not say its rank. Errors
// (no "steps" track) name `what` (the file).
Expected<RankLane> rank_lane(const prof::Trace& t, int fallback_rank, const std::string& what);
// The lanes sorted by group and rank, aligned and compared.
RanksData ranks_data(std::vector<RankLane> lanes);

}  // namespace ms::views
