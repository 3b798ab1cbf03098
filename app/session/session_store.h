// The session file's tables (schema version 8) and how a SessionData goes into them and comes back.
// Internal to app/session: session_file.cpp opens, checks and saves; these read and write rows.
//
//   schema_version(version, written_by)          one row
//   environment(key, value), ui_state(key, value)
//   model(source, kind, bytes, hash, size)       at most one row
//   runs(id, label, request..., figures...)      id = index in SessionData::runs
//   run_outputs(run, idx, text)
//   snapshots(id, json)                          a graph after a pass, without constant data
//   passes(run, idx, pass, ..., snapshot)        the pass reports; snapshot -> snapshots.id
//   memory_plans(run, ...), memory_slots(run, idx, ...)
//   comparisons(idx, name, run_a, run_b, report), training(idx, name, mode, curves..., report)
//   run_details(run, compiles, cache_hits, bucket, buckets)   schema 2
//   run_fallbacks(run, idx, op, count, reason)                 schema 2
//   run_fallback_nodes(run, idx, node)                         schema 4: the nodes of fallback idx
//   numerics(...), numerics_values(idx, ...)                   schema 2: the values of both modes compared
//   trace_meta, trace_strings, trace_tracks (with each track's longest event), trace_nodes,
//   trace_events (index on run, track, ts), trace_counters, trace_flows, trace_blocks
//   trace_events.depth, trace_tracks.depths, trace_iterations(run, iteration, t0, t1)   schema 3:
//                                                each event's nesting depth, each iteration's op span
//   rank_lanes(idx, rank, ..., figures), rank_steps(lane, idx, ...), rank_collectives(lane, idx, ...)
//                                                schema 5: the Ranks tab's lanes (prof::RankLane)
//   snapshot_constants(id, kind, name, dtype, shape, bytes, data)   schema 6: one row per distinct
//                                                constant buffer of the snapshots; kind 'data' (bytes
//                                                in data), 'model' (the embedded model's initializer
//                                                `name`) or 'not_kept' (over the budget)
//   snapshot_values(snapshot, value, constant)   schema 6: each snapshot initializer's constant
//   snapshot_constant_budget(budget, kept, ...)  schema 6: one row, what the save kept
//   snapshot_nested_values(snapshot, path, constant)   schema 7: each constant nested in a snapshot
//                                                (NestedConstant's path): its snapshot_constants row
//   trace_name_totals(run, kind, name, events, dur)   schema 8: per kind and name of a trace's events,
//                                                their number and total duration (the timeline's legend)
//   digests(tbl, rows, hash)                     every other table's content, checked on open
#pragma once

#include <sqlite3.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "app/session/session_file.h"

namespace ms::session::store {

extern const char* const kSchema;    // the tables of schema 1
extern const char* const kSchemaV2;  // the tables schema 2 added (its migration creates them)
extern const char* const kSchemaV3;  // the columns and table schema 3 added (derive_trace_rows fills them)
extern const char* const kSchemaV4;  // the table schema 4 added
extern const char* const kSchemaV5;  // the tables schema 5 added (session_store_ranks.cpp)
extern const char* const kSchemaV6;  // the tables schema 6 added (session_store_constants.cpp)
extern const char* const kSchemaV7;  // the table schema 7 added (session_store_constants.cpp)
extern const char* const kSchemaV8;  // the table schema 8 added (derive_name_totals fills it)
// Every table a digest covers in a file of schema `version`, in the order they are checked.
const std::vector<std::string>& content_tables(int version = kSessionSchemaVersion);

// `attached`: for each SessionRun::trace_file, the schema name it is attached under (copy_trace).
// Constants of the pass snapshots past `constant_budget` bytes are not kept (schema 6).
Status write_data(sqlite3* db, const std::string& file, const SessionData& data,
                  const std::map<std::string, std::string>& attached = {},
                  uint64_t constant_budget = kSnapshotConstantBudget);
// A trace of more than `max_trace_events` events (-1: no limit) is not read: its run names the file.
Status read_data(sqlite3* db, const std::string& file, SessionData& data, int64_t max_trace_events = -1);

// Schema 2's tables (session_store_extras.cpp).
Status write_run_details(sqlite3* db, const std::string& file, int run, const ModeRunOutcome& o);
Status read_run_details(sqlite3* db, const std::string& file, std::vector<SessionRun>& runs);
Status write_numerics(sqlite3* db, const std::string& file, const SessionNumerics& n);
Status read_numerics(sqlite3* db, const std::string& file, std::optional<SessionNumerics>& out);

// Schema 5's tables (session_store_ranks.cpp): the Ranks tab's lanes.
Status write_ranks(sqlite3* db, const std::string& file, const std::vector<prof::RankLane>& lanes);
Status read_ranks(sqlite3* db, const std::string& file, std::vector<prof::RankLane>& lanes);

// Schema 6's tables (session_store_constants.cpp): the snapshots' constants, each distinct buffer
// (tensor view) written once over a whole save.
class SnapshotConstantWriter {
 public:
  // `model_provides`: the session embeds its model, so its initializers need no copy here.
  SnapshotConstantWriter(sqlite3* db, std::string file, uint64_t budget, bool model_provides);
  // The next run's input graph (its pass "input"; null when it has none): the model's initializers.
  void begin_run(const ir::Graph* input);
  // The snapshot of `p`: its initializers, then its nested constants (schema 7; never left to the
  // model). Values whose data the session does not have (PassOutcome::constants_not_kept and
  // nested_constants_not_kept, and constants_from_model not filled in: read from a file that did not
  // keep them) are marked not kept again, never stored as data.
  Status write(int64_t snapshot, const PassOutcome& p);
  Status finish();  // the budget row

