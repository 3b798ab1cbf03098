// The tables schema 5 added: the ranks of a data-parallel training run the Ranks tab shows (one
// lane per rank: its compile, steps and collectives, aligned, and its figures). Older files get
// them empty through the migration.
#include "app/session/session_store.h"
#include "app/session/sqlite_db.h"

namespace ms::session::store {

using sql::Stmt;

const char* const kSchemaV5 = R"sql(
CREATE TABLE rank_lanes(idx INTEGER PRIMARY KEY, rank INTEGER, world_size INTEGER, label TEXT, grp TEXT,
  compile_t0 INTEGER, compile_t1 INTEGER, aligned_step INTEGER, first_step INTEGER, last_step INTEGER,
  median_step_ms REAL, allreduce_ms_per_step REAL);
CREATE TABLE rank_steps(lane INTEGER, idx INTEGER, t0 INTEGER, t1 INTEGER, step INTEGER, PRIMARY KEY(lane, idx));
CREATE TABLE rank_collectives(lane INTEGER, idx INTEGER, sequence INTEGER, t0 INTEGER, t1 INTEGER, step INTEGER,
  bytes INTEGER, PRIMARY KEY(lane, idx));
)sql";

namespace {

Status bad_lane(const std::string& file, const char* table, int64_t lane) {
  return invalid_model(file + ": " + table + " names rank lane " + std::to_string(lane) +
                       ", which is not in the session");
}

}  // namespace

Status write_ranks(sqlite3* db, const std::string& file, const std::vector<prof::RankLane>& lanes) {
  Stmt l(db, file, "INSERT INTO rank_lanes VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  Stmt s(db, file, "INSERT INTO rank_steps VALUES(?, ?, ?, ?, ?)");
  Stmt c(db, file, "INSERT INTO rank_collectives VALUES(?, ?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < lanes.size(); ++i) {
    const prof::RankLane& x = lanes[i];
    const auto lane = static_cast<int64_t>(i);
    l.bind(1, lane).bind(2, int64_t{x.rank}).bind(3, int64_t{x.world_size}).bind(4, x.label).bind(5, x.group);
    l.bind(6, x.compile.t0).bind(7, x.compile.t1).bind(8, int64_t{x.aligned_step}).bind(9, int64_t{x.first_step});
    l.bind(10, int64_t{x.last_step}).bind(11, x.median_step_ms).bind(12, x.allreduce_ms_per_step).run();
    for (size_t k = 0; k < x.steps.size(); ++k) {
      const prof::RankSpan& y = x.steps[k];
      s.bind(1, lane).bind(2, static_cast<int64_t>(k)).bind(3, y.t0).bind(4, y.t1).bind(5, int64_t{y.step}).run();
    }
    for (size_t k = 0; k < x.collectives.size(); ++k) {
      const prof::RankCollective& y = x.collectives[k];
      c.bind(1, lane).bind(2, static_cast<int64_t>(k)).bind(3, y.sequence).bind(4, y.t0).bind(5, y.t1);
      c.bind(6, int64_t{y.step}).bind(7, static_cast<int64_t>(y.bytes)).run();
    }
  }
  MS_RETURN_IF_ERROR(l.status());
  MS_RETURN_IF_ERROR(s.status());
  return c.status();
}

Status read_ranks(sqlite3* db, const std::string& file, std::vector<prof::RankLane>& lanes) {
  Stmt l(db, file, "SELECT * FROM rank_lanes ORDER BY idx");
  while (l.step()) {
    prof::RankLane x;
    x.rank = l.i32(1), x.world_size = l.i32(2), x.label = l.text(3), x.group = l.text(4);
    x.compile = {l.i64(5), l.i64(6), 0};
    x.aligned_step = l.i32(7), x.first_step = l.i32(8), x.last_step = l.i32(9);
    x.median_step_ms = l.f64(10), x.allreduce_ms_per_step = l.f64(11);
    lanes.push_back(std::move(x));
  }
  MS_RETURN_IF_ERROR(l.status());
  const auto n = static_cast<int64_t>(lanes.size());
  Stmt s(db, file, "SELECT lane, t0, t1, step FROM rank_steps ORDER BY lane, idx");
  while (s.step()) {
    if (s.i64(0) < 0 || s.i64(0) >= n) return bad_lane(file, "rank_steps", s.i64(0));
    lanes[static_cast<size_t>(s.i64(0))].steps.push_back({s.i64(1), s.i64(2), s.i32(3)});
  }
  MS_RETURN_IF_ERROR(s.status());
  Stmt c(db, file, "SELECT lane, sequence, t0, t1, step, bytes FROM rank_collectives ORDER BY lane, idx");
  while (c.step()) {
    if (c.i64(0) < 0 || c.i64(0) >= n) return bad_lane(file, "rank_collectives", c.i64(0));
    lanes[static_cast<size_t>(c.i64(0))].collectives.push_back(
        {c.i64(1), c.i64(2), c.i64(3), c.i32(4), static_cast<uint64_t>(c.i64(5))});
  }
  return c.status();
}

}  // namespace ms::session::store
