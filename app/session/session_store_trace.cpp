// A trace's rows: strings, tracks (with each track's longest event, so a time window needs only the
// index on (run, track, ts), and its number of nesting depths), nodes, events in the Trace's order
// with their nesting depths, counters, flows, memory blocks, the time each iteration's ops span and
// per kind and name of event their number and total time (schema 8: the timeline's legend of a trace
// kept in the file reads these few rows, never its events).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "app/session/session_store.h"
#include "app/session/sqlite_db.h"
#include "profiler/analysis/nesting.h"

namespace ms::session::store {

using sql::Stmt;

const char* const kSchemaV3 = R"sql(
ALTER TABLE trace_events ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trace_tracks ADD COLUMN depths INTEGER NOT NULL DEFAULT 0;
CREATE TABLE trace_iterations(run INTEGER, iteration INTEGER, t0 INTEGER, t1 INTEGER, PRIMARY KEY(run, iteration));
)sql";

const char* const kSchemaV8 = R"sql(
CREATE TABLE trace_name_totals(run INTEGER, kind INTEGER, name INTEGER, events INTEGER, dur INTEGER,
  PRIMARY KEY(run, kind, name));
)sql";

namespace {

// Per track, 1 + the depth of its deepest event (0: no events).
std::vector<int64_t> track_depths(const prof::Trace& t, const std::vector<int32_t>& depth) {
  std::vector<int64_t> out(t.tracks.size(), 0);
  for (size_t i = 0; i < t.events.size(); ++i)
    if (t.events[i].track < out.size())
      out[t.events[i].track] = std::max<int64_t>(out[t.events[i].track], depth[i] + 1);
  return out;
}

Status write_iterations(sqlite3* db, const std::string& file, int run, const prof::Trace& t) {
  Stmt it(db, file, "INSERT INTO trace_iterations VALUES(?, ?, ?, ?)");
  for (const prof::IterationSpan& s : prof::op_iteration_spans(t))
    it.bind(1, int64_t{run}).bind(2, int64_t{s.iteration}).bind(3, s.t0).bind(4, s.t1).run();
  return it.status();
}

// Per (kind, name) of the events, their number and total duration, by kind then name (as
// derive_name_totals orders them).
Status write_name_totals(sqlite3* db, const std::string& file, int run, const prof::Trace& t) {
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> totals;
  for (const prof::Event& e : t.events) {
    auto& [n, dur] = totals[(static_cast<uint64_t>(e.kind) << 32) | e.name];
    ++n, dur += e.dur_ns;
  }
  std::vector<uint64_t> keys;
  keys.reserve(totals.size());
  for (const auto& kv : totals) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  Stmt st(db, file, "INSERT INTO trace_name_totals VALUES(?, ?, ?, ?, ?)");
  for (uint64_t k : keys) {
    st.bind(1, int64_t{run}).bind(2, static_cast<int64_t>(k >> 32)).bind(3, static_cast<int64_t>(k & 0xffffffffu));
    st.bind(4, totals[k].first).bind(5, totals[k].second).run();
  }
  return st.status();
}

Status write_trace_tables(sqlite3* db, const std::string& file, int run, const prof::Trace& t,
                          const std::vector<int32_t>& depth) {
  const int64_t r = run;
  Stmt info(db, file, "INSERT INTO trace_info VALUES(?, ?, ?, ?)");
  info.bind(1, r).bind(2, int64_t{t.foreign}).bind(3, static_cast<int64_t>(t.dropped_events));
  info.bind(4, static_cast<int64_t>(t.events.size())).run();
  Stmt meta(db, file, "INSERT INTO trace_meta VALUES(?, ?, ?)");
  for (const auto& [k, v] : t.metadata) meta.bind(1, r).bind(2, k).bind(3, v).run();
  Stmt str(db, file, "INSERT INTO trace_strings VALUES(?, ?, ?)");
  for (size_t i = 0; i < t.strings.size(); ++i)
    str.bind(1, r).bind(2, static_cast<int64_t>(i)).bind(3, t.strings[i]).run();
  std::vector<int64_t> max_dur(t.tracks.size(), 0);
  for (const prof::Event& e : t.events)
    if (e.track < max_dur.size()) max_dur[e.track] = std::max(max_dur[e.track], e.dur_ns);
  const std::vector<int64_t> depths = track_depths(t, depth);
  Stmt tr(db, file, "INSERT INTO trace_tracks VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < t.tracks.size(); ++i) {
    const prof::Track& k = t.tracks[i];
    tr.bind(1, r).bind(2, static_cast<int64_t>(i)).bind(3, std::string_view(prof::track_kind_name(k.kind)));
    tr.bind(4, k.pid).bind(5, k.tid).bind(6, k.process_name).bind(7, k.name).bind(8, k.sort_index).bind(9, max_dur[i]);
    tr.bind(10, depths[i]).run();
  }
  Stmt nd(db, file, "INSERT INTO trace_nodes VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const prof::NodeInfo& n = t.nodes[i];
    const std::string origins = sql::pack_u64(n.origins);
    nd.bind(1, r).bind(2, static_cast<int64_t>(i)).bind(3, static_cast<int64_t>(n.id)).bind(4, n.name).bind(5, n.op);
    nd.bind_blob(6, origins.data(), origins.size()).bind(7, n.shapes).bind(8, n.flops).bind(9, n.bytes).run();
  }
  for (const Stmt* s : {&info, &meta, &str, &tr, &nd}) MS_RETURN_IF_ERROR(s->status());
  return Status::ok();
}

Status write_trace_rows(sqlite3* db, const std::string& file, int run, const prof::Trace& t,
                        const std::vector<int32_t>& depth) {
  const int64_t r = run;
  Stmt ev(db, file, "INSERT INTO trace_events VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < t.events.size(); ++i) {
    const prof::Event& e = t.events[i];
    ev.bind(1, r).bind(2, static_cast<int64_t>(i)).bind(3, int64_t{e.track}).bind(4, e.ts_ns).bind(5, e.dur_ns);
    ev.bind(6, static_cast<int64_t>(e.kind)).bind(7, int64_t{e.node}).bind(8, int64_t{e.iteration});
    ev.bind(9, int64_t{e.name}).bind(10, int64_t{e.category}).bind(11, int64_t{e.impl}).bind(12, int64_t{e.args});
    if (!ev.bind(13, int64_t{depth[i]}).run()) break;
  }
  Stmt co(db, file, "INSERT INTO trace_counters VALUES(?, ?, ?, ?, ?)");
  for (const prof::CounterSample& c : t.counters)
    co.bind(1, r).bind(2, int64_t{c.track}).bind(3, int64_t{c.name}).bind(4, c.ts_ns).bind(5, c.value).run();
  Stmt fl(db, file, "INSERT INTO trace_flows VALUES(?, ?, ?, ?)");
  for (const prof::Flow& f : t.flows)
    fl.bind(1, r).bind(2, static_cast<int64_t>(f.id)).bind(3, int64_t{f.from}).bind(4, int64_t{f.to}).run();
  Stmt bl(db, file, "INSERT INTO trace_blocks VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const prof::MemoryBlock& b : t.blocks) {
    bl.bind(1, r)
        .bind(2, static_cast<int64_t>(b.address))
        .bind(3, static_cast<int64_t>(b.bytes))
        .bind(4, int64_t{b.value});
    bl.bind(5, static_cast<int64_t>(b.producer)).bind(6, b.alloc_ns).bind(7, b.free_ns).bind(8, int64_t{b.iteration});
    bl.bind(9, int64_t{b.arena}).run();
  }
  for (const Stmt* s : {&ev, &co, &fl, &bl}) MS_RETURN_IF_ERROR(s->status());
  return Status::ok();
}

Status damaged(const std::string& file, int run, const std::string& what) {
  return invalid_model(file + ": the trace of run " + std::to_string(run) + " is damaged (" + what + ")");
}

Status read_trace_tables(sqlite3* db, const std::string& file, int run, prof::Trace& t) {
  Stmt meta(db, file, "SELECT key, value FROM trace_meta WHERE run = ? ORDER BY key");
  meta.bind(1, int64_t{run});
  while (meta.step()) t.metadata[meta.text(0)] = meta.text(1);
  Stmt str(db, file, "SELECT id, text FROM trace_strings WHERE run = ? ORDER BY id");
  str.bind(1, int64_t{run});
  t.strings.clear();
  while (str.step()) {
    if (str.i64(0) != static_cast<int64_t>(t.strings.size())) return damaged(file, run, "string ids");
    t.strings.push_back(str.text(1));
  }
  if (t.strings.empty()) t.strings.emplace_back();
  Stmt tr(db, file,
          "SELECT kind, pid, tid, process_name, name, sort_index FROM trace_tracks WHERE run = ? ORDER BY idx");
  tr.bind(1, int64_t{run});
  while (tr.step()) {
    prof::Track k;
    if (!prof::parse_track_kind(tr.text(0), k.kind)) return damaged(file, run, "track kind '" + tr.text(0) + "'");
    k.pid = tr.i64(1), k.tid = tr.i64(2), k.process_name = tr.text(3), k.name = tr.text(4), k.sort_index = tr.i64(5);
    t.tracks.push_back(std::move(k));
  }
  Stmt nd(db, file, "SELECT id, name, op, origins, shapes, flops, bytes FROM trace_nodes WHERE run = ? ORDER BY idx");
  nd.bind(1, int64_t{run});
  while (nd.step()) {
    prof::NodeInfo n;
    n.id = static_cast<uint64_t>(nd.i64(0)), n.name = nd.text(1), n.op = nd.text(2);
    n.origins = sql::unpack_u64(nd.blob(3));
    n.shapes = nd.text(4), n.flops = nd.f64(5), n.bytes = nd.f64(6);
    t.nodes.push_back(std::move(n));
  }
  for (const Stmt* s : {&meta, &str, &tr, &nd}) MS_RETURN_IF_ERROR(s->status());
  return Status::ok();
}

bool valid_str(const prof::Trace& t, int64_t id) { return id >= 0 && id < static_cast<int64_t>(t.strings.size()); }

Status read_trace_events(sqlite3* db, const std::string& file, int run, prof::Trace& t) {
  Stmt ev(db, file,
          "SELECT track, ts, dur, kind, node, iteration, name, category, impl, args FROM trace_events WHERE run = ? "
          "ORDER BY seq");
  ev.bind(1, int64_t{run});
  while (ev.step()) {
    prof::Event e;
    const int64_t track = ev.i64(0), kind = ev.i64(3), node = ev.i64(4);
    if (track < 0 || track >= static_cast<int64_t>(t.tracks.size())) return damaged(file, run, "event track");
    if (kind < 0 || kind > static_cast<int64_t>(prof::EventKind::Foreign)) return damaged(file, run, "event kind");
    if (node < -1 || node >= static_cast<int64_t>(t.nodes.size())) return damaged(file, run, "event node");
    for (int c = 6; c < 10; ++c)
      if (!valid_str(t, ev.i64(c))) return damaged(file, run, "event string");
    e.track = static_cast<uint32_t>(track), e.ts_ns = ev.i64(1), e.dur_ns = ev.i64(2);
    e.kind = static_cast<prof::EventKind>(kind), e.node = static_cast<int32_t>(node), e.iteration = ev.i32(5);
    e.name = static_cast<prof::StrId>(ev.i64(6)), e.category = static_cast<prof::StrId>(ev.i64(7));
    e.impl = static_cast<prof::StrId>(ev.i64(8)), e.args = static_cast<prof::StrId>(ev.i64(9));
    t.events.push_back(e);
  }
  return ev.status();
}

// `flows` false: no flows (a trace whose events stay in the file; flows name events by index).
Status read_trace_rows(sqlite3* db, const std::string& file, int run, prof::Trace& t, bool flows = true) {
  Stmt co(db, file, "SELECT track, name, ts, value FROM trace_counters WHERE run = ? ORDER BY rowid");
  co.bind(1, int64_t{run});
  while (co.step()) {
    if (!valid_str(t, co.i64(1)) || co.i64(0) < 0 || co.i64(0) >= static_cast<int64_t>(t.tracks.size()))
      return damaged(file, run, "counter");
    t.counters.push_back({static_cast<uint32_t>(co.i64(0)), static_cast<prof::StrId>(co.i64(1)), co.i64(2), co.f64(3)});
  }
  Stmt fl(db, file, "SELECT id, from_event, to_event FROM trace_flows WHERE run = ? ORDER BY rowid");
  fl.bind(1, int64_t{flows ? run : -1});
  const auto n_events = static_cast<int64_t>(t.events.size());
  while (fl.step()) {
    if (fl.i64(1) < 0 || fl.i64(1) >= n_events || fl.i64(2) < 0 || fl.i64(2) >= n_events)
      return damaged(file, run, "flow");
    t.flows.push_back(
        {static_cast<uint64_t>(fl.i64(0)), static_cast<uint32_t>(fl.i64(1)), static_cast<uint32_t>(fl.i64(2))});
  }
  Stmt bl(db, file, "SELECT * FROM trace_blocks WHERE run = ? ORDER BY rowid");
  bl.bind(1, int64_t{run});
  while (bl.step()) {
    prof::MemoryBlock b;
    if (!valid_str(t, bl.i64(3))) return damaged(file, run, "memory block value");
    b.address = static_cast<uint64_t>(bl.i64(1)), b.bytes = static_cast<uint64_t>(bl.i64(2));
    b.value = static_cast<prof::StrId>(bl.i64(3)), b.producer = static_cast<uint64_t>(bl.i64(4));
    b.alloc_ns = bl.i64(5), b.free_ns = bl.i64(6), b.iteration = bl.i32(7), b.arena = bl.i64(8) != 0;
    t.blocks.push_back(b);
  }
  for (const Stmt* s : {&co, &fl, &bl}) MS_RETURN_IF_ERROR(s->status());
  return Status::ok();
}

}  // namespace

