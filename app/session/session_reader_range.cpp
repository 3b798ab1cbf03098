// SessionReader::range_totals: the timeline's range statistics of a trace kept in the file, counted
// by SQLite rather than from the summary the timeline draws (whose items stand for many events under
// their first one's name). Per track, the events that can reach into [t0, t1) start in
// [t0 - the track's longest event, t1): one range of the index on (run, track, ts), aggregated by
// name with each event's time clipped to the range. A range covering the whole trace needs no scan:
// the file's totals per kind and name (schema 8) are its answer.
#include <algorithm>
#include <map>

#include "app/session/session_file.h"
#include "app/session/session_store.h"
#include "app/session/sqlite_db.h"

namespace ms::session {

using sql::Stmt;

namespace {

int stop_when_cancelled(void* cancelled) { return (*static_cast<const std::function<bool()>*>(cancelled))() ? 1 : 0; }

struct TrackBounds {
  int64_t idx = 0, max_dur = 0;
  int64_t first = 0, last = 0;  // the first and last start (no events: first > last)
};

// Each track's longest event and first and last start (two index look-ups a track).
Expected<std::vector<TrackBounds>> track_bounds(sqlite3* db, const std::string& file, int run) {
  Stmt tracks(db, file, "SELECT idx, max_dur FROM trace_tracks WHERE run = ? ORDER BY idx");
  tracks.bind(1, int64_t{run});
  std::vector<TrackBounds> out;
  while (tracks.step()) out.push_back({tracks.i64(0), std::max<int64_t>(0, tracks.i64(1)), 1, 0});
  MS_RETURN_IF_ERROR(tracks.status());
  // Two subqueries: SQLite answers a lone MIN or MAX from the index, both in one SELECT by a scan.
  Stmt ends(db, file,
            "SELECT (SELECT MIN(ts) FROM trace_events WHERE run = ?1 AND track = ?2), "
            "(SELECT MAX(ts) FROM trace_events WHERE run = ?1 AND track = ?2)");
  for (TrackBounds& t : out) {
    ends.reset();
    ends.bind(1, int64_t{run}).bind(2, t.idx);
    if (ends.step() && ends.type(0) != SQLITE_NULL) t.first = ends.i64(0), t.last = ends.i64(1);
    MS_RETURN_IF_ERROR(ends.status());
  }
  return out;
}

// Whether [t0, t1) holds every event whole: it starts at or before the first, every start lies
// before t1 and every end at or before it (looked for among the events that could end later, those
// starting less than the track's longest event before t1, when that event does not settle it).
Expected<bool> covers_trace(sqlite3* db, const std::string& file, int run, const std::vector<TrackBounds>& tracks,
                            int64_t t0, int64_t t1) {
  Stmt end(db, file, "SELECT MAX(ts + dur) FROM trace_events WHERE run = ? AND track = ? AND ts > ?");
  for (const TrackBounds& t : tracks) {
    if (t.first > t.last) continue;
    if (t.first < t0 || t.last >= t1) return false;
    if (t.last + t.max_dur <= t1) continue;
    end.reset();
    end.bind(1, int64_t{run}).bind(2, t.idx).bind(3, t1 - t.max_dur);
    const bool later = end.step() && end.type(0) != SQLITE_NULL && end.i64(0) > t1;
    MS_RETURN_IF_ERROR(end.status());
    if (later) return false;
  }
  return true;
}

}  // namespace

Expected<std::vector<RangeNameTotal>> SessionReader::range_totals(int run, int64_t t0, int64_t t1,
                                                                  const std::function<bool()>& cancelled) const {
  if (t1 < t0) std::swap(t0, t1);
  MS_ASSIGN_OR_RETURN(store::Connection own, store::open_read_only(path_));
  sqlite3* db = own.get();
  if (cancelled)
    sqlite3_progress_handler(db, 4000, &stop_when_cancelled, const_cast<std::function<bool()>*>(&cancelled));
  // An older file opened through a migration in memory may lack the stored totals on disk.
  Stmt has(db, path_, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'trace_name_totals'");
  const bool stored = has.step() && has.i64(0) > 0;
  MS_RETURN_IF_ERROR(has.status());
  // Which events count: a trace's Op events, or where it has none, all but its Run events.
  const char* has_ops_sql = stored ? "SELECT 1 FROM trace_name_totals WHERE run = ? AND kind = ? LIMIT 1"
                                   : "SELECT 1 FROM trace_events WHERE run = ? AND kind = ? LIMIT 1";
  Stmt ops(db, path_, has_ops_sql);
  ops.bind(1, int64_t{run}).bind(2, static_cast<int64_t>(prof::EventKind::Op));
  const int64_t has_ops = ops.step() ? 1 : 0;
  MS_RETURN_IF_ERROR(ops.status());
  const auto op = static_cast<int64_t>(prof::EventKind::Op), run_kind = static_cast<int64_t>(prof::EventKind::Run);
  MS_ASSIGN_OR_RETURN(const std::vector<TrackBounds> tracks, track_bounds(db, path_, run));
  std::map<int64_t, RangeNameTotal> by_name;
  auto add = [&](Stmt& st) {
    while (st.step()) {
      RangeNameTotal& n = by_name[st.i64(0)];
      n.name = st.i64(0), n.count += st.i64(1), n.ns += st.i64(2);
    }
    return st.status();
  };
  MS_ASSIGN_OR_RETURN(const bool whole, covers_trace(db, path_, run, tracks, t0, t1));
  if (stored && whole) {
    Stmt st(db, path_,
            "SELECT name, SUM(events), SUM(dur) FROM trace_name_totals WHERE run = ?1 "
            "AND (kind = ?2 OR (?3 = 0 AND kind <> ?4)) GROUP BY name");
    st.bind(1, int64_t{run}).bind(2, op).bind(3, has_ops).bind(4, run_kind);
    MS_RETURN_IF_ERROR(add(st));
  } else {
    // An event counts when it overlaps the range, its time clipped to it; one of no duration when it
    // starts in it (views/timeline/timeline_source.h, range_time).
    Stmt st(db, path_,
            "SELECT name, COUNT(*), SUM(MIN(ts + dur, ?4) - MAX(ts, ?3)) FROM trace_events "
            "WHERE run = ?1 AND track = ?2 AND ts >= ?5 AND ts < ?4 "
            "AND ((dur > 0 AND ts + dur > ?3) OR (dur = 0 AND ts >= ?3)) "
            "AND (kind = ?6 OR (?7 = 0 AND kind <> ?8)) GROUP BY name");
    for (const TrackBounds& t : tracks) {
      if (t.first > t.last || t.first >= t1 || t.last + t.max_dur < t0) continue;
      st.reset();
      st.bind(1, int64_t{run}).bind(2, t.idx).bind(3, t0).bind(4, t1).bind(5, t0 - t.max_dur);
      st.bind(6, op).bind(7, has_ops).bind(8, run_kind);
      MS_RETURN_IF_ERROR(add(st));
    }
  }
  std::vector<RangeNameTotal> out;
  out.reserve(by_name.size());
  for (auto& [_, n] : by_name) out.push_back(n);
  return out;
}

}  // namespace ms::session
