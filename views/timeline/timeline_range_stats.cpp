// The range statistics under the timeline: per run, the events of a selected time range by name,
// how many and their time inside it. A trace loaded whole is counted here; a windowed run asks its
// source (TimelineWindowSource::range_totals), which counts the stored events by the same rule,
// because the window it holds is a summary whose items stand for many events under one name.
#include <algorithm>
#include <unordered_map>

#include "views/timeline/timeline_model.h"

namespace ms::views {

namespace {

bool has_op_events(const std::vector<prof::Event>& events) {
  return std::any_of(events.begin(), events.end(), [](const prof::Event& e) { return e.kind == prof::EventKind::Op; });
}

// The events of `events` in [t0, t1) by name (absolute ns).
void add_range_events(const std::vector<prof::Event>& events, bool has_ops, int64_t t0, int64_t t1,
                      std::unordered_map<prof::StrId, RangeNameTotal>& by_name) {
  for (const prof::Event& e : events) {
    if (!range_counts(e.kind, has_ops)) continue;
    const int64_t ns = range_time(e.ts_ns, e.dur_ns, t0, t1);
    if (ns < 0) continue;
    RangeNameTotal& n = by_name[e.name];
    n.name = e.name;
    ++n.count;
    n.ns += ns;
  }
}

RangeTotals totals_of(const std::unordered_map<prof::StrId, RangeNameTotal>& by_name) {
  RangeTotals out;
  for (const auto& kv : by_name) out.names.push_back(kv.second);
  return out;
}

// Shares of the run's total, largest time first (of equal times, by name).
std::vector<OpShare> shares_of(const prof::Trace& names, const std::vector<RangeNameTotal>& totals) {
  int64_t total = 0;
  for (const RangeNameTotal& n : totals) total += n.ns;
  std::vector<OpShare> v;
  v.reserve(totals.size());
  for (const RangeNameTotal& n : totals) {
    const double share = total ? static_cast<double>(n.ns) / static_cast<double>(total) : 0;
    v.push_back({std::string(names.str(n.name)), n.count, n.ns, share});
  }
  std::sort(v.begin(), v.end(), [](const OpShare& a, const OpShare& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.name != b.name ? a.name < b.name : a.count > b.count;
  });
  return v;
}

// What a job needs of one run: a trace loaded whole, or a windowed run's source and names.
struct StatsRun {
  prof::TracePtr whole, names;
  std::shared_ptr<TimelineWindowSource> source;
  int64_t origin = 0;
};

}  // namespace

RangeTotals TimelineWindowSource::range_totals(int64_t t0, int64_t t1, const std::function<bool()>& cancelled) const {
  const prof::TracePtr sk = skeleton();
  if (!sk) return {{}, "no trace"};
  const auto [begin, end] = span();
  std::vector<int32_t> depths;
  bool has_ops = false;
  for (uint32_t track = 0; track < sk->tracks.size() && !has_ops; ++track)
    has_ops = has_op_events(events(track, begin - 1, end + 1, depths));
  std::unordered_map<prof::StrId, RangeNameTotal> by_name;
  for (uint32_t track = 0; track < sk->tracks.size(); ++track) {
    if (cancelled && cancelled()) return {{}, "cancelled"};
    // From t0 - 1: an event of no duration at t0 overlaps that window.
    add_range_events(events(track, t0 - 1, t1, depths), has_ops, t0, t1, by_name);
  }
  RangeTotals out = totals_of(by_name);
  out.error = error();
  return out;
}

RangeStats TimelineModel::stats(int64_t t0, int64_t t1) const { return stats_job(t0, t1)({}); }

RangeStatsJob TimelineModel::stats_job(int64_t t0, int64_t t1) const {
  std::vector<StatsRun> runs;
  for (const Run& r : runs_) runs.push_back({r.source ? nullptr : r.trace, r.skeleton, r.source, r.origin_ns});
  return
      [runs = std::move(runs), t0 = std::min(t0, t1), t1 = std::max(t0, t1)](const std::function<bool()>& cancelled) {
        RangeStats out;
        out.t0 = t0;
        out.t1 = t1;
        for (const StatsRun& r : runs) {
          const int64_t a = r.origin + t0, b = r.origin + t1;
          RangeTotals totals;
          if (r.source) {
            totals = r.source->range_totals(a, b, cancelled);
          } else {
            std::unordered_map<prof::StrId, RangeNameTotal> by_name;
            add_range_events(r.whole->events, has_op_events(r.whole->events), a, b, by_name);
            totals = totals_of(by_name);
          }
          const prof::Trace& names = r.source ? *r.names : *r.whole;
          out.per_run.push_back(totals.error.empty() ? shares_of(names, totals.names) : std::vector<OpShare>{});
          out.errors.push_back(std::move(totals.error));
        }
        return out;
      };
}

}  // namespace ms::views
