#include "app/session/sqlite_db.h"

#include <cstring>

namespace ms::session::sql {

Status db_error(sqlite3* db, const std::string& file, const std::string& what) {
  const int code = db ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  const char* msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  return io_error(file + ": " + what + " (" + (msg ? msg : "unknown error") + ")");
}

Status exec(sqlite3* db, const std::string& file, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) == SQLITE_OK) return Status::ok();
  std::string msg = err ? err : sqlite3_errmsg(db);
  sqlite3_free(err);
  return io_error(file + ": " + msg);
}

Stmt::Stmt(sqlite3* db, const std::string& file, const char* sql) : db_(db), file_(file) {
  if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK) {
    fail("cannot read the session");
    sqlite3_finalize(st_);
    st_ = nullptr;
  }
}

Stmt::~Stmt() { sqlite3_finalize(st_); }

void Stmt::fail(const char* what) {
  if (status_.is_ok()) status_ = db_error(db_, file_, what);
}

Stmt& Stmt::bind(int i, int64_t v) {
  if (st_ && sqlite3_bind_int64(st_, i, v) != SQLITE_OK) fail("cannot bind a value");
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  if (st_ && sqlite3_bind_double(st_, i, v) != SQLITE_OK) fail("cannot bind a value");
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view text) {
  if (st_ && sqlite3_bind_text64(st_, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8) != SQLITE_OK)
    fail("cannot bind a value");
  return *this;
}

Stmt& Stmt::bind_blob(int i, const void* data, size_t n) {
  static const char kEmpty = 0;
  if (st_ && sqlite3_bind_blob64(st_, i, n ? data : &kEmpty, n, SQLITE_TRANSIENT) != SQLITE_OK)
    fail("cannot bind a value");
  return *this;
}

bool Stmt::step() {
  if (!ok()) return false;
  const int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) fail("cannot read the session");
  return false;
}

bool Stmt::run() {
  if (!ok()) return false;
  const int rc = sqlite3_step(st_);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) fail("cannot write the session");
  reset();
  return ok();
}

void Stmt::reset() {
  if (!st_) return;
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

int64_t Stmt::i64(int col) const { return sqlite3_column_int64(st_, col); }
double Stmt::f64(int col) const { return sqlite3_column_double(st_, col); }
int Stmt::type(int col) const { return sqlite3_column_type(st_, col); }
int Stmt::columns() const { return st_ ? sqlite3_column_count(st_) : 0; }

std::string Stmt::text(int col) const {
  const unsigned char* p = sqlite3_column_text(st_, col);
  const int n = sqlite3_column_bytes(st_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

std::string Stmt::blob(int col) const {
  const void* p = sqlite3_column_blob(st_, col);
  const int n = sqlite3_column_bytes(st_, col);
  return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

template <class T> std::string pack(const std::vector<T>& v) {
  std::string b(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <class T> std::vector<T> unpack(const std::string& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

std::string pack_doubles(const std::vector<double>& v) { return pack(v); }
std::vector<double> unpack_doubles(const std::string& b) { return unpack<double>(b); }
std::string pack_u64(const std::vector<uint64_t>& v) { return pack(v); }
std::vector<uint64_t> unpack_u64(const std::string& b) { return unpack<uint64_t>(b); }

std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += e + "\n";
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    const size_t nl = s.find('\n', at);
    const size_t end = nl == std::string::npos ? s.size() : nl;
    out.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace ms::session::sql
