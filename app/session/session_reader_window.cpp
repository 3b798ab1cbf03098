// SessionReader's queries for a timeline that reads a trace window by window instead of loading it:
// the trace without its events, the time they span, counts and bucketed summaries of a window. A
// track's events are stored in time order and numbered (seq), so the number of events starting in
// [t0, t1) is the difference of the numbers of the first events at or after t1 and t0: two index
// look-ups, however many events lie between.
#include <algorithm>

#include "app/session/session_file.h"
#include "app/session/session_store.h"
#include "app/session/sqlite_db.h"

namespace ms::session {

using sql::Stmt;

namespace {

constexpr const char* kFirstAtOrAfter =
    "SELECT seq, ts, dur, kind, node, iteration, name, category, impl, args, depth FROM trace_events "
    "WHERE run = ?1 AND track = ?2 AND ts >= ?3 ORDER BY ts LIMIT 1";
constexpr const char* kLastOfTrack =
    "SELECT seq, ts, dur FROM trace_events WHERE run = ?1 AND track = ?2 ORDER BY ts DESC LIMIT 1";

// The number of the first event of the track at or after t (the track's end when none), and the
// event itself and its depth when `e` is given (ts_ns -1 when none).
struct SeqSeeker {
  Stmt first, last;
  int64_t end = -1;  // one past the track's last number
  SeqSeeker(sqlite3* db, const std::string& file, int run, uint32_t track)
      : first(db, file, kFirstAtOrAfter), last(db, file, kLastOfTrack) {
    last.bind(1, int64_t{run}).bind(2, int64_t{track});
    end = last.step() ? last.i64(0) + 1 : 0;
    run_ = run, track_ = track;
  }
  int64_t at(int64_t t, prof::Event* e = nullptr, int32_t* depth = nullptr) {
    first.reset();
    first.bind(1, int64_t{run_}).bind(2, int64_t{track_}).bind(3, t);
    if (!first.step()) {
      if (e) e->ts_ns = -1;
      return end;
    }
    if (e) {
      e->track = track_, e->ts_ns = first.i64(1), e->dur_ns = first.i64(2);
      e->kind = static_cast<prof::EventKind>(first.i64(3)), e->node = first.i32(4), e->iteration = first.i32(5);
      e->name = static_cast<prof::StrId>(first.i64(6)), e->category = static_cast<prof::StrId>(first.i64(7));
      e->impl = static_cast<prof::StrId>(first.i64(8)), e->args = static_cast<prof::StrId>(first.i64(9));
      if (depth) *depth = first.i32(10);
    }
    return first.i64(0);
  }
  Status status() const { return first.status().is_ok() ? last.status() : first.status(); }

