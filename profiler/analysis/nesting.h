// What the views take from a trace's events beyond the events themselves, computed once where the
// trace is whole (a session file stores them beside its events, so a trace read window by window
// draws and measures as the whole trace does): each event's nesting depth on its track (the row the
// timeline stacks it in) and the time each iteration's ops span.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/trace/trace.h"

namespace ms::prof {

// Per event, how many earlier events of its track are still open when it starts (events sorted by
// track, start, longer first, as TraceBuilder leaves them; a new run of one track starts at 0).
std::vector<int32_t> nesting_depths(const Trace& t);

// The first start and last end of the op events of each iteration, by iteration.
struct IterationSpan {
  int32_t iteration = 0;
  int64_t t0 = 0, t1 = 0;
};
std::vector<IterationSpan> op_iteration_spans(const Trace& t);

}  // namespace ms::prof