Status write_trace(sqlite3* db, const std::string& file, int run, const prof::Trace& trace) {
  const std::vector<int32_t> depth = prof::nesting_depths(trace);
  MS_RETURN_IF_ERROR(write_trace_tables(db, file, run, trace, depth));
  MS_RETURN_IF_ERROR(write_trace_rows(db, file, run, trace, depth));
  MS_RETURN_IF_ERROR(write_name_totals(db, file, run, trace));
  return write_iterations(db, file, run, trace);
}

Expected<std::vector<std::pair<std::string, int64_t>>> read_op_type_totals(sqlite3* db, const std::string& file,
                                                                           int run, bool stored) {
  const std::string q =
      std::string("SELECT t.name, s.text, s.id IS NULL, t.dur FROM (SELECT name, SUM(dur) AS dur FROM ") +
      (stored ? "trace_name_totals" : "trace_events") +
      " WHERE run = ?1 AND kind IN (?2, ?3) GROUP BY name) t LEFT JOIN trace_strings s "
      "ON s.run = ?1 AND s.id = t.name";
  Stmt st(db, file, q.c_str());
  st.bind(1, int64_t{run}).bind(2, static_cast<int64_t>(prof::EventKind::Op));
  st.bind(3, static_cast<int64_t>(prof::EventKind::Foreign));
  // By text: names are interned, but a trace may hold a string twice.
  std::map<std::string, int64_t> by_name;
  while (st.step()) {
    if (st.i64(2) != 0) return damaged(file, run, "event name");
    by_name[st.text(1)] += st.i64(3);
  }
  MS_RETURN_IF_ERROR(st.status());
  return std::vector<std::pair<std::string, int64_t>>(by_name.begin(), by_name.end());
}

