// The tables schema 2 added: each run's fallbacks and compiled-graph figures, and the comparison of
// both modes' values (the numerics); schema 4 the nodes of each fallback. Older files get them empty
// through the migrations.
#include <map>

#include "app/session/session_store.h"
#include "app/session/sqlite_db.h"

namespace ms::session::store {

using sql::Stmt;

const char* const kSchemaV2 = R"sql(
CREATE TABLE run_details(run INTEGER PRIMARY KEY, compiles INTEGER, cache_hits INTEGER, bucket TEXT, buckets TEXT);
CREATE TABLE run_fallbacks(run INTEGER, idx INTEGER, op TEXT, count INTEGER, reason TEXT, PRIMARY KEY(run, idx));
CREATE TABLE numerics(idx INTEGER PRIMARY KEY, tol REAL, first_divergence INTEGER, compared INTEGER,
  diverged INTEGER, max_rel REAL, diff_ms REAL, bisect TEXT);
CREATE TABLE numerics_values(idx INTEGER PRIMARY KEY, value TEXT, node TEXT, op TEXT, node_id INTEGER,
  ref_value TEXT, ref_node TEXT, ref_node_id INTEGER, match TEXT, note TEXT, compared INTEGER, max_abs REAL,
  max_rel REAL, nonfinite INTEGER, diverged INTEGER, ord INTEGER);
)sql";

const char* const kSchemaV4 = R"sql(
CREATE TABLE run_fallback_nodes(run INTEGER, idx INTEGER, node INTEGER, PRIMARY KEY(run, idx, node));
)sql";

namespace {

Status bad_run(const std::string& file, const char* table, int64_t run) {
  return invalid_model(file + ": " + table + " names run " + std::to_string(run) + ", which is not in the session");
}

}  // namespace

Status write_run_details(sqlite3* db, const std::string& file, int run, const ModeRunOutcome& o) {
  Stmt d(db, file, "INSERT INTO run_details VALUES(?, ?, ?, ?, ?)");
  d.bind(1, int64_t{run})
      .bind(2, o.compiles)
      .bind(3, o.cache_hits)
      .bind(4, o.bucket)
      .bind(5, sql::join_lines(o.buckets));
  d.run();
  Stmt f(db, file, "INSERT INTO run_fallbacks VALUES(?, ?, ?, ?, ?)");
  Stmt fn(db, file, "INSERT INTO run_fallback_nodes VALUES(?, ?, ?)");
  for (size_t i = 0; i < o.fallbacks.size(); ++i) {
    const runtime::Fallback& x = o.fallbacks[i];
    f.bind(1, int64_t{run}).bind(2, static_cast<int64_t>(i)).bind(3, x.op).bind(4, x.count).bind(5, x.reason).run();
    for (uint64_t node : x.nodes)
      fn.bind(1, int64_t{run}).bind(2, static_cast<int64_t>(i)).bind(3, static_cast<int64_t>(node)).run();
  }
  MS_RETURN_IF_ERROR(d.status());
  MS_RETURN_IF_ERROR(f.status());
  return fn.status();
}

Status read_run_details(sqlite3* db, const std::string& file, std::vector<SessionRun>& runs) {
  const auto n = static_cast<int64_t>(runs.size());
  Stmt d(db, file, "SELECT run, compiles, cache_hits, bucket, buckets FROM run_details ORDER BY run");
  while (d.step()) {
    if (d.i64(0) < 0 || d.i64(0) >= n) return bad_run(file, "run_details", d.i64(0));
    ModeRunOutcome& o = runs[static_cast<size_t>(d.i64(0))].outcome;
    o.compiles = d.i64(1), o.cache_hits = d.i64(2), o.bucket = d.text(3), o.buckets = sql::split_lines(d.text(4));
  }
  MS_RETURN_IF_ERROR(d.status());
  Stmt f(db, file, "SELECT run, idx, op, count, reason FROM run_fallbacks ORDER BY run, idx");
  std::map<std::pair<int64_t, int64_t>, size_t> position;  // (run, idx) -> index in the run's list
  while (f.step()) {
    if (f.i64(0) < 0 || f.i64(0) >= n) return bad_run(file, "run_fallbacks", f.i64(0));
    auto& list = runs[static_cast<size_t>(f.i64(0))].outcome.fallbacks;
    position[{f.i64(0), f.i64(1)}] = list.size();
    list.push_back({f.text(2), f.i64(3), f.text(4)});
  }
  MS_RETURN_IF_ERROR(f.status());
  Stmt fn(db, file, "SELECT run, idx, node FROM run_fallback_nodes ORDER BY run, idx, node");
  while (fn.step()) {
    auto it = position.find({fn.i64(0), fn.i64(1)});
    if (it == position.end())
      return invalid_model(file + ": run_fallback_nodes names fallback " + std::to_string(fn.i64(1)) + " of run " +
                           std::to_string(fn.i64(0)) + ", which is not in the session");
    runs[static_cast<size_t>(fn.i64(0))].outcome.fallbacks[it->second].nodes.push_back(
        static_cast<uint64_t>(fn.i64(2)));
  }
  return fn.status();
}

