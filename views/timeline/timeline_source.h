// A trace the timeline reads window by window instead of holding it whole (a session file's trace
// of millions of events): the trace without its events, the time they span, and per track the
// events of a window with their nesting depths, their number, or a summary of it in equal time
// buckets (zoomed out: a count and the first event per bucket), the time by op type, and the time
// by name of any range's events (the range statistics). Qt-free;
// the app implements it over a session file.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profiler/trace/trace.h"

namespace ms::views {

// The range statistics' rule, one for a trace loaded whole and for a source's query: an event's time
// [ts, ts + dur) inside [t0, t1), or -1 when the range leaves it out (it overlaps the range not at
// all; one of no duration counts, with 0, when it starts in the range).
inline int64_t range_time(int64_t ts, int64_t dur, int64_t t0, int64_t t1) {
  if (dur == 0) return ts >= t0 && ts < t1 ? 0 : -1;
  const int64_t s = ts > t0 ? ts : t0, f = ts + dur < t1 ? ts + dur : t1;
  return f > s ? f - s : -1;
}
// And which events it counts: a trace's Op events, or where it has none, all but its Run events.
inline bool range_counts(prof::EventKind kind, bool trace_has_ops) {
  return trace_has_ops ? kind == prof::EventKind::Op : kind != prof::EventKind::Run;
}

// A range's events of one name: how many and their time inside it.
struct RangeNameTotal {
  prof::StrId name = 0;
  int64_t count = 0;
  int64_t ns = 0;
};
struct RangeTotals {
  std::vector<RangeNameTotal> names;  // in any order
  std::string error;                  // why they could not be counted ("" when they were)
};

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
  // The events of [t0, t1) (absolute ns) by name, counted as the range statistics count a trace
  // loaded whole (range_counts, range_time), for any range: never from a summary. Called on a worker
  // thread while the other queries go on; `cancelled`, when given, is polled (a newer range wants
  // the answer). The default reads each track's events of the range (and once, of the whole trace,
  // whether it has Op events) through events(): a source over memory; a session file's counts with
  // an aggregate query.
  virtual RangeTotals range_totals(int64_t t0, int64_t t1, const std::function<bool()>& cancelled) const;
  // The last query's error ("" when none): a damaged file fails the query that reads it.
  virtual std::string error() const { return {}; }
};

}  // namespace ms::views
