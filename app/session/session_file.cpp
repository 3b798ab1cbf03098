#include "app/session/session_file.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "app/session/session_store.h"
#include "app/session/sqlite_db.h"
#include "engine/core/atomic_file.h"

namespace ms::session {

namespace {

using sql::Stmt;

// A connection closed when it goes out of scope.
struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

Status bad_file(const std::string& path, const std::string& what) { return invalid_model(path + ": " + what); }

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The checks that need no SQLite: the path is a readable regular file whose 100-byte header is an
// SQLite header of this application, of a schema this build reads, and whose size is what the
// header promises (a truncated copy fails here). Returns the schema version.
Expected<int> check_header(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return Status::error(ErrorCode::NotFound, path + ": cannot open the session (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) return bad_file(path, "is a folder, not a session file");
  if (!S_ISREG(st.st_mode)) return bad_file(path, "is not a regular file");
  if (st.st_size == 0) return bad_file(path, "empty file (0 bytes), not a Modescope session");
  unsigned char h[100] = {};
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error(path + ": cannot read the session (" + std::strerror(errno) + ")");
  f.read(reinterpret_cast<char*>(h), sizeof h);
  const auto got = static_cast<size_t>(f.gcount());
  if (got < sizeof h || std::memcmp(h, "SQLite format 3", 16) != 0)
    return bad_file(path, "not a Modescope session (not an SQLite database)");
  if (static_cast<int32_t>(be32(h + 68)) != kSessionApplicationId)
    return bad_file(path, "not a Modescope session (an SQLite database of another application)");
  const auto version = static_cast<int32_t>(be32(h + 60));
  if (version > kSessionSchemaVersion)
    return bad_file(path, "written by a newer Modescope (session schema " + std::to_string(version) +
                              "; this build reads up to " + std::to_string(kSessionSchemaVersion) + ")");
  if (version < 1) return bad_file(path, "damaged session (schema version " + std::to_string(version) + ")");
  const uint32_t raw_page = (uint32_t{h[16]} << 8) | h[17];
  const uint64_t page = raw_page == 1 ? 65536 : raw_page;
  const uint64_t pages = be32(h + 28);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (page < 512 || (page & (page - 1)) != 0) return bad_file(path, "damaged session (bad page size)");
  if (be32(h + 24) == be32(h + 92) && pages * page > size)
    return bad_file(path,
                    "truncated session (" + std::to_string(size) + " of " + std::to_string(pages * page) + " bytes)");
  if (size % page != 0)
    return bad_file(path,
                    "truncated or damaged session (" + std::to_string(size) + " bytes is not a whole number of pages)");
  return static_cast<int>(version);
}

std::string uri_of(const std::string& path) {
  std::string u = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      u += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      u += buf;
    }
  }
  return u + "?immutable=1";
}

// FNV-1a 64 over typed values: the digest of one table's rows.
struct Digest {
  uint64_t h = 1469598103934665603ull;
  void add(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
};

Status table_digest(sqlite3* db, const std::string& file, const std::string& table, int64_t& rows, std::string& hash) {
  const std::string q = "SELECT * FROM " + table + " ORDER BY rowid";
  Stmt st(db, file, q.c_str());
  Digest d;
  rows = 0;
  while (st.step()) {
    ++rows;
    for (int c = 0; c < st.columns(); ++c) {
      const int type = st.type(c);
      d.add(&type, sizeof type);
      if (type == SQLITE_INTEGER) {
        const int64_t v = st.i64(c);
        d.add(&v, sizeof v);
      } else if (type == SQLITE_FLOAT) {
        const double v = st.f64(c);
        d.add(&v, sizeof v);
      } else if (type != SQLITE_NULL) {
        const void* p = sqlite3_column_blob(st.raw(), c);
        const int n = sqlite3_column_bytes(st.raw(), c);
        d.add(&n, sizeof n);
        if (p) d.add(p, static_cast<size_t>(n));
      }
    }
  }
  hash = d.hex();
  return st.status();
}

Status write_digests(sqlite3* db, const std::string& file) {
  Stmt ins(db, file, "INSERT INTO digests VALUES(?, ?, ?)");
  for (const std::string& t : store::content_tables()) {
    int64_t rows = 0;
    std::string hash;
    MS_RETURN_IF_ERROR(table_digest(db, file, t, rows, hash));
    ins.bind(1, t).bind(2, rows).bind(3, hash).run();
  }
  return ins.status();
}

// `events` false leaves out the trace events' table (the biggest by far).
Status check_digests(sqlite3* db, const std::string& file, int version, bool events) {
  Stmt st(db, file, "SELECT tbl, rows, hash FROM digests");
  std::map<std::string, std::pair<int64_t, std::string>> stored;
  while (st.step()) stored[st.text(0)] = {st.i64(1), st.text(2)};
  MS_RETURN_IF_ERROR(st.status());
  for (const std::string& t : store::content_tables(version)) {
    if (!events && t == "trace_events") continue;
    auto it = stored.find(t);
    if (it == stored.end()) return bad_file(file, "damaged session (no digest of table " + t + ")");
    int64_t rows = 0;
    std::string hash;
    MS_RETURN_IF_ERROR(table_digest(db, file, t, rows, hash));
    if (rows != it->second.first || hash != it->second.second)
      return bad_file(file, "damaged session (the content of table " + t + " does not match its digest)");
  }
  return Status::ok();
}

Status integrity(sqlite3* db, const std::string& file) {
  Stmt st(db, file, "PRAGMA integrity_check(1)");
  if (!st.step()) {
    const Status& s = st.status();
    return bad_file(
        file, "damaged session (" + (s.is_ok() ? std::string("integrity check gave nothing") : s.message()) + ")");
  }
  const std::string first = st.text(0);
  if (first != "ok")
    return bad_file(file, "damaged session (integrity check: " + first.substr(0, first.find('\n')) + ")");
  return Status::ok();
}

// An error from SQLite while checking becomes "damaged": the file is not what its header says.
Status as_damaged(const std::string& file, const Status& s) {
  if (s.is_ok()) return s;
  std::string m = s.message();
  if (m.rfind(file + ": ", 0) == 0) m = m.substr(file.size() + 2);
  if (m.rfind("damaged", 0) == 0 || m.rfind("truncated", 0) == 0) return bad_file(file, m);
  return bad_file(file, "damaged session (" + m + ")");
}

// Older files are copied into memory and migrated there; the file itself is never written.
Expected<DbPtr> migrate_in_memory(DbPtr file_db, const std::string& path, int version) {
  sqlite3* raw = nullptr;
  if (sqlite3_open(":memory:", &raw) != SQLITE_OK) return sql::db_error(raw, path, "cannot migrate the session");
  DbPtr mem(raw);
  sqlite3_backup* b = sqlite3_backup_init(mem.get(), "main", file_db.get(), "main");
  if (!b || sqlite3_backup_step(b, -1) != SQLITE_DONE) {
    sqlite3_backup_finish(b);
    return sql::db_error(mem.get(), path, "cannot migrate the session");
  }
  sqlite3_backup_finish(b);
  for (const SessionMigration& m : session_migrations()) {
    if (m.from < version) continue;
    Status s = m.apply(mem.get());
    if (!s.is_ok())
      return bad_file(path, std::string("cannot migrate from schema ") + std::to_string(m.from) + " (" + m.what +
                                "): " + s.message());
  }
  return mem;
}

// Opens `path` read-only after every check; returns the connection and the schema version.
Expected<std::pair<DbPtr, int>> open_checked(const std::string& path, Verify verify) {
  MS_ASSIGN_OR_RETURN(const int version, check_header(path));
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(uri_of(path).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) return sql::db_error(db.get(), path, "cannot open the session");
  if (verify == Verify::All) MS_RETURN_IF_ERROR(as_damaged(path, integrity(db.get(), path)));
  if (verify != Verify::Header)
    MS_RETURN_IF_ERROR(as_damaged(path, check_digests(db.get(), path, version, verify == Verify::All)));
  // Only derived tables missing (SessionMigration::derived): read as it is.
  const std::vector<SessionMigration>& ms = session_migrations();
  if (std::any_of(ms.begin(), ms.end(), [&](const SessionMigration& m) { return m.from >= version && !m.derived; })) {
    MS_ASSIGN_OR_RETURN(db, migrate_in_memory(std::move(db), path, version));
  }
  return std::make_pair(std::move(db), version);
}

// A database in memory (SQLite's memdb), written to the file in one piece afterwards.
Expected<DbPtr> memory_db(const std::string& path) {
  sqlite3* raw = nullptr;
  // URI file names: traces left in other session files are attached read-only and immutable.
  const int flags_open = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI;
  if (sqlite3_open_v2(":memory:", &raw, flags_open, nullptr) != SQLITE_OK)
    return sql::db_error(raw, path, "cannot build the session");
  DbPtr db(raw);
  auto* buf = static_cast<unsigned char*>(sqlite3_malloc64(4096));
  const unsigned flags = SQLITE_DESERIALIZE_RESIZEABLE | SQLITE_DESERIALIZE_FREEONCLOSE;
  if (!buf || sqlite3_deserialize(db.get(), "main", buf, 0, 4096, flags) != SQLITE_OK)
    return sql::db_error(db.get(), path, "cannot build the session");
  return db;
}

// Attaches every file a run's trace was left in (SessionRun::trace_file) as src0, src1, ...
Expected<std::map<std::string, std::string>> attach_trace_files(sqlite3* db, const std::string& path,
                                                                const SessionData& data) {
  std::map<std::string, std::string> attached;
  for (const SessionRun& r : data.runs) {
    if (r.outcome.trace || r.trace_file.empty() || attached.count(r.trace_file)) continue;
    const std::string schema = "src" + std::to_string(attached.size());
    MS_RETURN_IF_ERROR(check_header(r.trace_file).status());
    Stmt at(db, path, "ATTACH DATABASE ? AS ?");
    at.bind(1, uri_of(r.trace_file)).bind(2, schema).run();
    if (!at.status().is_ok())
      return io_error(path + ": cannot copy the trace kept in " + r.trace_file + " (" + at.status().message() + ")");
    attached[r.trace_file] = schema;
  }
  return attached;
}

Status build(sqlite3* db, const std::string& path, const SessionData& data, uint64_t constant_budget) {
  MS_ASSIGN_OR_RETURN(auto attached, attach_trace_files(db, path, data));
  MS_RETURN_IF_ERROR(sql::exec(db, path, "PRAGMA page_size = 4096; PRAGMA journal_mode = OFF; BEGIN"));
  MS_RETURN_IF_ERROR(sql::exec(db, path, store::kSchema));
  MS_RETURN_IF_ERROR(sql::exec(db, path, store::kSchemaV2));
  MS_RETURN_IF_ERROR(sql::exec(db, path, store::kSchemaV3));
  MS_RETURN_IF_ERROR(sql::exec(db, path, store::kSchemaV4));
  MS_RETURN_IF_ERROR(sql::exec(db, path, store::kSchemaV5));
  MS_RETURN_IF_ERROR(sql::exec(db, path, store::kSchemaV6));
  MS_RETURN_IF_ERROR(sql::exec(db, path, store::kSchemaV7));
  MS_RETURN_IF_ERROR(sql::exec(db, path, store::kSchemaV8));
  {
    Stmt v(db, path, "INSERT INTO schema_version VALUES(?, ?)");
    v.bind(1, int64_t{kSessionSchemaVersion}).bind(2, std::string_view("modescope")).run();
    MS_RETURN_IF_ERROR(v.status());
  }
  MS_RETURN_IF_ERROR(store::write_data(db, path, data, attached, constant_budget));
  MS_RETURN_IF_ERROR(write_digests(db, path));
  const std::string pragmas = "PRAGMA user_version = " + std::to_string(kSessionSchemaVersion) +
                              "; PRAGMA application_id = " + std::to_string(kSessionApplicationId) + "; COMMIT";
  MS_RETURN_IF_ERROR(sql::exec(db, path, pragmas.c_str()));
  for (const auto& [file, schema] : attached)
    MS_RETURN_IF_ERROR(sql::exec(db, path, ("DETACH DATABASE " + schema).c_str()));
  return Status::ok();
}

Status migrate_1_to_2(sqlite3* db) {
  MS_RETURN_IF_ERROR(sql::exec(db, ":memory:", store::kSchemaV2));
  return sql::exec(db, ":memory:", "UPDATE schema_version SET version = 2");
}

// The runs with a trace, in a database being migrated.
Expected<std::vector<int>> traced_runs(sqlite3* db) {
  std::vector<int> runs;
  Stmt st(db, ":memory:", "SELECT run FROM trace_info ORDER BY run");
  while (st.step()) runs.push_back(st.i32(0));
  MS_RETURN_IF_ERROR(st.status());
  return runs;
}

Status migrate_2_to_3(sqlite3* db) {
  MS_RETURN_IF_ERROR(sql::exec(db, ":memory:", store::kSchemaV3));
  MS_ASSIGN_OR_RETURN(const std::vector<int> runs, traced_runs(db));
  for (int run : runs) MS_RETURN_IF_ERROR(store::derive_trace_rows(db, ":memory:", run));
  return sql::exec(db, ":memory:", "UPDATE schema_version SET version = 3");
}

Status migrate_3_to_4(sqlite3* db) {
  MS_RETURN_IF_ERROR(sql::exec(db, ":memory:", store::kSchemaV4));
  return sql::exec(db, ":memory:", "UPDATE schema_version SET version = 4");
}

Status migrate_4_to_5(sqlite3* db) {
  MS_RETURN_IF_ERROR(sql::exec(db, ":memory:", store::kSchemaV5));
  return sql::exec(db, ":memory:", "UPDATE schema_version SET version = 5");
}

// Schema 6's tables stay empty: the snapshots of an older file have no constant data.
Status migrate_5_to_6(sqlite3* db) {
  MS_RETURN_IF_ERROR(sql::exec(db, ":memory:", store::kSchemaV6));
  return sql::exec(db, ":memory:", "UPDATE schema_version SET version = 6");
}

// Schema 7's table stays empty: the subgraphs' initializers of an older file have no data (read as
// not kept), its tensor attributes keep the data its snapshots' JSON carries.
Status migrate_6_to_7(sqlite3* db) {
  MS_RETURN_IF_ERROR(sql::exec(db, ":memory:", store::kSchemaV7));
  return sql::exec(db, ":memory:", "UPDATE schema_version SET version = 7");
}

// Schema 8's totals are made from the stored events, one pass over each trace's.
Status migrate_7_to_8(sqlite3* db) {
  MS_RETURN_IF_ERROR(sql::exec(db, ":memory:", store::kSchemaV8));
  MS_ASSIGN_OR_RETURN(const std::vector<int> runs, traced_runs(db));
  for (int run : runs) MS_RETURN_IF_ERROR(store::derive_name_totals(db, ":memory:", run));
  return sql::exec(db, ":memory:", "UPDATE schema_version SET version = 8");
}

}  // namespace

const std::vector<SessionMigration>& session_migrations() {
  static const std::vector<SessionMigration> kMigrations = {
      {1, "each run's fallbacks and compiled graphs, the numerics", &migrate_1_to_2},
      {2, "each trace event's nesting depth, each iteration's op span", &migrate_2_to_3},
      {3, "the nodes of each run's fallbacks", &migrate_3_to_4},
      {4, "the ranks of a data-parallel training run", &migrate_4_to_5},
      {5, "the constant data of the pass snapshots", &migrate_5_to_6},
      {6, "the constant data nested in the pass snapshots", &migrate_6_to_7},
      {7, "each trace's time by kind and name of event", &migrate_7_to_8, /*derived=*/true}};
  return kMigrations;
}

std::string content_hash(std::string_view bytes) {
  Digest d;
  d.add(bytes.data(), bytes.size());
  return d.hex();
}

Expected<SessionModel> describe_model(const std::string& source, uint64_t embed_limit) {
  SessionModel m;
  m.source = source;
  struct stat st {};
  if (source.rfind("zoo:", 0) == 0 || source.rfind("generated:", 0) == 0 || ::stat(source.c_str(), &st) != 0 ||
      !S_ISREG(st.st_mode)) {
    m.kind = "spec";
    return m;
  }
  std::ifstream f(source, std::ios::binary);
  std::ostringstream bytes;
  bytes << f.rdbuf();
  if (!f.good() && !f.eof()) return io_error(source + ": cannot read the model for the session");
  std::string b = std::move(bytes).str();
  m.size = b.size();
  m.hash = content_hash(b);
  if (b.size() <= embed_limit) {
    m.kind = "embedded";
    m.bytes = std::move(b);
  } else {
    m.kind = "path";
  }
  return m;
}

Status save_session(const std::string& path, const SessionData& data, uint64_t constant_budget) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return io_error(path + ": is a folder, not a file");
  MS_ASSIGN_OR_RETURN(DbPtr db, memory_db(path));
  MS_RETURN_IF_ERROR(build(db.get(), path, data, constant_budget));
  sqlite3_int64 size = 0;
  unsigned char* bytes = sqlite3_serialize(db.get(), "main", &size, SQLITE_SERIALIZE_NOCOPY);
  if (!bytes || size < 100) return sql::db_error(db.get(), path, "cannot build the session");
  // Header bytes 18 and 19 (write and read format versions) are 2 in a WAL database.
  std::string header(reinterpret_cast<const char*>(bytes), 100);
  header[18] = header[19] = 2;
  AtomicFile out(path);
  out.write(header);
  out.write(std::string_view(reinterpret_cast<const char*>(bytes) + 100, static_cast<size_t>(size) - 100));
  return out.commit();
}