Status derive_name_totals(sqlite3* db, const std::string& file, int run) {
  Stmt st(db, file,
          "INSERT INTO trace_name_totals SELECT run, kind, name, COUNT(*), SUM(dur) FROM trace_events WHERE run = ? "
          "GROUP BY kind, name ORDER BY kind, name");
  st.bind(1, int64_t{run}).run();
  return st.status();
}

Status derive_trace_rows(sqlite3* db, const std::string& file, int run) {
  MS_ASSIGN_OR_RETURN(prof::TracePtr t, read_trace(db, file, run));
  if (!t) return Status::ok();
  const std::vector<int32_t> depth = prof::nesting_depths(*t);
  std::vector<int64_t> rowids;
  {
    Stmt ids(db, file, "SELECT rowid FROM trace_events WHERE run = ? ORDER BY seq");
    ids.bind(1, int64_t{run});
    while (ids.step()) rowids.push_back(ids.i64(0));
    MS_RETURN_IF_ERROR(ids.status());
  }
  Stmt up(db, file, "UPDATE trace_events SET depth = ? WHERE rowid = ?");
  for (size_t i = 0; i < rowids.size() && i < depth.size(); ++i)
    if (depth[i] != 0) up.bind(1, int64_t{depth[i]}).bind(2, rowids[i]).run();
  const std::vector<int64_t> depths = track_depths(*t, depth);
  Stmt tr(db, file, "UPDATE trace_tracks SET depths = ? WHERE run = ? AND idx = ?");
  for (size_t i = 0; i < depths.size(); ++i)
    tr.bind(1, depths[i]).bind(2, int64_t{run}).bind(3, static_cast<int64_t>(i)).run();
  MS_RETURN_IF_ERROR(up.status());
  MS_RETURN_IF_ERROR(tr.status());
  return write_iterations(db, file, run, *t);
}