 private:
  using Key = std::tuple<const Buffer*, size_t, DType, Shape>;
  // `nested`: the constant may not be left to the model (a model buffer gets a row of its own).
  Expected<int64_t> constant_id(const Tensor& t, bool known, bool nested = false);
  Status write_nested(int64_t snapshot, const PassOutcome& p);
  sqlite3* db_;
  std::string file_;
  bool model_provides_;
  SnapshotConstantBudget totals_;
  std::map<Key, std::string> model_;             // this run's input graph: buffer -> initializer name
  std::map<Key, std::pair<int64_t, bool>> ids_;  // id, and whether the row refers to the model
  std::map<Key, int64_t> nested_ids_;            // a model buffer's row of its own for nested constants
};

// What a snapshot's stored constants say beyond their data (PassOutcome's marks). A file written
// before schema 6 has no constant data: every initializer of its snapshots is left to the model by
// its own name (restore_model_constants fills in those the model has, the rest become not kept).
struct SnapshotMarks {
  std::vector<std::string> not_kept;
  std::map<std::string, std::string> from_model;
  std::vector<std::string> nested_not_kept;  // paths (NestedConstant)
};
// Puts the stored constants into the snapshots read (by snapshot id); errors name the table and row.
// A subgraph initializer without a row (a file from before schema 7) is marked not kept; a tensor
// attribute without one keeps the data the snapshot's JSON had before schema 7.
Status read_snapshot_constants(sqlite3* db, const std::string& file, std::map<int64_t, ir::Graph>& graphs,
                               std::map<int64_t, SnapshotMarks>& marks, SnapshotConstantBudget& budget);

// Fills what schema 3 derives from a run's stored events (depths, iteration spans), for a trace
// written before it.
Status derive_trace_rows(sqlite3* db, const std::string& file, int run);

// Fills schema 8's totals of a run's stored events (one pass over them), for a trace written before it.
Status derive_name_totals(sqlite3* db, const std::string& file, int run);

// The total duration of the run's Op and Foreign events by name, from schema 8's totals (`stored`) or
// from the events themselves; errors name the file.
Expected<std::vector<std::pair<std::string, int64_t>>> read_op_type_totals(sqlite3* db, const std::string& file,
                                                                           int run, bool stored);

// Copies run `from_run`'s trace rows of the database attached as `schema` in as run `run`.
Status copy_trace(sqlite3* db, const std::string& file, const std::string& schema, int from_run, int run);

Status write_trace(sqlite3* db, const std::string& file, int run, const prof::Trace& trace);
// The run's trace, or null when it has none; `events` false leaves its events and flows out.
Expected<prof::TracePtr> read_trace(sqlite3* db, const std::string& file, int run, bool events = true);

// A read-only connection of its own to the session file `path` (closed when it goes out of scope): a
// query that runs for seconds on another thread then holds up none of the reader's.
struct ConnectionCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Connection = std::unique_ptr<sqlite3, ConnectionCloser>;
Expected<Connection> open_read_only(const std::string& path);

}  // namespace ms::session::store
