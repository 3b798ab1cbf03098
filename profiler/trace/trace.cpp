#include "profiler/trace/trace.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace ms::prof {

const char* track_kind_name(TrackKind k) {
  switch (k) {
    case TrackKind::HostThread: return "host";
    case TrackKind::KernelThread: return "kernel";
    case TrackKind::GpuStream: return "gpu";
    case TrackKind::Memory: return "memory";
    case TrackKind::Other: return "other";
  }
  return "other";
}

bool parse_track_kind(std::string_view s, TrackKind& out) {
  for (TrackKind k :
       {TrackKind::HostThread, TrackKind::KernelThread, TrackKind::GpuStream, TrackKind::Memory, TrackKind::Other})
    if (s == track_kind_name(k)) {
      out = k;
      return true;
    }
  return false;
}

const char* event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::Op: return "op";
    case EventKind::Kernel: return "kernel";
    case EventKind::Run: return "run";
    case EventKind::Foreign: return "foreign";
  }
  return "foreign";
}

double Trace::meta_number(const std::string& key, double fallback) const {
  auto it = metadata.find(key);
  if (it == metadata.end() || it->second.empty()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  return end && *end == 0 ? v : fallback;
}

int64_t Trace::begin_ns() const {
  int64_t b = INT64_MAX;
  for (const auto& e : events) b = std::min(b, e.ts_ns);
  return events.empty() ? 0 : b;
}

int64_t Trace::end_ns() const {
  int64_t e = INT64_MIN;
  for (const auto& ev : events) e = std::max(e, ev.end_ns());
  return events.empty() ? 0 : e;
}

TraceBuilder::TraceBuilder() : t_(std::make_shared<Trace>()) { index_.emplace("", 0); }

StrId TraceBuilder::intern(std::string_view s) {
  if (s.empty()) return 0;
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  const StrId id = static_cast<StrId>(t_->strings.size());
  t_->strings.emplace_back(s);
  index_.emplace(t_->strings.back(), id);
  return id;
}

uint32_t TraceBuilder::add_track(Track t) {
  t_->tracks.push_back(std::move(t));
  return static_cast<uint32_t>(t_->tracks.size() - 1);
}

int32_t TraceBuilder::add_node(NodeInfo n) {
  if (n.id != 0) {
    auto it = node_index_.find(n.id);
    if (it != node_index_.end()) return it->second;
  }
  const int32_t idx = static_cast<int32_t>(t_->nodes.size());
  if (n.id != 0) node_index_.emplace(n.id, idx);
  t_->nodes.push_back(std::move(n));
  return idx;
}

int32_t TraceBuilder::node_index(uint64_t id) const {
  auto it = node_index_.find(id);
  return it == node_index_.end() ? -1 : it->second;
}

uint32_t TraceBuilder::add_event(const Event& e) {
  t_->events.push_back(e);
  return static_cast<uint32_t>(t_->events.size() - 1);
}

TracePtr TraceBuilder::finish() {
  Trace& t = *t_;
  // Events: by track, then start, longer (enclosing) first, then insertion order (stable).
  std::vector<uint32_t> order(t.events.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Event& x = t.events[a];
    const Event& y = t.events[b];
    if (x.track != y.track) return x.track < y.track;
    if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
    return x.dur_ns > y.dur_ns;
  });
  bool sorted = true;
  for (size_t i = 0; i < order.size() && sorted; ++i) sorted = order[i] == i;
  if (!sorted) {
    std::vector<uint32_t> new_index(order.size());
    std::vector<Event> ev(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      ev[i] = t.events[order[i]];
      new_index[order[i]] = static_cast<uint32_t>(i);
    }
    t.events = std::move(ev);
    for (Flow& f : t.flows) {
      if (f.from < new_index.size()) f.from = new_index[f.from];
      if (f.to < new_index.size()) f.to = new_index[f.to];
    }
  }
  std::stable_sort(t.flows.begin(), t.flows.end(), [](const Flow& a, const Flow& b) { return a.id < b.id; });
  std::stable_sort(t.counters.begin(), t.counters.end(), [](const CounterSample& a, const CounterSample& b) {
    if (a.track != b.track) return a.track < b.track;
    return a.ts_ns < b.ts_ns;
  });
  std::stable_sort(t.blocks.begin(), t.blocks.end(),
                   [](const MemoryBlock& a, const MemoryBlock& b) { return a.alloc_ns < b.alloc_ns; });
  TracePtr out = t_;
  t_ = std::make_shared<Trace>();
  index_.clear();
  index_.emplace("", 0);
  node_index_.clear();
  return out;
}

}  // namespace ms::prof
