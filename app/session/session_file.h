// Session files (.modescope): everything a session holds - the model, every run with its figures,
// outputs, trace, pass snapshots and memory plan, comparisons, training curves and the UI state - in
// one SQLite database, so the CLI writes what the app opens and a session survives the app.
//
// Saving builds the database in memory and writes it through the atomic write helper
// (engine/core/atomic_file.h: a temporary file beside the target, every write checked, fsync,
// rename), so a failed save (disk full, permission denied, I/O error, a crash or kill -9 in the
// middle) leaves the previous file exactly as it was; the helper's fault hook reaches session saves
// too. The file's header marks it WAL, so a connection that later writes to it in place journals in
// WAL mode.
//
// Opening never modifies the file: the header is checked first (SQLite magic, application_id,
// schema version, the size the header promises), then the database is opened read-only and
// immutable, `PRAGMA integrity_check` runs and every table's content digest (stored at save) is
// recomputed. Errors are one line naming the file: "<path>: <what>". A file from an older schema is
// copied into memory and migrated forward there (kSessionMigrations); one from a newer schema is
// refused.
//
// Traces are stored event by event in a table indexed by (run, track, time), so SessionReader
// answers a time window of one track without loading the trace (the timeline of a trace larger
// than memory).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/session/mode_run.h"
#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/runtime/mode_diff.h"
#include "profiler/analysis/rank_lane.h"
#include "profiler/trace/trace.h"

struct sqlite3;

