// Memory of one trace: peak live bytes and when, the lower bound any allocator needs (the peak of
// live bytes), the footprint actually held (arena + distinct allocator blocks), fragmentation (held
// bytes not live at the peak), reuse per region and the largest values live at the peak.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace ms::prof {

struct RegionReuse {
  uint64_t address = 0;  // offset in the arena or allocator address
  uint64_t bytes = 0;    // largest block placed there
  bool arena = false;
  int64_t uses = 0;  // blocks placed there (per trace, all iterations)
};

struct PeakContributor {
  std::string value;
  uint64_t producer = 0;
  std::string producer_name;
  std::string op;
  uint64_t bytes = 0;
};

struct MemoryAnalysis {
  uint64_t peak_live_bytes = 0;
  int64_t peak_ns = 0;
  uint64_t lower_bound_bytes = 0;    // = peak of live bytes
  uint64_t planned_lower_bound = 0;  // Graph mode: the planner's bound (aligned sizes), 0 otherwise
  uint64_t footprint_bytes = 0;      // arena + allocator blocks held
  uint64_t arena_bytes = 0;
  double fragmentation = 0;  // (footprint - live at peak) / footprint
  int64_t blocks = 0;
  int64_t regions = 0;
  double mean_reuse = 0;                     // blocks per region
  std::vector<RegionReuse> top_regions;      // most reused first (at most 20)
  std::vector<PeakContributor> top_at_peak;  // largest first (at most 10)
};

MemoryAnalysis analyze_memory(const Trace& t, size_t top = 10);

}  // namespace ms::prof