Expected<SessionData> load_session(const std::string& path) {
  MS_ASSIGN_OR_RETURN(SessionReader reader, SessionReader::open(path));
  return reader.load();
}

Status check_openable(const std::string& path, const SessionData& d) {
  if (!d.model.kind.empty()) return Status::ok();
  if (!d.runs.empty())
    return invalid_model(path + ": table model is empty, but table runs holds " + std::to_string(d.runs.size()) +
                         " run(s) of a model");
  if (d.ranks.empty() && d.training.empty())
    return invalid_model(path + ": table model is empty and so are rank_lanes and training: nothing to open");
  return Status::ok();
}

Expected<SessionReader> SessionReader::open(const std::string& path, bool verify_content) {
  return open(path, verify_content ? Verify::All : Verify::Header);
}

Expected<SessionReader> SessionReader::open(const std::string& path, Verify verify) {
  MS_ASSIGN_OR_RETURN(auto opened, open_checked(path, verify));
  SessionReader r;
  r.path_ = path;
  r.version_ = opened.second;
  r.db_ = opened.first.release();
  Stmt has(r.db_, path, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'trace_name_totals'");
  r.totals_stored_ = has.step() && has.i64(0) > 0;
  MS_RETURN_IF_ERROR(has.status());
  return r;
}

Expected<store::Connection> store::open_read_only(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(uri_of(path).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) return sql::db_error(db.get(), path, "cannot open the session");
  return db;
}

Expected<std::vector<std::pair<std::string, int64_t>>> SessionReader::op_type_totals(int run) const {
  {
    std::lock_guard<std::mutex> lock(op_types_->mutex);
    if (auto it = op_types_->by_run.find(run); it != op_types_->by_run.end()) return it->second;
  }
  std::vector<std::pair<std::string, int64_t>> totals;
  if (totals_stored_) {
    MS_ASSIGN_OR_RETURN(totals, store::read_op_type_totals(db_, path_, run, /*stored=*/true));
  } else {
    // Counted on a connection of its own: one step of the GROUP BY holds its connection for seconds.
    MS_ASSIGN_OR_RETURN(store::Connection db, store::open_read_only(path_));
    MS_ASSIGN_OR_RETURN(totals, store::read_op_type_totals(db.get(), path_, run, /*stored=*/false));
  }
  std::lock_guard<std::mutex> lock(op_types_->mutex);
  return op_types_->by_run[run] = std::move(totals);
}

SessionReader::SessionReader(SessionReader&& o) noexcept
    : path_(std::move(o.path_)),
      version_(o.version_),
      db_(std::exchange(o.db_, nullptr)),
      totals_stored_(o.totals_stored_),
      op_types_(std::move(o.op_types_)) {}

SessionReader& SessionReader::operator=(SessionReader&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    path_ = std::move(o.path_);
    version_ = o.version_;
    db_ = std::exchange(o.db_, nullptr);
    totals_stored_ = o.totals_stored_;
    op_types_ = std::move(o.op_types_);
  }
  return *this;
}