 private:
  int run_ = 0;
  uint32_t track_ = 0;
};

}  // namespace

Expected<prof::TracePtr> SessionReader::trace_skeleton(int run) const {
  return store::read_trace(db_, path_, run, /*events=*/false);
}

Expected<prof::TracePtr> SessionReader::trace(int run) const { return store::read_trace(db_, path_, run); }

Expected<std::pair<int64_t, int64_t>> SessionReader::trace_span(int run) const {
  Stmt tracks(db_, path_, "SELECT idx FROM trace_tracks WHERE run = ? ORDER BY idx");
  tracks.bind(1, int64_t{run});
  std::vector<uint32_t> ids;
  while (tracks.step()) ids.push_back(static_cast<uint32_t>(tracks.i64(0)));
  MS_RETURN_IF_ERROR(tracks.status());
  int64_t begin = INT64_MAX, end = INT64_MIN;
  for (uint32_t track : ids) {
    SeqSeeker seek(db_, path_, run, track);
    prof::Event e;
    seek.at(INT64_MIN, &e);
    MS_RETURN_IF_ERROR(seek.status());
    if (e.ts_ns < 0 && seek.end == 0) continue;
    begin = std::min(begin, e.ts_ns);
    // The last event by start ends last but for an earlier, longer one: bounded by the track's
    // longest event, which the window query allows for anyway.
    end = std::max(end, seek.last.i64(1) + seek.last.i64(2));
  }
  if (begin > end) return std::make_pair(int64_t{0}, int64_t{0});
  return std::make_pair(begin, end);
}

Expected<int64_t> SessionReader::count_in_window(int run, uint32_t track, int64_t t0, int64_t t1) const {
  if (t1 <= t0) return int64_t{0};
  SeqSeeker seek(db_, path_, run, track);
  const int64_t a = seek.at(t0), b = seek.at(t1);
  MS_RETURN_IF_ERROR(seek.status());
  return std::max<int64_t>(0, b - a);
}

Expected<std::vector<WindowBucket>> SessionReader::window_summary(int run, uint32_t track, int64_t t0, int64_t t1,
                                                                  int buckets) const {
  std::vector<WindowBucket> out;
  if (t1 <= t0 || buckets <= 0) return out;
  SeqSeeker seek(db_, path_, run, track);
  const double step = static_cast<double>(t1 - t0) / buckets;
  prof::Event first;
  int32_t first_depth = 0;
  int64_t seq = seek.at(t0, &first, &first_depth);
  for (int k = 0; k < buckets; ++k) {
    WindowBucket b;
    b.t0 = t0 + static_cast<int64_t>(step * k);
    b.t1 = k + 1 == buckets ? t1 : t0 + static_cast<int64_t>(step * (k + 1));
    // The next bucket's first event; skip ahead when this one's first starts past the bucket.
    prof::Event next;
    int32_t next_depth = 0;
    const bool past = first.ts_ns >= b.t1 || first.ts_ns < 0;
    const int64_t next_seq = past ? seq : seek.at(b.t1, &next, &next_depth);
    if (past) next = first, next_depth = first_depth;
    b.count = std::max<int64_t>(0, next_seq - seq);
    if (b.count > 0)
      b.first = first, b.first_depth = first_depth;
    else
      b.first.ts_ns = -1;
    out.push_back(b);
    seq = next_seq;
    first = next;
    first_depth = next_depth;
  }
  MS_RETURN_IF_ERROR(seek.status());
  return out;
}

Expected<std::vector<int>> SessionReader::track_depths(int run) const {
  Stmt st(db_, path_, "SELECT idx, depths FROM trace_tracks WHERE run = ? ORDER BY idx");
  st.bind(1, int64_t{run});
  std::vector<int> out;
  while (st.step()) {
    if (st.i64(0) != static_cast<int64_t>(out.size()))
      return invalid_model(path_ + ": the trace of run " + std::to_string(run) + " is damaged (track ids)");
    out.push_back(std::max(0, st.i32(1)));
  }
  MS_RETURN_IF_ERROR(st.status());
  return out;
}

Expected<prof::TracePtr> SessionReader::trace_first_iterations(int run) const {
  MS_ASSIGN_OR_RETURN(prof::TracePtr skeleton, trace_skeleton(run));
  if (!skeleton) return skeleton;
  auto t = std::make_shared<prof::Trace>(*skeleton);
  // The first iteration with ops, and the first one with memory blocks.
  std::vector<int32_t> wanted;
  Stmt first(db_, path_, "SELECT iteration FROM trace_iterations WHERE run = ? ORDER BY iteration LIMIT 1");
  first.bind(1, int64_t{run});
  if (first.step()) wanted.push_back(first.i32(0));
  MS_RETURN_IF_ERROR(first.status());
  if (!t->blocks.empty()) {
    int32_t iter = t->blocks.front().iteration;
    for (const prof::MemoryBlock& b : t->blocks) iter = std::min(iter, b.iteration);
    if (wanted.empty() || wanted[0] != iter) wanted.push_back(iter);
  }
  Stmt span(db_, path_, "SELECT t0, t1 FROM trace_iterations WHERE run = ? AND iteration = ?");
  for (int32_t iter : wanted) {
    span.reset();
    span.bind(1, int64_t{run}).bind(2, int64_t{iter});
    if (!span.step()) {
      MS_RETURN_IF_ERROR(span.status());
      continue;
    }
    // Widened by 1 ns: an op of no duration at either end overlaps the window too.
    const int64_t t0 = span.i64(0) - 1, t1 = span.i64(1) + 1;
    for (uint32_t track = 0; track < t->tracks.size(); ++track) {
      MS_ASSIGN_OR_RETURN(std::vector<prof::Event> events, events_in_window(run, track, t0, t1));
      for (const prof::Event& e : events)
        if (e.kind == prof::EventKind::Op && e.iteration == iter) t->events.push_back(e);
    }
  }
  // By track and start, as the whole trace has them (an iteration's events after the other's).
  std::stable_sort(t->events.begin(), t->events.end(), [](const prof::Event& a, const prof::Event& b) {
    return a.track != b.track ? a.track < b.track : a.ts_ns < b.ts_ns;
  });
  return prof::TracePtr(std::move(t));
}

}  // namespace ms::session
