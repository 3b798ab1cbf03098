// TimelineModel's windowed runs: a trace read window by window from a TimelineWindowSource. Its rows
// (one per track and nesting depth, one per counter) are made once; each load_window replaces the
// events they hold with the visible window's, each in the row of its depth (or, where a track has
// more than a few events per pixel there, with one summary event per bucket of a few pixels that
// counts the events it stands for, in the row of the bucket's first event).
#include <algorithm>
#include <map>

#include "views/timeline/timeline_model.h"

namespace ms::views {

void TimelineModel::add_windowed_run(std::string label, std::shared_ptr<TimelineWindowSource> source) {
  if (!source) return;
  prof::TracePtr skeleton = source->skeleton();
  if (!skeleton) return;
  const auto [begin, end] = source->span();
  const int run = static_cast<int>(runs_.size());
  Run r;
  r.label = std::move(label);
  r.trace = skeleton;
  r.skeleton = skeleton;
  r.origin_ns = begin;
  r.source = std::move(source);
  // The legend counts the whole trace (the source's totals), not the window shown.
  if (take_op_types(r)) rank_op_types();
  runs_.push_back(r);
  span_ = std::max(span_, end - begin);
  // A row per track and nesting depth, as a loaded trace has them.
  for (uint32_t track = 0; track < skeleton->tracks.size(); ++track) {
    if (r.source->count(track, begin, end + 1) == 0) continue;  // a track of counters only
    const int depths = std::max(1, r.source->depth_count(track));
    for (int depth = 0; depth < depths; ++depth) {
      TimelineRow row;
      row.run = run;
      row.track = track;
      row.depth = depth;
      const prof::Track& tr = skeleton->tracks[track];
      if (depth == 0) row.label = tr.name.empty() ? prof::track_kind_name(tr.kind) : tr.name;
      rows_.push_back(std::move(row));
    }
  }
  std::map<std::pair<uint32_t, prof::StrId>, size_t> counter_rows;
  for (const auto& c : skeleton->counters) {
    auto [it, fresh] = counter_rows.emplace(std::make_pair(c.track, c.name), rows_.size());
    if (fresh) {
      TimelineRow row;
      row.run = run;
      row.track = c.track;
      row.counter = true;
      row.label = std::string(skeleton->str(c.name));
      rows_.push_back(std::move(row));
    }
    TimelineRow& row = rows_[it->second];
    row.samples.emplace_back(c.ts_ns - begin, c.value);
    row.max_value = std::max(row.max_value, c.value);
  }
}

bool TimelineModel::windowed() const {
  return std::any_of(runs_.begin(), runs_.end(), [](const Run& r) { return r.source != nullptr; });
}

int64_t TimelineModel::run_event_count(int run) const {
  const Run& r = runs_[static_cast<size_t>(run)];
  return r.source ? r.source->event_count() : static_cast<int64_t>(r.trace->events.size());
}

uint32_t TimelineModel::folded(int row, uint32_t index) const {
  const Run& r = runs_[static_cast<size_t>(rows_[static_cast<size_t>(row)].run)];
  return index < r.folded.size() ? r.folded[index] : 1;
}

bool TimelineModel::take_op_types(Run& r) {
  auto totals = r.source->op_type_totals();
  r.op_types_pending = !totals;
  if (!totals) return false;
  for (const auto& [name, ns] : *totals) op_time_[name] += ns;
  return true;
}

bool TimelineModel::legend_pending() const {
  return std::any_of(runs_.begin(), runs_.end(), [](const Run& r) { return r.op_types_pending; });
}

std::string TimelineModel::source_error() const {
  for (const Run& r : runs_)
    if (r.source && !r.source->error().empty()) return r.source->error();
  return {};
}

bool TimelineModel::recount_legend() {
  bool took = false;
  for (Run& r : runs_)
    if (r.op_types_pending) took = take_op_types(r) || took;
  if (took) rank_op_types();
  return took;
}

WindowLoad TimelineModel::load_window(double t0, double t1, double width) {
  WindowLoad load;
  if (t1 <= t0 || width <= 0) return load;
  const auto max_events = static_cast<int64_t>(width * kEventsPerPixel);
  const int buckets = std::max(1, static_cast<int>(width / kPixelsPerBucket));
  for (int run = 0; run < static_cast<int>(runs_.size()); ++run) {
    const Run& r = runs_[static_cast<size_t>(run)];
    if (!r.source) continue;
    const int64_t a = r.origin_ns + static_cast<int64_t>(t0), b = r.origin_ns + static_cast<int64_t>(t1) + 1;
    const size_t tracks = r.trace->tracks.size();
    WindowEvents w(tracks);
    for (uint32_t track = 0; track < tracks; ++track) {
      if (r.source->count(track, a, b) <= max_events) {
        w.events[track] = r.source->events(track, a, b, w.depths[track]);
        w.folds[track].assign(w.events[track].size(), 1);
        w.depths[track].resize(w.events[track].size(), 0);
        load.events += w.events[track].size();
        continue;
      }
      ++load.tracks_summarized;
      for (const WindowSummaryBucket& k : r.source->summary(track, a, b, buckets)) {
        ++load.buckets;
        if (k.count <= 0) continue;
        prof::Event e = k.first;
        // A bucket of one event is that event; of more, one item from its first start to its end.
        // It sits in the row of its first event's depth.
        if (k.count > 1) e.dur_ns = std::max(e.dur_ns, k.t1 - e.ts_ns);
        w.events[track].push_back(e);
        w.depths[track].push_back(k.first_depth);
        w.folds[track].push_back(static_cast<uint32_t>(std::min<int64_t>(k.count, UINT32_MAX)));
      }
    }
    fill_window_rows(run, w);
  }
  return load;
}

void TimelineModel::fill_window_rows(int run, const WindowEvents& w) {
  Run& r = runs_[static_cast<size_t>(run)];
  // The skeleton's names and nodes with the window's events (its counters are in their rows).
  const prof::Trace& sk = *r.skeleton;
  auto window = std::make_shared<prof::Trace>();
  window->metadata = sk.metadata;
  window->strings = sk.strings;
  window->tracks = sk.tracks;
  window->nodes = sk.nodes;
  window->foreign = sk.foreign;
  r.folded.clear();
  r.row_of_event.clear();
  // The run's rows by track and depth; an event deeper than its track's rows goes to the deepest.
  std::vector<std::vector<int>> row_of(w.events.size());
  for (int ri = 0; ri < static_cast<int>(rows_.size()); ++ri) {
    TimelineRow& row = rows_[static_cast<size_t>(ri)];
    if (row.run != run || row.counter || row.track >= w.events.size()) continue;
    row.events.clear();
    row.starts.clear();
    row.max_dur = 0;
    row_of[row.track].push_back(ri);
  }
  for (size_t track = 0; track < w.events.size(); ++track) {
    const std::vector<int>& rows = row_of[track];
    for (size_t k = 0; k < w.events[track].size(); ++k) {
      const prof::Event& e = w.events[track][k];
      const auto i = static_cast<uint32_t>(window->events.size());
      window->events.push_back(e);
      r.folded.push_back(w.folds[track][k]);
      int ri = -1;
      if (!rows.empty())
        ri = rows[std::min<size_t>(static_cast<size_t>(std::max(0, w.depths[track][k])), rows.size() - 1)];
      r.row_of_event.push_back(ri);
      if (ri < 0) continue;
      TimelineRow& row = rows_[static_cast<size_t>(ri)];
      row.events.push_back(i);
      row.starts.push_back(e.ts_ns - r.origin_ns);
      row.max_dur = std::max(row.max_dur, e.dur_ns);
    }
  }
  r.trace = std::move(window);
}

}  // namespace ms::views