SessionReader::~SessionReader() { sqlite3_close(db_); }

Expected<SessionData> SessionReader::load() const { return load(-1); }

Expected<SessionData> SessionReader::load(int64_t max_trace_events) const {
  SessionData d;
  MS_RETURN_IF_ERROR(as_damaged(path_, store::read_data(db_, path_, d, max_trace_events)));
  return d;
}

Expected<std::vector<std::string>> SessionReader::run_labels() const {
  Stmt st(db_, path_, "SELECT label FROM runs ORDER BY id");
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.text(0));
  MS_RETURN_IF_ERROR(st.status());
  return out;
}

Expected<int64_t> SessionReader::event_count(int run) const {
  Stmt st(db_, path_, "SELECT events FROM trace_info WHERE run = ?");
  st.bind(1, int64_t{run});
  const int64_t n = st.step() ? st.i64(0) : 0;
  MS_RETURN_IF_ERROR(st.status());
  return n;
}

Expected<std::vector<prof::Event>> SessionReader::events_in_window(int run, uint32_t track, int64_t t0, int64_t t1,
                                                                   std::vector<int32_t>* depths) const {
  Stmt md(db_, path_, "SELECT max_dur FROM trace_tracks WHERE run = ? AND idx = ?");
  md.bind(1, int64_t{run}).bind(2, int64_t{track});
  const int64_t max_dur = md.step() ? md.i64(0) : 0;
  MS_RETURN_IF_ERROR(md.status());
  Stmt st(db_, path_,
          "SELECT ts, dur, kind, node, iteration, name, category, impl, args, depth FROM trace_events "
          "WHERE run = ?1 AND track = ?2 AND ts >= ?3 AND ts < ?4 AND ts + dur > ?5 ORDER BY ts");
  st.bind(1, int64_t{run}).bind(2, int64_t{track}).bind(3, t0 - max_dur).bind(4, t1).bind(5, t0);
  std::vector<prof::Event> out;
  if (depths) depths->clear();
  while (st.step()) {
    prof::Event e;
    if (depths) depths->push_back(st.i32(9));
    e.track = track, e.ts_ns = st.i64(0), e.dur_ns = st.i64(1);
    e.kind = static_cast<prof::EventKind>(st.i64(2)), e.node = st.i32(3), e.iteration = st.i32(4);
    e.name = static_cast<prof::StrId>(st.i64(5)), e.category = static_cast<prof::StrId>(st.i64(6));
    e.impl = static_cast<prof::StrId>(st.i64(7)), e.args = static_cast<prof::StrId>(st.i64(8));
    out.push_back(e);
  }
  MS_RETURN_IF_ERROR(st.status());
  return out;
}

Expected<std::vector<std::string>> SessionReader::trace_strings(int run) const {
  Stmt st(db_, path_, "SELECT text FROM trace_strings WHERE run = ? ORDER BY id");
  st.bind(1, int64_t{run});
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.text(0));
  MS_RETURN_IF_ERROR(st.status());
  return out;
}

}  // namespace ms::session
