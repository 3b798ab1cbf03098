// The session file's tables (schema version 1) and how a SessionData goes into them and comes back.
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
//   trace_meta, trace_strings, trace_tracks (with each track's longest event), trace_nodes,
//   trace_events (index on run, track, ts), trace_counters, trace_flows, trace_blocks
//   digests(tbl, rows, hash)                     every other table's content, checked on open
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "app/session/session_file.h"

namespace ms::session::store {

extern const char* const kSchema;
// Every table a digest covers, in the order they are checked.
const std::vector<std::string>& content_tables();

Status write_data(sqlite3* db, const std::string& file, const SessionData& data);
Status read_data(sqlite3* db, const std::string& file, SessionData& data);

Status write_trace(sqlite3* db, const std::string& file, int run, const prof::Trace& trace);
// The run's trace, or null when it has none.
Expected<prof::TracePtr> read_trace(sqlite3* db, const std::string& file, int run);

}  // namespace ms::session::store
