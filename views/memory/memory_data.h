// What the memory heatmap draws, built without Qt widgets from a recorded trace (PyNative pool or
// Graph arena, as it ran) or from the compiler's memory plan (as planned). x is op order (the n-th
// op dispatched in one iteration) or time (µs from the iteration's start, where the trace recorded
// timestamps), y the offset in the arena or the compacted pool.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/executor.h"
#include "profiler/trace/trace.h"

namespace ms::views {

struct MemBlock {
  double x0 = 0, x1 = 0;  // op index where it is defined .. one past the last op that reads it
  double t0 = 0, t1 = 0;  // µs from the iteration's start: allocated .. freed (MemPanel::timed)
  uint64_t y = 0, bytes = 0;
  uint64_t node = 0;  // NodeId value of the producer (0: none)
  std::string value, op, node_name;
  std::vector<uint64_t> origins;  // original nodes the producer stands for (linked selection)
  int reuse = 1;                  // blocks placed at the same offset (its region's reuse count)
};

struct MemPanel {
  std::string title;
  std::vector<MemBlock> blocks;
  double x_max = 1;         // ops in the iteration
  uint64_t size_bytes = 0;  // arena or pool size (the y range)
  uint64_t peak_bytes = 0;  // of the live-bytes curve
  double peak_x = 0;
  uint64_t lower_bound = 0;                       // what any allocator needs at least
  std::vector<std::pair<double, uint64_t>> live;  // step curve: (x, live bytes from x on)
  // Time axis: blocks' t0/t1 are set (recorded timestamps; for a plan, the Graph run's op starts).
  bool timed = false;
  double t_max = 0;                                 // µs, the iteration's length
  std::vector<std::pair<double, uint64_t>> live_t;  // the live-bytes curve over µs
  double fragmentation = 0;                         // (size - peak) / size
  double mean_reuse = 0;                            // blocks per distinct offset
  bool arena = false;
};

// The blocks of the trace's first recorded iteration; `title` names the panel.
MemPanel memory_panel_from_trace(const prof::Trace& t, const std::string& title);
// The compiler's plan; op types and names come from the Graph-mode trace's nodes when given, and
// so do times: plan step s is mapped to the start of the s-th op of that trace's first iteration.
MemPanel memory_panel_from_plan(const runtime::MemoryPlan& plan, const prof::Trace* names, const std::string& title);

}  // namespace ms::views