Status write_numerics(sqlite3* db, const std::string& file, const SessionNumerics& n) {
  const runtime::ModeDiff& d = n.diff;
  Stmt h(db, file, "INSERT INTO numerics VALUES(0, ?, ?, ?, ?, ?, ?, ?)");
  h.bind(1, d.tol).bind(2, int64_t{d.first_divergence}).bind(3, static_cast<int64_t>(d.compared));
  h.bind(4, static_cast<int64_t>(d.diverged)).bind(5, d.max_rel).bind(6, n.diff_ms).bind(7, n.bisect).run();
  Stmt v(db, file, "INSERT INTO numerics_values VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (size_t i = 0; i < d.values.size(); ++i) {
    const runtime::ValueDiff& x = d.values[i];
    v.bind(1, static_cast<int64_t>(i)).bind(2, x.value).bind(3, x.node).bind(4, x.op);
    v.bind(5, static_cast<int64_t>(x.node_id.value)).bind(6, x.ref_value).bind(7, x.ref_node);
    v.bind(8, static_cast<int64_t>(x.ref_node_id.value)).bind(9, x.match).bind(10, x.note);
    v.bind(11, int64_t{x.compared}).bind(12, x.max_abs).bind(13, x.max_rel).bind(14, x.nonfinite_mismatches);
    v.bind(15, int64_t{x.diverged}).bind(16, static_cast<int64_t>(x.order)).run();
  }
  MS_RETURN_IF_ERROR(h.status());
  return v.status();
}

Status read_numerics(sqlite3* db, const std::string& file, std::optional<SessionNumerics>& out) {
  Stmt h(db, file, "SELECT tol, first_divergence, compared, diverged, max_rel, diff_ms, bisect FROM numerics");
  if (!h.step()) return h.status();
  SessionNumerics n;
  runtime::ModeDiff& d = n.diff;
  d.tol = h.f64(0), d.first_divergence = h.i32(1), d.compared = static_cast<size_t>(h.i64(2));
  d.diverged = static_cast<size_t>(h.i64(3)), d.max_rel = h.f64(4), n.diff_ms = h.f64(5), n.bisect = h.text(6);
  Stmt v(db, file, "SELECT * FROM numerics_values ORDER BY idx");
  while (v.step()) {
    runtime::ValueDiff x;
    x.value = v.text(1), x.node = v.text(2), x.op = v.text(3), x.node_id = ir::NodeId{static_cast<uint64_t>(v.i64(4))};
    x.ref_value = v.text(5), x.ref_node = v.text(6), x.ref_node_id = ir::NodeId{static_cast<uint64_t>(v.i64(7))};
    x.match = v.text(8), x.note = v.text(9), x.compared = v.i64(10) != 0, x.max_abs = v.f64(11);
    x.max_rel = v.f64(12), x.nonfinite_mismatches = v.i64(13), x.diverged = v.i64(14) != 0;
    x.order = static_cast<size_t>(v.i64(15));
    d.values.push_back(std::move(x));
  }
  MS_RETURN_IF_ERROR(v.status());
  if (d.first_divergence >= static_cast<int>(d.values.size()))
    return invalid_model(file + ": the numerics' first divergence names value " + std::to_string(d.first_divergence) +
                         ", which is not in the session");
  out = std::move(n);
  return Status::ok();
}

}  // namespace ms::session::store
