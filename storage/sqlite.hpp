// SQLite done the way SQLiteCpp does it: RAII connection and statements, typed binds, and a
// non-copyable transaction guard (BEGIN IMMEDIATE, explicit commit, rollback in a noexcept
// destructor). Errors are storage_error exceptions (records.hpp), their kind read from
// SQLite's result code. Only the SQLite implementation includes this header.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "records.hpp"

namespace logitaudit::storage {

struct db_closer {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct stmt_finalizer {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};

// A prepared statement, reset for reuse. Not thread-safe.
class statement {
 public:
  statement(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}

  statement& bind(int i, std::int64_t v);
  statement& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  statement& bind(int i, std::size_t v) { return bind(i, static_cast<std::int64_t>(v)); }
  statement& bind(int i, bool v) { return bind(i, static_cast<std::int64_t>(v)); }
  statement& bind(int i, double v);
  statement& bind(int i, std::string_view v);
  statement& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  statement& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  statement& bind_blob(int i, std::span<const std::uint8_t> v);
  statement& bind_null(int i);
  template <class T>
  statement& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }

  // One step: true when a row is available. Throws storage_error.
  bool step();
  // Steps to completion (a statement without rows); resets for reuse.
  void run();
  void reset();

  std::int64_t integer(int col) const { return sqlite3_column_int64(s_.get(), col); }
  double real(int col) const { return sqlite3_column_double(s_.get(), col); }
  bool is_null(int col) const { return sqlite3_column_type(s_.get(), col) == SQLITE_NULL; }
  std::string text(int col) const;
  std::vector<std::uint8_t> blob(int col) const;

 private:
  sqlite3* db_;
  std::unique_ptr<sqlite3_stmt, stmt_finalizer> s_;
};

// One connection. Not thread-safe: the store keeps it on one thread.
class database {
 public:
  // Opens (creating) the file with WAL, busy_timeout and foreign keys on. Throws storage_error.
  explicit database(const std::string& path);

  void exec(std::string_view sql);
  // A cached prepared statement for `sql` (the same text gives the same statement, reset).
  statement& prepare(const std::string& sql);
  std::int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_.get()); }
  int changes() const { return sqlite3_changes(db_.get()); }
  sqlite3* handle() const { return db_.get(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<sqlite3, db_closer> db_;
  std::unordered_map<std::string, std::unique_ptr<statement>> cache_;
};

// BEGIN IMMEDIATE (a writer takes the lock up front) ... commit(); rolls back otherwise.
class transaction {
 public:
  explicit transaction(database& db);
  ~transaction() noexcept;
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  void commit();

 private:
  database& db_;
  bool done_ = false;
};

[[noreturn]] void throw_sqlite(sqlite3* db, int rc, std::string_view what);
// The kind of a SQLite result code.
storage_error::kind error_kind(int rc);

}  // namespace logitaudit::storage
