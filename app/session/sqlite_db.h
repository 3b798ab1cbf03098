// A thin layer over SQLite's C API for the session store: a statement that binds and reads by
// position and reports errors as Status values naming the database's file. Internal to
// app/session (session_file*.cpp).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace ms::session::sql {

// "<file>: <what> (<sqlite message>)".
Status db_error(sqlite3* db, const std::string& file, const std::string& what);

// Runs statements without results; errors name `file`.
Status exec(sqlite3* db, const std::string& file, const char* sql);

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& file, const char* sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return st_ != nullptr && status_.is_ok(); }
  const Status& status() const { return status_; }

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view text);
  Stmt& bind_blob(int i, const void* data, size_t n);

  // A row is ready (true), the statement is done (false; status() tells whether it failed).
  bool step();
  // Runs a statement without results and resets it for the next binding; false on error.
  bool run();
  void reset();

  int64_t i64(int col) const;
  int i32(int col) const { return static_cast<int>(i64(col)); }
  double f64(int col) const;
  std::string text(int col) const;
  std::string blob(int col) const;
  int type(int col) const;
  int columns() const;
  sqlite3_stmt* raw() const { return st_; }

 private:
  void fail(const char* what);
  sqlite3* db_;
  std::string file_;
  sqlite3_stmt* st_ = nullptr;
  Status status_;
};

// Doubles stored as little-endian bytes in one BLOB (training curves, live-bytes curves).
std::string pack_doubles(const std::vector<double>& v);
std::vector<double> unpack_doubles(const std::string& b);
std::string pack_u64(const std::vector<uint64_t>& v);
std::vector<uint64_t> unpack_u64(const std::string& b);
// Lines of text in one TEXT column, each ended by '\n' (pass lists, bucket keys).
std::string join_lines(const std::vector<std::string>& v);
std::vector<std::string> split_lines(const std::string& s);

}  // namespace ms::session::sql