namespace ms::session {

// Schema 2 added each run's fallbacks and shape-bucket figures and the numerics comparison, schema 3
// each trace event's nesting depth and each iteration's op span, schema 4 the nodes of each run's
// fallbacks, schema 5 the ranks of a data-parallel training run, schema 6 the constant data of the
// pass snapshots, schema 7 that of the constants nested in them (subgraphs' initializers, tensor
// attributes), schema 8 per trace the number and total time of its events by kind and name (the
// timeline's legend of a trace kept in the file); an older file is migrated in memory on open.
inline constexpr int kSessionSchemaVersion = 8;
// How many bytes of pass-made constants a session file keeps by default (schema 6).
inline constexpr uint64_t kSnapshotConstantBudget = 64ull << 20;
inline constexpr int32_t kSessionApplicationId = 0x4D53434F;  // "MSCO"
inline constexpr const char* kSessionExtension = ".modescope";

// The model of a session: a file's bytes when small (kind "embedded"), its path and content hash
// when large (kind "path"), or a spec the app rebuilds it from ("zoo:NAME?k=v", "generated:N"; kind
// "spec").
struct SessionModel {
  std::string source;  // what the user opened, as given
  std::string kind;    // embedded | path | spec ("" when the session has no model)
  std::string bytes;   // kind embedded: the file's bytes
  std::string hash;    // embedded and path: content hash of the file (16 hex digits, FNV-1a 64)
  uint64_t size = 0;   // embedded and path: the file's size in bytes
};

// Describes `source` for a session: a path of at most `embed_limit` bytes is embedded, a larger one
// kept by path and hash, anything else is a spec. Errors name the file when it cannot be read.
Expected<SessionModel> describe_model(const std::string& source, uint64_t embed_limit = 32ull << 20);
std::string content_hash(std::string_view bytes);

// One run of the model: what was asked (the request's test seams are not stored) and what it gave.
struct SessionRun {
  std::string label;  // "pynative", "graph", "train:graph", ...
  ModeRun request;
  ModeRunOutcome outcome;
  // A trace left in a session file (outcome.trace null): run `trace_run` of `trace_file`. Saving
  // copies its rows from there, so a session opened without loading its big trace saves it whole.
  std::string trace_file;
  int trace_run = -1;
};

// Two runs compared (indices into SessionData::runs) and the comparison's report (JSON text).
struct SessionComparison {
  std::string name;
  int run_a = -1, run_b = -1;
  std::string report;
};

// A training run's curves, one value per step, and its report (JSON text).
struct TrainingCurve {
  std::string name;
  std::string mode;
  std::vector<double> losses, lrs, step_ms;
  std::string report;
};

// The comparison of both modes' values (numerics.h's DiffResult without the captured tensors: what
// the Values dock and the graph's error colours show) and the last bisection's summary line.
struct SessionNumerics {
  runtime::ModeDiff diff;
  double diff_ms = 0;
  std::string bisect;
};

// What a save kept of the pass snapshots' constants (schema 6): each distinct constant once, the
// model's unchanged initializers by name when the model is embedded, the others' bytes up to the
// budget. `recorded` false: a file written before schema 6 (no constant data at all).
struct SnapshotConstantBudget {
  bool recorded = false;
  uint64_t budget = 0;
  int64_t kept = 0, from_model = 0, not_kept = 0;  // distinct constants
  uint64_t kept_bytes = 0, not_kept_bytes = 0;
};

struct SessionData {
  SessionModel model;
  std::vector<SessionRun> runs;
  std::vector<SessionComparison> comparisons;
  std::vector<TrainingCurve> training;
  std::optional<SessionNumerics> numerics;
  std::vector<prof::RankLane> ranks;               // the Ranks tab's lanes (one per rank of each run), as shown
  std::map<std::string, std::string> ui_state;     // pass shown, selection, open tab, ...
  std::map<std::string, std::string> environment;  // producer, version, CPU, threads, ...
  SnapshotConstantBudget constants;                // filled by load; a save computes its own
};

// Writes `data` to `path` atomically. Pass snapshots keep their constants (schema 6): each distinct
// buffer once; with an embedded model, its initializers a snapshot still shares are referred to by
// name; other constants' bytes are kept while their total stays within `constant_budget`, and the
// rest are marked not kept.
Status save_session(const std::string& path, const SessionData& data,
                    uint64_t constant_budget = kSnapshotConstantBudget);
// Opens, checks and reads a whole session.
Expected<SessionData> load_session(const std::string& path);
// What the app opens from `path`: a model (table `model`) with the runs made on it, or without a
// model, rank lanes or training curves alone (File > Open Ranks, saved). Otherwise an error naming
// the file and the table.
Status check_openable(const std::string& path, const SessionData& d);

// Fills in the snapshots' constants a session file left to its model (PassOutcome::
// constants_from_model) from `model`, the model opened again (graphs copied, buffers shared). One the
// model lacks, or has with another dtype or shape, joins constants_not_kept. Returns how many
// snapshot initializers were filled in (a weight counts once per distinct snapshot holding it).
int64_t restore_model_constants(std::vector<SessionRun>& runs, const ir::Graph& model);

// The constants of a snapshot besides its own initializers (schema 7 stores them as schema 6 stores
// those): the initializers of its subgraphs (If branches, Loop and Scan bodies, at any depth) and its
// tensor attributes (a Constant's value), each named by a path. The path lists the subgraphs from the
// top, each "<node id>.<attribute>/" ("<node id>.<attribute>.<i>/" in a list of graphs), then
// ":<initializer>" or "#<node id>.<attribute>": "12.body/:w", "12.then_branch/40.body/#41.value",
// "#7.value". Attribute names escape '%', '.', '/', ':' and '#' as %XX.
struct NestedConstant {
  std::string path;
  const Tensor* tensor = nullptr;  // in the graph walked
  bool initializer = false;        // a subgraph's initializer (else a tensor attribute)
};
std::vector<NestedConstant> nested_constants(const ir::Graph& g);
// The constant `path` names in `g`, or null when it names none.
const Tensor* find_nested_constant(const ir::Graph& g, std::string_view path);
// The constants of p.graph a session file did not keep (constants_not_kept and
// nested_constants_not_kept, and constants_from_model no model has filled in): the tensors read
// back in their place, which hold zeros.
std::vector<Tensor> not_kept_tensors(const PassOutcome& p);

// A forward migration: turns a database of schema `from` into `from + 1`, in memory.
// `derived`: it adds only what the readers derive from the file's other tables when it is missing
// (SessionReader::op_type_totals), so a file needing no other migration is read as it is, not copied
// into memory (a big trace's file of the previous schema opens as fast as before).
struct SessionMigration {
  int from = 0;
  const char* what = "";
  Status (*apply)(sqlite3* db) = nullptr;
  bool derived = false;
};
// The list of migrations, in order.
const std::vector<SessionMigration>& session_migrations();

// A session opened for queries, read-only, nothing loaded until asked. Checked as load_session
// checks it; verify_content false keeps only the header checks (the integrity check and the
// digests read the whole file): a damaged page then fails the query that reads it, with an error
// naming the file.
// One stored track's events in [t0, t1) summarized in equal time buckets (the timeline zoomed out):
// per bucket the number of events starting in it and the first of them (ts_ns < 0: none).
struct WindowBucket {
  int64_t t0 = 0, t1 = 0;
  int64_t count = 0;
  prof::Event first;
  int32_t first_depth = 0;  // its nesting depth on the track
};

// A run's events of a time range by name (SessionReader::range_totals): how many and their time
// inside the range.
struct RangeNameTotal {
  int64_t name = 0;  // index into the trace's strings
  int64_t count = 0;
  int64_t ns = 0;
};

// How much of a file open checks: everything (integrity check and every table's digest), everything
// but the trace events (their table's digest and the page-by-page integrity check read the whole
// file: a big trace's damaged page then fails the query that reads it), or only the header.
enum class Verify { All, AllButEvents, Header };

class SessionReader {
 public:
  static Expected<SessionReader> open(const std::string& path, bool verify_content = true);
  static Expected<SessionReader> open(const std::string& path, Verify verify);
  SessionReader(SessionReader&&) noexcept;
  SessionReader& operator=(SessionReader&&) noexcept;
  ~SessionReader();

