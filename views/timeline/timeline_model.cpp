#include "views/timeline/timeline_model.h"

#include <algorithm>
#include <map>

#include "profiler/analysis/nesting.h"

namespace ms::views {

void TimelineModel::set_runs(std::vector<std::pair<std::string, prof::TracePtr>> runs) {
  runs_.clear();
  rows_.clear();
  op_time_.clear();
  span_ = 1;
  for (auto& [label, trace] : runs) {
    if (!trace) continue;
    const int run = static_cast<int>(runs_.size());
    Run r;
    r.label = label;
    r.trace = trace;
    r.origin_ns = trace->begin_ns();
    runs_.push_back(r);
    const prof::Trace& t = *trace;
    runs_.back().row_of_event.assign(t.events.size(), -1);
    span_ = std::max(span_, t.end_ns() - r.origin_ns);
    // One row per track and nesting depth (events are sorted by (track, ts, -dur)).
    const std::vector<int32_t> depths = prof::nesting_depths(t);
    size_t i = 0;
    while (i < t.events.size()) {
      const uint32_t track = t.events[i].track;
      std::vector<size_t> row_of_depth;
      for (; i < t.events.size() && t.events[i].track == track; ++i) {
        const prof::Event& e = t.events[i];
        const auto depth = static_cast<size_t>(depths[i]);
        while (row_of_depth.size() <= depth) {
          TimelineRow row;
          row.run = run;
          row.track = track;
          row.depth = static_cast<int>(row_of_depth.size());
          const prof::Track* tr = track < t.tracks.size() ? &t.tracks[track] : nullptr;
          row.label = tr ? (tr->name.empty() ? prof::track_kind_name(tr->kind) : tr->name) : "track";
          if (row.depth > 0) row.label = "";
          row_of_depth.push_back(rows_.size());
          rows_.push_back(std::move(row));
        }
        if (e.kind == prof::EventKind::Op || e.kind == prof::EventKind::Foreign)
          op_time_[std::string(t.str(e.name))] += e.dur_ns;
        runs_.back().row_of_event[i] = static_cast<int32_t>(row_of_depth[depth]);
        TimelineRow& row = rows_[row_of_depth[depth]];
        row.events.push_back(static_cast<uint32_t>(i));
        row.starts.push_back(e.ts_ns - r.origin_ns);
        row.max_dur = std::max(row.max_dur, e.dur_ns);
      }
    }
    // Counters: one row per (track, name).
    std::map<std::pair<uint32_t, prof::StrId>, size_t> counter_rows;
    for (const auto& c : t.counters) {
      auto key = std::make_pair(c.track, c.name);
      auto it = counter_rows.find(key);
      if (it == counter_rows.end()) {
        TimelineRow row;
        row.run = run;
        row.track = c.track;
        row.counter = true;
        row.label = std::string(t.str(c.name));
        it = counter_rows.emplace(key, rows_.size()).first;
        rows_.push_back(std::move(row));
      }
      TimelineRow& row = rows_[it->second];
      row.samples.emplace_back(c.ts_ns - r.origin_ns, c.value);
      row.max_value = std::max(row.max_value, c.value);
    }
  }
  rank_op_types();
}

void TimelineModel::rank_op_types() {
  // Largest first; of equal times, the name last in order first.
  std::vector<std::pair<int64_t, std::string>> names;
  for (auto& [n, ns] : op_time_) names.emplace_back(ns, n);
  std::sort(names.rbegin(), names.rend());
  top_names_.clear();
  for (size_t i = 0; i < names.size() && i < 16; ++i) top_names_.push_back(names[i].second);
}

size_t TimelineModel::event_count() const {
  size_t n = 0;
  for (int r = 0; r < static_cast<int>(runs_.size()); ++r) n += static_cast<size_t>(run_event_count(r));
  return n;
}

DrawList TimelineModel::build(double t0, double t1, double width) const {
  DrawList out;
  if (t1 <= t0 || width <= 0) return out;
  const double scale = width / (t1 - t0);
  for (int ri = 0; ri < static_cast<int>(rows_.size()); ++ri) {
    const TimelineRow& row = rows_[static_cast<size_t>(ri)];
    if (row.counter || row.events.empty()) continue;
    const auto& evs = runs_[static_cast<size_t>(row.run)].trace->events;
    const auto& folds = runs_[static_cast<size_t>(row.run)].folded;
    const int64_t origin = runs_[static_cast<size_t>(row.run)].origin_ns;
    // Cull: nothing starting before t0 - max_dur can reach into the window.
    size_t k = static_cast<size_t>(
        std::lower_bound(row.starts.begin(), row.starts.end(), static_cast<int64_t>(t0) - row.max_dur) -
        row.starts.begin());
    const size_t end = static_cast<size_t>(
        std::lower_bound(row.starts.begin(), row.starts.end(), static_cast<int64_t>(t1) + 1) - row.starts.begin());
    bool pending = false;
    DrawItem fold;
    for (; k < end; ++k) {
      ++out.visited;
      const prof::Event& e = evs[row.events[k]];
      const double s = static_cast<double>(e.ts_ns - origin), f = s + static_cast<double>(e.dur_ns);
      if (f < t0) continue;
      const float x0 = static_cast<float>((std::max(s, t0) - t0) * scale);
      const float x1 = static_cast<float>((std::min(f, t1) - t0) * scale);
      const uint32_t n = folds.empty() ? 1 : folds[row.events[k]];
      if (x1 - x0 >= 1.0f) {
        if (pending) out.items.push_back(fold), pending = false;
        out.items.push_back({x0, x1, ri, row.events[k], n});
        continue;
      }
      // Sub-pixel: fold into the pending item while it stays within about a pixel.
      if (pending && x0 <= fold.x1 + 1.0f) {
        fold.x1 = std::max(fold.x1, std::max(x1, x0 + 1.0f));
        fold.count += n;
      } else {
        if (pending) out.items.push_back(fold);
        fold = {x0, std::max(x1, x0 + 1.0f), ri, row.events[k], n};
        pending = true;
      }
    }
    if (pending) out.items.push_back(fold);
  }
  return out;
}

int64_t TimelineModel::event_at(int ri, double t, double tol) const {
  if (ri < 0 || ri >= static_cast<int>(rows_.size())) return -1;
  const TimelineRow& row = rows_[static_cast<size_t>(ri)];
  if (row.counter) return -1;
  const auto& evs = runs_[static_cast<size_t>(row.run)].trace->events;
  const int64_t origin = runs_[static_cast<size_t>(row.run)].origin_ns;
  size_t k = static_cast<size_t>(
      std::lower_bound(row.starts.begin(), row.starts.end(), static_cast<int64_t>(t - tol) - row.max_dur) -
      row.starts.begin());
  int64_t best = -1;
  double best_d = tol + 1;
  for (; k < row.starts.size() && static_cast<double>(row.starts[k]) <= t + tol; ++k) {
    const prof::Event& e = evs[row.events[k]];
    const double s = static_cast<double>(e.ts_ns - origin), f = s + static_cast<double>(e.dur_ns);
    const double d = t < s ? s - t : t > f ? t - f : 0;
    if (d < best_d) best_d = d, best = row.events[k];
  }
  return best_d <= tol ? best : -1;
}

}  // namespace ms::views
