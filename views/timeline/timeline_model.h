// The timeline's data side, free of widgets: rows (one per track and nesting depth, plus counter
// rows) over one or more traces stacked on one time scale (each aligned at its start), and the first
// of the two rendering steps: cull to the visible range and fold sub-pixel events into counted
// items, giving a draw list the widget only paints.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "profiler/trace/trace.h"
#include "views/timeline/timeline_source.h"

namespace ms::views {

struct TimelineRow {
  int run = 0;
  uint32_t track = 0;
  int depth = 0;
  bool counter = false;
  std::string label;             // "host 1234", "kernels 2", "live bytes"
  std::vector<uint32_t> events;  // indices into the run's trace events, by start
  std::vector<int64_t> starts;   // their start times relative to the run's start
  int64_t max_dur = 0;
  std::vector<std::pair<int64_t, double>> samples;  // counter rows: (relative ns, value)
  double max_value = 0;
};

struct DrawItem {
  float x0 = 0, x1 = 0;  // pixels from the left of the time area
  int row = 0;
  uint32_t event = 0;  // the first event of the item (its run's index)
  uint32_t count = 1;  // > 1: sub-pixel events folded together
};

struct DrawList {
  std::vector<DrawItem> items;
  size_t visited = 0;  // events looked at (culling is by binary search)
};

struct OpShare {
  std::string name;
  int64_t count = 0;
  int64_t ns = 0;  // time inside the range
  double share = 0;
};

struct RangeStats {
  int64_t t0 = 0, t1 = 0;
  std::vector<std::vector<OpShare>> per_run;  // largest time first, then by name
  std::vector<std::string> errors;            // per run: why it could not be counted ("" when it was)
};
// A range's statistics, computed apart from the model (on a worker thread); `cancelled` may be empty.
using RangeStatsJob = std::function<RangeStats(const std::function<bool()>& cancelled)>;

// What one load of a window fetched from the windowed runs' sources.
struct WindowLoad {
  size_t events = 0;   // events fetched
  size_t buckets = 0;  // summary buckets fetched (tracks with too many events in the window)
  size_t tracks_summarized = 0;
};

class TimelineModel {
 public:
  struct Run {
    std::string label;
    prof::TracePtr trace;
    int64_t origin_ns = 0;              // subtracted from its times
    std::vector<int32_t> row_of_event;  // row index of each event (flow arrows)
    // A windowed run: `trace` is the source's skeleton with the loaded window's events; `folded`
    // says how many stored events each of them stands for (1: itself; more: a summary bucket).
    std::shared_ptr<TimelineWindowSource> source;
    prof::TracePtr skeleton;
    std::vector<uint32_t> folded;
    bool op_types_pending = false;  // its source is still counting the legend's totals
  };
  void set_runs(std::vector<std::pair<std::string, prof::TracePtr>> runs);
  // Adds a run read window by window (timeline_window.cpp): one row per track and nesting depth
  // (the source's), one per counter; nothing of its events is held but the last loaded window.
  void add_windowed_run(std::string label, std::shared_ptr<TimelineWindowSource> source);
  bool windowed() const;
  // Loads the windowed runs' events of [t0, t1) (relative ns) for `width` pixels: a track with at
  // most a few events per pixel in the window gets them, one with more a summary of about one
  // bucket per 3 pixels.
  WindowLoad load_window(double t0, double t1, double width);
  // Events of the run (a windowed run's stored total).
  int64_t run_event_count(int run) const;
  // How many stored events the event of `row` stands for (1 but in a windowed run's summary).
  uint32_t folded(int row, uint32_t index) const;
  const std::vector<Run>& runs() const { return runs_; }
  const std::vector<TimelineRow>& rows() const { return rows_; }
  int64_t span_ns() const { return span_; }
  size_t event_count() const;
  // Op types by total time over all runs (the legend), largest first, 16 at most; a windowed run's
  // from its source's totals.
  const std::vector<std::string>& top_names() const { return top_names_; }
  // Whether a windowed run's source is still counting its totals (the legend lacks them), and asks
  // such sources again: true when the legend took some in.
  bool legend_pending() const;
  // The first error a windowed run's source met (a trace file moved or damaged while open: its
  // windows come back empty), or "".
  std::string source_error() const;
  bool recount_legend();

  // Step one of a frame: the visible window [t0, t1) over `width` pixels.
  DrawList build(double t0, double t1, double width) const;
  // The statistics of [t0, t1) (relative ns) per run, as a trace loaded whole counts them
  // (range_counts, range_time): a windowed run's from its source's range_totals, never from the
  // window loaded. stats() computes them here; stats_job() gives the work, holding what it needs, to
  // run on another thread (a windowed run's query may read millions of events).
  RangeStats stats(int64_t t0, int64_t t1) const;
  RangeStatsJob stats_job(int64_t t0, int64_t t1) const;
  // The event of `row` covering time t (within tol_ns), or -1.
  int64_t event_at(int row, double t, double tol_ns) const;
  const prof::Event& event(int row, uint32_t index) const {
    return runs_[static_cast<size_t>(rows_[static_cast<size_t>(row)].run)].trace->events[index];
  }
  static constexpr int kEventsPerPixel = 4;  // more in a track's window: a summary
  static constexpr int kPixelsPerBucket = 3;

 private:
  // One window of a windowed run, per track: the events (or summary items), their depths and how
  // many stored events each stands for.
  struct WindowEvents {
    explicit WindowEvents(size_t tracks) : events(tracks), depths(tracks), folds(tracks) {}
    std::vector<std::vector<prof::Event>> events;
    std::vector<std::vector<int32_t>> depths;
    std::vector<std::vector<uint32_t>> folds;
  };
  void fill_window_rows(int run, const WindowEvents& w);
  void rank_op_types();        // top_names_ from op_time_
  bool take_op_types(Run& r);  // adds the source's totals to op_time_ (false: not counted yet)
  std::vector<Run> runs_;
  std::vector<TimelineRow> rows_;
  int64_t span_ = 1;
  std::vector<std::string> top_names_;
  std::map<std::string, int64_t> op_time_;  // the legend's count: time by op type over all runs
};

}  // namespace ms::views