Expected<prof::TracePtr> read_trace(sqlite3* db, const std::string& file, int run, bool events) {
  Stmt info(db, file, "SELECT is_foreign, dropped FROM trace_info WHERE run = ?");
  info.bind(1, int64_t{run});
  if (!info.step()) {
    MS_RETURN_IF_ERROR(info.status());
    return prof::TracePtr();
  }
  auto t = std::make_shared<prof::Trace>();
  t->foreign = info.i64(0) != 0;
  t->dropped_events = static_cast<uint64_t>(info.i64(1));
  MS_RETURN_IF_ERROR(read_trace_tables(db, file, run, *t));
  if (events) MS_RETURN_IF_ERROR(read_trace_events(db, file, run, *t));
  MS_RETURN_IF_ERROR(read_trace_rows(db, file, run, *t, events));
  return prof::TracePtr(std::move(t));
}

}  // namespace ms::session::store

namespace ms::session::store {

// The columns of `schema`.`table` ("" when it has no such table).
Expected<std::vector<std::string>> table_columns(sqlite3* db, const std::string& file, const std::string& schema,
                                                 const char* table) {
  const std::string info = "PRAGMA " + schema + ".table_info(" + table + ")";
  Stmt cols(db, file, info.c_str());
  std::vector<std::string> out;
  while (cols.step()) out.push_back(cols.text(1));
  MS_RETURN_IF_ERROR(cols.status());
  return out;
}

Status copy_trace(sqlite3* db, const std::string& file, const std::string& schema, int from_run, int run) {
  static const char* const kTraceTables[] = {"trace_info",   "trace_meta",       "trace_strings",    "trace_tracks",
                                             "trace_nodes",  "trace_events",     "trace_counters",   "trace_flows",
                                             "trace_blocks", "trace_iterations", "trace_name_totals"};
  // A file of an older schema lacks what later schemas derive from its events: derived here (the
  // totals of schema 8 on their own: a file of schema 3 to 7 has the rest).
  bool derive = false, totals = false;
  for (const char* table : kTraceTables) {
    MS_ASSIGN_OR_RETURN(const std::vector<std::string> mine, table_columns(db, file, "main", table));
    MS_ASSIGN_OR_RETURN(const std::vector<std::string> theirs, table_columns(db, file, schema, table));
    std::string list;
    for (const std::string& c : mine)
      if (c != "run" && std::find(theirs.begin(), theirs.end(), c) != theirs.end()) list += ", " + c;
    if (std::string_view(table) == "trace_name_totals" && theirs.empty()) {
      totals = true;
      continue;
    }
    if (theirs.size() < mine.size()) derive = true;
    if (theirs.empty()) continue;
    const std::string q = std::string("INSERT INTO main.") + table + "(run" + list + ") SELECT ?1" + list + " FROM " +
                          schema + "." + table + " WHERE run = ?2 ORDER BY rowid";
    Stmt copy(db, file, q.c_str());
    copy.bind(1, int64_t{run}).bind(2, int64_t{from_run}).run();
    MS_RETURN_IF_ERROR(copy.status());
  }
  if (totals) MS_RETURN_IF_ERROR(derive_name_totals(db, file, run));
  return derive ? derive_trace_rows(db, file, run) : Status::ok();
}

}  // namespace ms::session::store
