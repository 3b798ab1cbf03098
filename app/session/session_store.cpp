#include "app/session/session_store.h"

#include <map>

#include "app/session/sqlite_db.h"
#include "engine/ir/graph.h"

namespace ms::session::store {

using sql::Stmt;

const char* const kSchema = R"sql(
CREATE TABLE schema_version(version INTEGER NOT NULL, written_by TEXT NOT NULL);
CREATE TABLE environment(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ui_state(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE model(source TEXT NOT NULL, kind TEXT NOT NULL, bytes BLOB, hash TEXT, size INTEGER);
CREATE TABLE runs(id INTEGER PRIMARY KEY, label TEXT, mode TEXT, device TEXT, jit_level TEXT, threads INTEGER,
  iterations INTEGER, warmup INTEGER, batch INTEGER, disabled_passes TEXT, out_mode TEXT, backend TEXT, note TEXT,
  median_ms REAL, min_ms REAL, mean_ms REAL, compile_ms REAL, peak_bytes INTEGER, kernels INTEGER,
  gpu_records INTEGER, gpu_note TEXT);
CREATE TABLE run_outputs(run INTEGER, idx INTEGER, text TEXT, PRIMARY KEY(run, idx));
CREATE TABLE snapshots(id INTEGER PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE passes(run INTEGER, idx INTEGER, pass TEXT, description TEXT, ran INTEGER, changed INTEGER,
  nodes_after INTEGER, added INTEGER, removed INTEGER, fused INTEGER, ms REAL, snapshot INTEGER,
  PRIMARY KEY(run, idx));
CREATE TABLE memory_plans(run INTEGER PRIMARY KEY, arena_bytes INTEGER, lower_bound INTEGER, naive_bytes INTEGER,
  live BLOB);
CREATE TABLE memory_slots(run INTEGER, idx INTEGER, value TEXT, producer INTEGER, offset INTEGER, bytes INTEGER,
  first_step INTEGER, last_step INTEGER, reuses TEXT, thread INTEGER, within INTEGER, within_offset INTEGER,
  PRIMARY KEY(run, idx));
CREATE TABLE comparisons(idx INTEGER PRIMARY KEY, name TEXT, run_a INTEGER, run_b INTEGER, report TEXT);
CREATE TABLE training(idx INTEGER PRIMARY KEY, name TEXT, mode TEXT, losses BLOB, lrs BLOB, step_ms BLOB,
  report TEXT);
CREATE TABLE trace_info(run INTEGER PRIMARY KEY, is_foreign INTEGER, dropped INTEGER, events INTEGER);
CREATE TABLE trace_meta(run INTEGER, key TEXT, value TEXT, PRIMARY KEY(run, key));
CREATE TABLE trace_strings(run INTEGER, id INTEGER, text TEXT, PRIMARY KEY(run, id));
CREATE TABLE trace_tracks(run INTEGER, idx INTEGER, kind TEXT, pid INTEGER, tid INTEGER, process_name TEXT,
  name TEXT, sort_index INTEGER, max_dur INTEGER, PRIMARY KEY(run, idx));
CREATE TABLE trace_nodes(run INTEGER, idx INTEGER, id INTEGER, name TEXT, op TEXT, origins BLOB, shapes TEXT,
  flops REAL, bytes REAL, PRIMARY KEY(run, idx));
CREATE TABLE trace_events(run INTEGER, seq INTEGER, track INTEGER, ts INTEGER, dur INTEGER, kind INTEGER,
  node INTEGER, iteration INTEGER, name INTEGER, category INTEGER, impl INTEGER, args INTEGER);
CREATE INDEX trace_events_window ON trace_events(run, track, ts);
CREATE TABLE trace_counters(run INTEGER, track INTEGER, name INTEGER, ts INTEGER, value REAL);
CREATE TABLE trace_flows(run INTEGER, id INTEGER, from_event INTEGER, to_event INTEGER);
CREATE TABLE trace_blocks(run INTEGER, address INTEGER, bytes INTEGER, value INTEGER, producer INTEGER,
  alloc_ns INTEGER, free_ns INTEGER, iteration INTEGER, arena INTEGER);
CREATE TABLE digests(tbl TEXT PRIMARY KEY, rows INTEGER NOT NULL, hash TEXT NOT NULL);
)sql";

const std::vector<std::string>& content_tables(int version) {
  static const std::vector<std::string> kTables1 = {
      "schema_version", "environment", "ui_state",      "model",        "runs",        "run_outputs",
      "snapshots",      "passes",      "memory_plans",  "memory_slots", "comparisons", "training",
      "trace_info",     "trace_meta",  "trace_strings", "trace_tracks", "trace_nodes", "trace_events",
      "trace_counters", "trace_flows", "trace_blocks"};
  static const std::vector<std::string> kTables2 = [] {
    std::vector<std::string> t = kTables1;
    t.insert(t.end(), {"run_details", "run_fallbacks", "numerics", "numerics_values"});
    return t;
  }();
  static const std::vector<std::string> kTables3 = [] {
    std::vector<std::string> t = kTables2;
    t.push_back("trace_iterations");
    return t;
  }();
  static const std::vector<std::string> kTables4 = [] {
    std::vector<std::string> t = kTables3;
    t.push_back("run_fallback_nodes");
    return t;
  }();
  static const std::vector<std::string> kTables5 = [] {
    std::vector<std::string> t = kTables4;
    t.insert(t.end(), {"rank_lanes", "rank_steps", "rank_collectives"});
    return t;
  }();
  static const std::vector<std::string> kTables6 = [] {
    std::vector<std::string> t = kTables5;
    t.insert(t.end(), {"snapshot_constants", "snapshot_values", "snapshot_constant_budget"});
    return t;
  }();
  static const std::vector<std::string> kTables7 = [] {
    std::vector<std::string> t = kTables6;
    t.push_back("snapshot_nested_values");
    return t;
  }();
  static const std::vector<std::string> kTables8 = [] {
    std::vector<std::string> t = kTables7;
    t.push_back("trace_name_totals");
    return t;
  }();
  return version <= 1   ? kTables1
         : version == 2 ? kTables2
         : version == 3 ? kTables3
         : version == 4 ? kTables4
         : version == 5 ? kTables5
         : version == 6 ? kTables6
         : version == 7 ? kTables7
                        : kTables8;
}

namespace {

Status write_key_values(sqlite3* db, const std::string& file, const char* table,
                        const std::map<std::string, std::string>& kv) {
  const std::string q = std::string("INSERT INTO ") + table + "(key, value) VALUES(?, ?)";
  Stmt st(db, file, q.c_str());
  for (const auto& [k, v] : kv) st.bind(1, k).bind(2, v).run();
  return st.status();
}

Status read_key_values(sqlite3* db, const std::string& file, const char* table,
                       std::map<std::string, std::string>& kv) {
  const std::string q = std::string("SELECT key, value FROM ") + table + " ORDER BY key";
  Stmt st(db, file, q.c_str());
  while (st.step()) kv[st.text(0)] = st.text(1);
  return st.status();
}

Status write_model(sqlite3* db, const std::string& file, const SessionModel& m) {
  if (m.kind.empty()) return Status::ok();
  Stmt st(db, file, "INSERT INTO model VALUES(?, ?, ?, ?, ?)");
  st.bind(1, m.source).bind(2, m.kind).bind_blob(3, m.bytes.data(), m.bytes.size()).bind(4, m.hash);
  st.bind(5, static_cast<int64_t>(m.size)).run();
  return st.status();
}

// The row must describe a model the app can open: errors name the file and the field.
Status check_model(const std::string& file, SessionModel& m) {
  // What a save without a model wrote before such saves left the table empty: a spec of nothing.
  if (m.kind == "spec" && m.source.empty() && m.bytes.empty()) {
    m = SessionModel{};
    return Status::ok();
  }
  if (m.kind != "embedded" && m.kind != "path" && m.kind != "spec")
    return invalid_model(file + ": model.kind is '" + m.kind + "', not embedded, path or spec");
  if (m.source.empty()) return invalid_model(file + ": model.source is empty (a " + m.kind + " model)");
  if (m.kind == "embedded" && m.bytes.empty())
    return invalid_model(file + ": model.bytes is empty (an embedded model)");
  return Status::ok();
}

Status read_model(sqlite3* db, const std::string& file, SessionModel& m) {
  Stmt st(db, file, "SELECT source, kind, bytes, hash, size FROM model");
  if (st.step()) {
    m.source = st.text(0);
    m.kind = st.text(1);
    m.bytes = st.blob(2);
    m.hash = st.text(3);
    m.size = static_cast<uint64_t>(st.i64(4));
    MS_RETURN_IF_ERROR(st.status());
    return check_model(file, m);
  }
  return st.status();
}

Status write_run_row(sqlite3* db, const std::string& file, int id, const SessionRun& r) {
  Stmt st(db, file, "INSERT INTO runs VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const ModeRun& q = r.request;
  const ModeRunOutcome& o = r.outcome;
  st.bind(1, int64_t{id}).bind(2, r.label).bind(3, q.mode).bind(4, q.device).bind(5, q.jit_level);
  st.bind(6, int64_t{q.threads}).bind(7, int64_t{q.iterations}).bind(8, int64_t{q.warmup}).bind(9, int64_t{q.batch});
  st.bind(10, sql::join_lines(q.disabled_passes)).bind(11, o.mode).bind(12, o.backend).bind(13, o.note);
  st.bind(14, o.median_ms).bind(15, o.min_ms).bind(16, o.mean_ms).bind(17, o.compile_ms);
  st.bind(18, static_cast<int64_t>(o.peak_bytes)).bind(19, o.kernels).bind(20, static_cast<int64_t>(o.gpu_records));
  st.bind(21, o.gpu_note).run();
  Stmt out(db, file, "INSERT INTO run_outputs VALUES(?, ?, ?)");
  for (size_t i = 0; i < o.outputs.size(); ++i)
    out.bind(1, int64_t{id}).bind(2, static_cast<int64_t>(i)).bind(3, o.outputs[i]).run();
  MS_RETURN_IF_ERROR(st.status());
  return out.status();
}

// Pass reports and their snapshots; one snapshot row per distinct graph of the run, its constants
// through `constants`.
Status write_passes(sqlite3* db, const std::string& file, int run, const std::vector<PassOutcome>& passes,
                    int64_t& next_snapshot, SnapshotConstantWriter& constants) {
  constants.begin_run(!passes.empty() && passes[0].pass == "input" ? passes[0].graph.get() : nullptr);
  Stmt snap(db, file, "INSERT INTO snapshots VALUES(?, ?)");
  Stmt st(db, file, "INSERT INTO passes VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
  std::map<const ir::Graph*, int64_t> stored;
  for (size_t i = 0; i < passes.size(); ++i) {
    const PassOutcome& p = passes[i];
    int64_t snapshot = -1;
    if (p.graph) {
      auto [it, fresh] = stored.emplace(p.graph.get(), next_snapshot);
      if (fresh) {
        snap.bind(1, next_snapshot).bind(2, ir::to_json_strings_only(*p.graph)).run();
        MS_RETURN_IF_ERROR(constants.write(next_snapshot++, p));
      }
      snapshot = it->second;
    }
    st.bind(1, int64_t{run}).bind(2, static_cast<int64_t>(i)).bind(3, p.pass).bind(4, p.description);
    st.bind(5, int64_t{p.ran}).bind(6, int64_t{p.changed}).bind(7, int64_t{p.nodes_after}).bind(8, int64_t{p.added});
    st.bind(9, int64_t{p.removed}).bind(10, int64_t{p.fused}).bind(11, p.ms).bind(12, snapshot).run();
  }
  MS_RETURN_IF_ERROR(snap.status());
  return st.status();
}

Status write_plan(sqlite3* db, const std::string& file, int run, const runtime::MemoryPlan& plan) {
  Stmt st(db, file, "INSERT INTO memory_plans VALUES(?, ?, ?, ?, ?)");
  const std::string live = sql::pack_u64(plan.live);
  st.bind(1, int64_t{run})
      .bind(2, static_cast<int64_t>(plan.arena_bytes))
      .bind(3, static_cast<int64_t>(plan.lower_bound));
  st.bind(4, static_cast<int64_t>(plan.naive_bytes)).bind_blob(5, live.data(), live.size()).run();
  Stmt sl(db, file, "INSERT INTO memory_slots VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const runtime::MemorySlot& s = plan.slots[i];
    sl.bind(1, int64_t{run})
        .bind(2, static_cast<int64_t>(i))
        .bind(3, s.value)
        .bind(4, static_cast<int64_t>(s.producer.value));
    sl.bind(5, static_cast<int64_t>(s.offset)).bind(6, static_cast<int64_t>(s.bytes)).bind(7, int64_t{s.first_step});
    sl.bind(8, int64_t{s.last_step}).bind(9, s.reuses).bind(10, int64_t{s.thread}).bind(11, int64_t{s.within});
    sl.bind(12, static_cast<int64_t>(s.within_offset)).run();
  }
  MS_RETURN_IF_ERROR(st.status());
  return sl.status();
}

Status write_extras(sqlite3* db, const std::string& file, const SessionData& d) {
  Stmt c(db, file, "INSERT INTO comparisons VALUES(?, ?, ?, ?, ?)");
  for (size_t i = 0; i < d.comparisons.size(); ++i) {
    const SessionComparison& x = d.comparisons[i];
    c.bind(1, static_cast<int64_t>(i)).bind(2, x.name).bind(3, int64_t{x.run_a}).bind(4, int64_t{x.run_b});
    c.bind(5, x.report).run();
  }
  Stmt t(db, file, "INSERT INTO training VALUES(?, ?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < d.training.size(); ++i) {
    const TrainingCurve& x = d.training[i];
    const std::string l = sql::pack_doubles(x.losses), r = sql::pack_doubles(x.lrs), s = sql::pack_doubles(x.step_ms);
    t.bind(1, static_cast<int64_t>(i)).bind(2, x.name).bind(3, x.mode).bind_blob(4, l.data(), l.size());
    t.bind_blob(5, r.data(), r.size()).bind_blob(6, s.data(), s.size()).bind(7, x.report).run();
  }
  MS_RETURN_IF_ERROR(c.status());
  return t.status();
}

Status read_runs(sqlite3* db, const std::string& file, std::vector<SessionRun>& runs) {
  Stmt st(db, file, "SELECT * FROM runs ORDER BY id");
  while (st.step()) {
    SessionRun r;
    r.label = st.text(1);
    ModeRun& q = r.request;
    q.mode = st.text(2), q.device = st.text(3), q.jit_level = st.text(4);
    q.threads = st.i32(5), q.iterations = st.i32(6), q.warmup = st.i32(7), q.batch = st.i32(8);
    q.disabled_passes = sql::split_lines(st.text(9));
    ModeRunOutcome& o = r.outcome;
    o.mode = st.text(10), o.backend = st.text(11), o.note = st.text(12);
    o.median_ms = st.f64(13), o.min_ms = st.f64(14), o.mean_ms = st.f64(15), o.compile_ms = st.f64(16);
    o.peak_bytes = static_cast<size_t>(st.i64(17));
    o.kernels = st.i64(18);
    o.gpu_records = static_cast<uint64_t>(st.i64(19));
    o.gpu_note = st.text(20);
    runs.push_back(std::move(r));
  }
  MS_RETURN_IF_ERROR(st.status());
  Stmt out(db, file, "SELECT run, text FROM run_outputs ORDER BY run, idx");
  while (out.step()) {
    const int64_t run = out.i64(0);
    if (run < 0 || run >= static_cast<int64_t>(runs.size()))
      return invalid_model(file + ": run_outputs names run " + std::to_string(run) + ", which is not in the session");
    runs[static_cast<size_t>(run)].outcome.outputs.push_back(out.text(1));
  }
  return out.status();
}

Status read_passes(sqlite3* db, const std::string& file, std::vector<SessionRun>& runs,
                   SnapshotConstantBudget& budget) {
  std::map<int64_t, std::shared_ptr<const ir::Graph>> graphs;
  std::map<int64_t, SnapshotMarks> marks;
  {
    std::map<int64_t, ir::Graph> read;
    Stmt snap(db, file, "SELECT id, json FROM snapshots ORDER BY id");
    while (snap.step()) {
      auto g = ir::from_json(snap.text(1));
      if (!g)
        return invalid_model(file + ": pass snapshot " + std::to_string(snap.i64(0)) + ": " + g.status().message());
      read.insert_or_assign(snap.i64(0), std::move(*g));
    }
    MS_RETURN_IF_ERROR(snap.status());
    MS_RETURN_IF_ERROR(read_snapshot_constants(db, file, read, marks, budget));
    for (auto& [id, g] : read) graphs[id] = std::make_shared<const ir::Graph>(std::move(g));
  }
  Stmt st(db, file, "SELECT * FROM passes ORDER BY run, idx");
  while (st.step()) {
    const int64_t run = st.i64(0);
    if (run < 0 || run >= static_cast<int64_t>(runs.size()))
      return invalid_model(file + ": passes name run " + std::to_string(run) + ", which is not in the session");
    PassOutcome p;
    p.pass = st.text(2), p.description = st.text(3);
    p.ran = st.i64(4) != 0, p.changed = st.i64(5) != 0;
    p.nodes_after = st.i32(6), p.added = st.i32(7), p.removed = st.i32(8), p.fused = st.i32(9);
    p.ms = st.f64(10);
    const int64_t snapshot = st.i64(11);
    if (snapshot >= 0) {
      auto it = graphs.find(snapshot);
      if (it == graphs.end())
        return invalid_model(file + ": pass '" + p.pass + "' names snapshot " + std::to_string(snapshot) +
                             ", which is missing");
      p.graph = it->second;
      if (auto m = marks.find(snapshot); m != marks.end()) {
        p.constants_not_kept = m->second.not_kept;
        p.constants_from_model = m->second.from_model;
        p.nested_constants_not_kept = m->second.nested_not_kept;
      }
    }
    runs[static_cast<size_t>(run)].outcome.passes.push_back(std::move(p));
  }
  return st.status();
}

Status read_plans(sqlite3* db, const std::string& file, std::vector<SessionRun>& runs) {
  std::map<int64_t, runtime::MemoryPlan> plans;
  Stmt st(db, file, "SELECT * FROM memory_plans ORDER BY run");
  while (st.step()) {
    runtime::MemoryPlan& p = plans[st.i64(0)];
    p.arena_bytes = static_cast<uint64_t>(st.i64(1));
    p.lower_bound = static_cast<uint64_t>(st.i64(2));
    p.naive_bytes = static_cast<uint64_t>(st.i64(3));
    p.live = sql::unpack_u64(st.blob(4));
  }
  MS_RETURN_IF_ERROR(st.status());
  Stmt sl(db, file, "SELECT * FROM memory_slots ORDER BY run, idx");
  while (sl.step()) {
    auto it = plans.find(sl.i64(0));
    if (it == plans.end()) return invalid_model(file + ": a memory slot names a run without a memory plan");
    runtime::MemorySlot s;
    s.value = sl.text(2);
    s.producer = ir::NodeId{static_cast<uint64_t>(sl.i64(3))};
    s.offset = static_cast<uint64_t>(sl.i64(4)), s.bytes = static_cast<uint64_t>(sl.i64(5));
    s.first_step = sl.i32(6), s.last_step = sl.i32(7);
    s.reuses = sl.text(8);
    s.thread = sl.i32(9), s.within = sl.i32(10);
    s.within_offset = static_cast<uint64_t>(sl.i64(11));
    it->second.slots.push_back(std::move(s));
  }
  MS_RETURN_IF_ERROR(sl.status());
  for (auto& [run, plan] : plans) {
    if (run < 0 || run >= static_cast<int64_t>(runs.size()))
      return invalid_model(file + ": a memory plan names run " + std::to_string(run) + ", which is not in the session");
    runs[static_cast<size_t>(run)].outcome.plan = std::make_shared<const runtime::MemoryPlan>(std::move(plan));
  }
  return Status::ok();
}

Status read_extras(sqlite3* db, const std::string& file, SessionData& d) {
  Stmt c(db, file, "SELECT name, run_a, run_b, report FROM comparisons ORDER BY idx");
  while (c.step()) d.comparisons.push_back({c.text(0), c.i32(1), c.i32(2), c.text(3)});
  MS_RETURN_IF_ERROR(c.status());
  Stmt t(db, file, "SELECT name, mode, losses, lrs, step_ms, report FROM training ORDER BY idx");
  while (t.step()) {
    TrainingCurve x;
    x.name = t.text(0), x.mode = t.text(1);
    x.losses = sql::unpack_doubles(t.blob(2)), x.lrs = sql::unpack_doubles(t.blob(3));
    x.step_ms = sql::unpack_doubles(t.blob(4));
    x.report = t.text(5);
    d.training.push_back(std::move(x));
  }
  return t.status();
}

}  // namespace

Status write_data(sqlite3* db, const std::string& file, const SessionData& d,
                  const std::map<std::string, std::string>& attached, uint64_t constant_budget) {
  MS_RETURN_IF_ERROR(write_key_values(db, file, "environment", d.environment));
  MS_RETURN_IF_ERROR(write_key_values(db, file, "ui_state", d.ui_state));
  MS_RETURN_IF_ERROR(write_model(db, file, d.model));
  int64_t next_snapshot = 0;
  SnapshotConstantWriter constants(db, file, constant_budget, d.model.kind == "embedded");
  for (size_t i = 0; i < d.runs.size(); ++i) {
    const int run = static_cast<int>(i);
    const ModeRunOutcome& o = d.runs[i].outcome;
    MS_RETURN_IF_ERROR(write_run_row(db, file, run, d.runs[i]));
    MS_RETURN_IF_ERROR(write_passes(db, file, run, o.passes, next_snapshot, constants));
    if (o.plan) MS_RETURN_IF_ERROR(write_plan(db, file, run, *o.plan));
    MS_RETURN_IF_ERROR(write_run_details(db, file, run, o));
    if (o.trace) {
      MS_RETURN_IF_ERROR(write_trace(db, file, run, *o.trace));
    } else if (auto it = attached.find(d.runs[i].trace_file); it != attached.end() && d.runs[i].trace_run >= 0) {
      MS_RETURN_IF_ERROR(copy_trace(db, file, it->second, d.runs[i].trace_run, run));
    }
  }
  MS_RETURN_IF_ERROR(constants.finish());
  if (d.numerics) MS_RETURN_IF_ERROR(write_numerics(db, file, *d.numerics));
  MS_RETURN_IF_ERROR(write_ranks(db, file, d.ranks));
  return write_extras(db, file, d);
}

Status read_data(sqlite3* db, const std::string& file, SessionData& d, int64_t max_trace_events) {
  MS_RETURN_IF_ERROR(read_key_values(db, file, "environment", d.environment));
  MS_RETURN_IF_ERROR(read_key_values(db, file, "ui_state", d.ui_state));
  MS_RETURN_IF_ERROR(read_model(db, file, d.model));
  MS_RETURN_IF_ERROR(read_runs(db, file, d.runs));
  MS_RETURN_IF_ERROR(read_passes(db, file, d.runs, d.constants));
  MS_RETURN_IF_ERROR(read_plans(db, file, d.runs));
  MS_RETURN_IF_ERROR(read_run_details(db, file, d.runs));
  Stmt sizes(db, file, "SELECT events FROM trace_info WHERE run = ?");
  for (size_t i = 0; i < d.runs.size(); ++i) {
    sizes.bind(1, static_cast<int64_t>(i));
    const int64_t events = sizes.step() ? sizes.i64(0) : 0;
    sizes.reset();
    MS_RETURN_IF_ERROR(sizes.status());
    if (max_trace_events >= 0 && events > max_trace_events) {
      d.runs[i].trace_file = file;
      d.runs[i].trace_run = static_cast<int>(i);
      continue;
    }
    MS_ASSIGN_OR_RETURN(d.runs[i].outcome.trace, read_trace(db, file, static_cast<int>(i)));
  }
  MS_RETURN_IF_ERROR(read_numerics(db, file, d.numerics));
  MS_RETURN_IF_ERROR(read_ranks(db, file, d.ranks));
  return read_extras(db, file, d);
}

}  // namespace ms::session::store