  const std::string& path() const { return path_; }
  int schema_version() const { return version_; }
  Expected<SessionData> load() const;
  // The same, but a trace of more than `max_trace_events` events stays in the file: its run gets
  // trace_file / trace_run instead (windows of it are queried).
  Expected<SessionData> load(int64_t max_trace_events) const;
  // Runs in the file (their labels, in order) and a run's trace size.
  Expected<std::vector<std::string>> run_labels() const;
  Expected<int64_t> event_count(int run) const;
  // The events of `run`'s track `track` that overlap [t0_ns, t1_ns), in time order; string fields
  // are indices into the stored trace's strings (trace_strings()). `depths`, when given, gets each
  // one's nesting depth on the track (prof::nesting_depths of the whole trace).
  Expected<std::vector<prof::Event>> events_in_window(int run, uint32_t track, int64_t t0_ns, int64_t t1_ns,
                                                      std::vector<int32_t>* depths = nullptr) const;
  // Per track of the run, its number of nesting depths (1 + its deepest event's; 0 without events).
  Expected<std::vector<int>> track_depths(int run) const;
  // What the memory views read of a trace left in the file: its skeleton with the op events of its
  // first iteration and of the first iteration its memory blocks were recorded in (found through
  // each iteration's stored op span: a few window queries, however long the trace).
  Expected<prof::TracePtr> trace_first_iterations(int run) const;
  Expected<std::vector<std::string>> trace_strings(int run) const;
  // A run's trace without its events and flows (strings, tracks, nodes, counters, memory blocks,
  // metadata), or null when the run has none; and the time its events span, [first start, last end].
  Expected<prof::TracePtr> trace_skeleton(int run) const;
  // A run's whole trace, events and all (null when the run has none).
  Expected<prof::TracePtr> trace(int run) const;
  Expected<std::pair<int64_t, int64_t>> trace_span(int run) const;
  // Events of a track starting in [t0_ns, t1_ns), counted from the index (two look-ups: the events
  // of a track are stored in time order, numbered).
  Expected<int64_t> count_in_window(int run, uint32_t track, int64_t t0_ns, int64_t t1_ns) const;
  // [t0_ns, t1_ns) in `buckets` equal buckets, each counted and with its first event (buckets + 1
  // look-ups, however many events the window holds).
  Expected<std::vector<WindowBucket>> window_summary(int run, uint32_t track, int64_t t0_ns, int64_t t1_ns,
                                                     int buckets) const;
  // The total duration of the run's Op and Foreign events by name (the timeline's legend), by name:
  // read from the totals stored with the trace (schema 8: a few rows, however many events it has),
  // or in a file of schema 7 read as it is, counted from its events (one pass over them: seconds
  // for ten million) on a connection of its own, so that a thread counting them holds up no other
  // query. Kept: a second call reads nothing. Safe to call from any thread.
  Expected<std::vector<std::pair<std::string, int64_t>>> op_type_totals(int run) const;
  // Whether the file stores those totals (else op_type_totals counts the events).
  bool stores_op_type_totals() const { return totals_stored_; }
  // The run's events in [t0_ns, t1_ns) by name, as the timeline's range statistics count a trace
  // loaded whole (views/timeline/timeline_source.h, range_time): of a trace with Op events only
  // those, else all but its Run events; an event's time clipped to the range, one of no duration
  // counted when it starts in it. A range covering the whole trace reads its stored totals (schema
  // 8); any other is an aggregate per track over the index on (run, track, ts), from t0_ns less the
  // track's longest event to t1_ns. On a connection of its own, so safe from any thread and holding
  // up no window query; `cancelled`, polled every few thousand steps, interrupts it (an error).
  Expected<std::vector<RangeNameTotal>> range_totals(int run, int64_t t0_ns, int64_t t1_ns,
                                                     const std::function<bool()>& cancelled = {}) const;

 private:
  SessionReader() = default;
  std::string path_;
  int version_ = 0;
  sqlite3* db_ = nullptr;
  bool totals_stored_ = false;
  struct OpTypeTotals {
    std::mutex mutex;
    std::map<int, std::vector<std::pair<std::string, int64_t>>> by_run;
  };
  std::shared_ptr<OpTypeTotals> op_types_ = std::make_shared<OpTypeTotals>();
};

// What a session holds, for a log line: "2 runs (PyNative, Graph), 2 traces (1 kept in the file),
// 17 pass snapshots, 4 rank traces, 2 training curves, the numerics"; parts with nothing left out
// ("nothing" when it holds nothing).
std::string describe_contents(const SessionData& d);

// The comparison of the PyNative and the Graph run (the last of each) when `d` holds both runs but no
// comparison report while a trace stays in `reader`'s file: files before schema 3 stored the
// comparison without its report, and the app compares anew only traces it loaded whole. The traces
// left in the file are read whole and compared, and the report is stored in `d.comparisons`, unless
// both traces together pass `max_events` events. The note is "" when nothing was missing, else one
// line naming the file: what was done, or why the comparison could not be made.
struct CompletedComparison {
  bool compared = false;  // the report was made and stored
  std::string note;
};
CompletedComparison complete_comparison(const SessionReader& reader, SessionData& d, int64_t max_events);

}  // namespace ms::session
