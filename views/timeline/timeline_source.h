// A trace the timeline reads window by window instead of holding it whole (a session file's trace
// of millions of events): the trace without its events, the time they span, and per track the
// events of a window with their nesting depths, their number, or a summary of it in equal time
// buckets (zoomed out: a count and the first event per bucket), and the time by op type. Qt-free;
// the app implements it over a session file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profiler/trace/trace.h"

namespace ms::views {

struct WindowSummaryBucket {
  int64_t t0 = 0, t1 = 0;   // absolute ns
  int64_t count = 0;        // events starting in [t0, t1)
  prof::Event first;        // the first of them (when count > 0)
  int32_t first_depth = 0;  // its nesting depth
};

class TimelineWindowSource {
 public:
  virtual ~TimelineWindowSource() = default;
  // Strings, tracks, nodes and counters; no events.
  virtual prof::TracePtr skeleton() const = 0;
  // [first start, last end] of the events, absolute ns.
  virtual std::pair<int64_t, int64_t> span() const = 0;
  virtual int64_t event_count() const = 0;
  // Events of `track` starting in [t0, t1).
  virtual int64_t count(uint32_t track, int64_t t0, int64_t t1) const = 0;
  // Events of `track` overlapping [t0, t1), by start, and in `depths` each one's nesting depth on
  // the track in the whole trace (prof::nesting_depths: the row a loaded trace draws it in).
  virtual std::vector<prof::Event> events(uint32_t track, int64_t t0, int64_t t1,
                                          std::vector<int32_t>& depths) const = 0;
  // The nesting depths `track` has (1 + its deepest event's depth; 0 for a track without events).
  virtual int depth_count(uint32_t track) const = 0;
  virtual std::vector<WindowSummaryBucket> summary(uint32_t track, int64_t t0, int64_t t1, int buckets) const = 0;
  // The whole trace's Op and Foreign events' total duration by name (the legend's op types), in
  // any order, without reading its events (a session file stores these totals); nullopt while they
  // are being counted (an older file's, in the background): asked again until given.
  virtual std::optional<std::vector<std::pair<std::string, int64_t>>> op_type_totals() const = 0;
  // The last query's error ("" when none): a damaged file fails the query that reads it.
  virtual std::string error() const { return {}; }
};

}  // namespace ms::views
