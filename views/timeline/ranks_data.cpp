#include "views/timeline/ranks_data.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <set>
#include <tuple>

namespace ms::views {

namespace {

int64_t int_after(const std::string& text, const std::regex& re, int64_t fallback) {
  std::smatch m;
  return std::regex_search(text, m, re) ? std::stoll(m[1].str()) : fallback;
}

// The whole of `text` as a number (false, and `out` untouched, for anything else).
bool number_of(const std::string& text, double& out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

void shift_lane(RankLane& lane, int64_t origin) {
  lane.compile.t0 -= origin, lane.compile.t1 -= origin;
  for (RankSpan& s : lane.steps) s.t0 -= origin, s.t1 -= origin;
  for (RankCollective& c : lane.collectives) c.t0 -= origin, c.t1 -= origin;
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
  bool compiled = false;
  for (const prof::Event& e : t.events) {
    const std::string name(t.str(e.name));
    if (e.track == steps_track) {
      const int step = static_cast<int>(int_after(name, kStep, 0));
      if (step > 0) {
        lane.steps.push_back({e.ts_ns, e.end_ns(), step});
      } else if (name.find("compile") != std::string::npos) {
        lane.compile = compiled ? RankSpan{std::min(lane.compile.t0, e.ts_ns), std::max(lane.compile.t1, e.end_ns()), 0}
                                : RankSpan{e.ts_ns, e.end_ns(), 0};
        compiled = true;
      }
    } else if (e.track == coll_track) {
      RankCollective c;
      c.sequence = int_after(name, kSeq, -1);
      c.t0 = e.ts_ns, c.t1 = e.end_ns();
      c.bytes = static_cast<uint64_t>(int_after(std::string(t.str(e.args)), kBytes, 0));
      lane.collectives.push_back(c);
    }
  }
  std::sort(lane.steps.begin(), lane.steps.end(), [](const RankSpan& a, const RankSpan& b) { return a.t0 < b.t0; });
  for (RankCollective& c : lane.collectives)
    for (const RankSpan& s : lane.steps)
      if (c.t0 >= s.t0 && c.t0 < s.t1) c.step = s.step;
  // Time 0 is step 2's start: step 1 runs right after the compile (cold), so the ranks line up
  // from the next one.
  const size_t at = lane.steps.size() > 1 ? 1 : 0;
  const int64_t origin = lane.steps.empty() ? (compiled ? lane.compile.t1 : 0) : lane.steps[at].t0;
  lane.aligned_step = lane.steps.empty() ? 1 : lane.steps[at].step;
  shift_lane(lane, origin);
  if (!lane.steps.empty()) {
    // Step 1 is warm-up in both modes (Graph mode's first run of the compiled step, PyNative's
    // first allocations and primitive creation): the figures cover the steps after it, and
    // warmup_step_ms says what it took.
    lane.first_step = lane.steps.front().step + (lane.steps.size() > 1 ? 1 : 0);
    lane.last_step = lane.steps.back().step;
  }
  measure_lane(lane);
  return lane;
}

RankStepValues rank_step_values(const prof::Trace& t) {
  static const std::regex kStep(R"(^step (\d+)$)"), kLoss(R"("loss"\s*:\s*([-+0-9.eE]+))"),
      kLr(R"("lr"\s*:\s*([-+0-9.eE]+))");
  int64_t steps_track = -1;
  for (size_t i = 0; i < t.tracks.size() && steps_track < 0; ++i)
    if (t.tracks[i].name == "steps") steps_track = static_cast<int64_t>(i);
  std::map<double, std::pair<double, double>> by_step;  // step -> (loss, lr)
  for (const prof::Event& e : t.events) {
    if (e.track != steps_track) continue;
    const std::string name(t.str(e.name)), args(t.str(e.args));
    std::smatch step, loss, lr;
    double n = 0, l = 0, rate = 0;
    if (!std::regex_search(name, step, kStep) || !std::regex_search(args, loss, kLoss) ||
        !number_of(step[1].str(), n) || !number_of(loss[1].str(), l))
      continue;
    if (std::regex_search(args, lr, kLr)) number_of(lr[1].str(), rate);
    by_step[n] = {l, rate};
  }
  RankStepValues v;
  // Steps 1..N without a gap; a trace missing one is read up to it.
  for (double s = 1; by_step.count(s); ++s) {
    v.losses.push_back(by_step[s].first);
    v.lrs.push_back(by_step[s].second);
  }
  return v;
}

void measure_lane(RankLane& lane) {
  std::vector<double> step_ms;
  for (const RankSpan& s : lane.steps)
    if (s.step >= lane.first_step && s.step <= lane.last_step)
      step_ms.push_back(static_cast<double>(s.t1 - s.t0) / 1e6);
  double inside = 0;
  for (const RankCollective& c : lane.collectives)
    if (c.step >= lane.first_step && c.step <= lane.last_step) inside += static_cast<double>(c.t1 - c.t0) / 1e6;
  lane.median_step_ms = lane.allreduce_ms_per_step = 0;
  if (step_ms.empty()) return;
  std::sort(step_ms.begin(), step_ms.end());
  lane.median_step_ms = step_ms[step_ms.size() / 2];
  lane.allreduce_ms_per_step = inside / static_cast<double>(step_ms.size());
}

int RanksData::straggler(const std::string& group) const {
  auto it = stragglers.find(group);
  return it == stragglers.end() ? -1 : it->second;
}

RanksData ranks_data(std::vector<RankLane> lanes) {
  RanksData d;
  std::sort(lanes.begin(), lanes.end(),
            [](const RankLane& a, const RankLane& b) { return std::tie(a.group, a.rank) < std::tie(b.group, b.rank); });
  d.lanes = std::move(lanes);
  using Key = std::pair<std::string, int64_t>;
  std::map<Key, std::pair<int64_t, int64_t>> ends;  // (group, sequence) -> (min end, max end)
  std::map<Key, std::pair<int64_t, int>> starts;    // (group, sequence) -> (latest start, its rank)
  std::set<Key> measured;                           // the collectives of the steps the figures cover
  std::map<std::string, int> ranks_in;              // group -> lanes
  for (const RankLane& l : d.lanes) {
    ++ranks_in[l.group];
    if (l.compile.t1 > l.compile.t0) d.start_ns = std::min(d.start_ns, l.compile.t0);
    for (const RankSpan& s : l.steps) {
      d.start_ns = std::min(d.start_ns, s.t0);
      d.span_ns = std::max(d.span_ns, s.t1);
    }
    for (const RankCollective& c : l.collectives) {
      d.start_ns = std::min(d.start_ns, c.t0);
      d.span_ns = std::max(d.span_ns, c.t1);
      const Key key{l.group, c.sequence};
      if (c.step >= l.first_step && c.step <= l.last_step) measured.insert(key);
      auto [e, fresh] = ends.emplace(key, std::make_pair(c.t1, c.t1));
      if (!fresh) e->second = {std::min(e->second.first, c.t1), std::max(e->second.second, c.t1)};
      auto [s, first] = starts.emplace(key, std::make_pair(c.t0, l.rank));
      if (!first && c.t0 > s->second.first) s->second = {c.t0, l.rank};
    }
  }
  std::map<std::string, std::map<int, int>> last_count;  // group -> rank -> times last
  for (const auto& [key, e] : ends) d.end_spread_ns[key] = e.second - e.first;
  for (const auto& [key, s] : starts) {
    d.last_to_start[key] = s.second;
    if (measured.count(key)) ++last_count[key.first][s.second];
  }
  for (const auto& [group, counts] : last_count)
    if (ranks_in[group] >= 2)
      d.stragglers[group] = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                              return a.second < b.second;
                            })->first;
  return d;
}

}  // namespace ms::views
