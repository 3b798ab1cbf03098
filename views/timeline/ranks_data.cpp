#include "views/timeline/ranks_data.h"

#include <algorithm>
#include <regex>
#include <tuple>

namespace ms::views {

namespace {

int64_t int_after(const std::string& text, const std::regex& re, int64_t fallback) {
  std::smatch m;
  return std::regex_search(text, m, re) ? std::stoll(m[1].str()) : fallback;
}

}  // namespace

Expected<RankLane> rank_lane(const prof::Trace& t, int fallback_rank, const std::string& what) {
  static const std::regex kRank(R"(rank (\d+) of (\d+))"), kSeq(R"(#(\d+))"), kStep(R"(step (\d+))");
  static const std::regex kBytes(R"("bytes"\s*:\s*(\d+))");
  RankLane lane;
  lane.rank = fallback_rank;
  int64_t steps_track = -1, coll_track = -1;
  for (size_t i = 0; i < t.tracks.size(); ++i) {
    if (t.tracks[i].name == "steps") steps_track = static_cast<int64_t>(i);
    if (t.tracks[i].name == "collectives") coll_track = static_cast<int64_t>(i);
    std::smatch m;
    if (std::regex_search(t.tracks[i].process_name, m, kRank)) {
      lane.rank = std::stoi(m[1].str());
      lane.world_size = std::stoi(m[2].str());
      lane.label = t.tracks[i].process_name;
      lane.group = lane.label.substr(0, static_cast<size_t>(m.position(0)));
      while (!lane.group.empty() && lane.group.back() == ' ') lane.group.pop_back();
    }
  }
  if (steps_track < 0)
    return invalid_argument(what + ": no 'steps' track (not a training trace: train --profile writes them)");
  if (lane.label.empty()) lane.label = "rank " + std::to_string(lane.rank);
  // Steps are "step N"; the steps track also holds the Graph-mode trace + compile before them.
  auto is_step = [&](const prof::Event& e) {
    return e.track == steps_track && int_after(std::string(t.str(e.name)), kStep, 0) > 0;
  };
  int64_t origin = INT64_MAX;
  for (const prof::Event& e : t.events)
    if (is_step(e)) origin = std::min(origin, e.ts_ns);
  if (origin == INT64_MAX) origin = 0;
  std::vector<double> step_ms;
  for (const prof::Event& e : t.events) {
    const std::string name(t.str(e.name));
    if (is_step(e)) {
      lane.steps.push_back({e.ts_ns - origin, e.end_ns() - origin, static_cast<int>(int_after(name, kStep, 0))});
      step_ms.push_back(static_cast<double>(e.dur_ns) / 1e6);
    } else if (e.track == coll_track) {
      RankCollective c;
      c.sequence = int_after(name, kSeq, -1);
      c.t0 = e.ts_ns - origin, c.t1 = e.end_ns() - origin;
      c.bytes = static_cast<uint64_t>(int_after(std::string(t.str(e.args)), kBytes, 0));
      lane.collectives.push_back(c);
    }
  }
  std::sort(lane.steps.begin(), lane.steps.end(), [](const RankSpan& a, const RankSpan& b) { return a.t0 < b.t0; });
  double inside = 0;
  for (RankCollective& c : lane.collectives) {
    inside += static_cast<double>(c.t1 - c.t0) / 1e6;
    for (const RankSpan& s : lane.steps)
      if (c.t0 >= s.t0 && c.t0 < s.t1) c.step = s.step;
  }
  if (!step_ms.empty()) {
    std::sort(step_ms.begin(), step_ms.end());
    lane.median_step_ms = step_ms[step_ms.size() / 2];
    lane.allreduce_ms_per_step = inside / static_cast<double>(step_ms.size());
  }
  return lane;
}

RanksData ranks_data(std::vector<RankLane> lanes) {
  RanksData d;
  std::sort(lanes.begin(), lanes.end(),
            [](const RankLane& a, const RankLane& b) { return std::tie(a.group, a.rank) < std::tie(b.group, b.rank); });
  d.lanes = std::move(lanes);
  using Key = std::pair<std::string, int64_t>;
  std::map<Key, std::pair<int64_t, int64_t>> ends;  // (group, sequence) -> (min end, max end)
  std::map<Key, std::pair<int64_t, int>> starts;    // (group, sequence) -> (latest start, its rank)
  for (const RankLane& l : d.lanes) {
    for (const RankSpan& s : l.steps) d.span_ns = std::max(d.span_ns, s.t1);
    for (const RankCollective& c : l.collectives) {
      d.span_ns = std::max(d.span_ns, c.t1);
      const Key key{l.group, c.sequence};
      auto [e, fresh] = ends.emplace(key, std::make_pair(c.t1, c.t1));
      if (!fresh) e->second = {std::min(e->second.first, c.t1), std::max(e->second.second, c.t1)};
      auto [s, first] = starts.emplace(key, std::make_pair(c.t0, l.rank));
      if (!first && c.t0 > s->second.first) s->second = {c.t0, l.rank};
    }
  }
  std::map<int, int> last_count;
  for (const auto& [seq, e] : ends) d.end_spread_ns[seq] = e.second - e.first;
  for (const auto& [seq, s] : starts) {
    d.last_to_start[seq] = s.second;
    ++last_count[s.second];
  }
  if (d.lanes.size() >= 2 && !last_count.empty())
    d.straggler = std::max_element(last_count.begin(), last_count.end(), [](const auto& a, const auto& b) {
                    return a.second < b.second;
                  })->first;
  return d;
}

}  // namespace ms::views
