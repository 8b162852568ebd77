// SQLite done the way SQLiteCpp does it: RAII connection and statements with typed binds, as
// the engine-neutral interface of sql.hpp. Errors are storage_error exceptions (records.hpp),
// their kind read from SQLite's result code. Only the SQLite implementation includes this header.
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
#include "sql.hpp"

namespace logitaudit::storage {

struct db_closer {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct stmt_finalizer {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};

// A prepared statement, reset for reuse. Not thread-safe.
class statement final : public sql_statement {
 public:
  statement(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  using sql_statement::bind;

  statement& bind(int i, std::int64_t v) override;
  statement& bind(int i, double v) override;
  statement& bind(int i, std::string_view v) override;
  statement& bind_blob(int i, std::span<const std::uint8_t> v) override;
  statement& bind_null(int i, sql_type as = sql_type::unknown) override;

  bool step() override;
  void reset() override;

  std::int64_t integer(int col) const override { return sqlite3_column_int64(s_.get(), col); }
  double real(int col) const override { return sqlite3_column_double(s_.get(), col); }
  bool is_null(int col) const override { return sqlite3_column_type(s_.get(), col) == SQLITE_NULL; }
  std::string text(int col) const override;
  std::vector<std::uint8_t> blob(int col) const override;
  int columns() const override { return sqlite3_column_count(s_.get()); }
  std::string column_name(int col) const override { return sqlite3_column_name(s_.get(), col); }
  sql_type column_type(int col) const override;

 private:
  sqlite3* db_;
  std::unique_ptr<sqlite3_stmt, stmt_finalizer> s_;
};

// One connection. Not thread-safe: the store keeps it on one thread.
class database final : public sql_connection {
 public:
  // Opens (creating) the file with WAL, busy_timeout and foreign keys on. Throws storage_error.
  explicit database(const std::string& path);

  sql_dialect dialect() const override { return sql_dialect::sqlite; }
  void exec(std::string_view sql) override;
  statement& prepare(const std::string& sql) override;
  std::int64_t changes() const override { return sqlite3_changes(db_.get()); }
  // BEGIN IMMEDIATE: a writer takes the lock up front.
  void begin() override { exec("BEGIN IMMEDIATE"); }
  void commit() override { exec("COMMIT"); }
  void rollback() noexcept override { sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr); }
  std::string location() const override { return path_; }
  void follow_ids(const std::string&) override {}  // an INTEGER PRIMARY KEY follows by itself
  sqlite3* handle() const { return db_.get(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<sqlite3, db_closer> db_;
  std::unordered_map<std::string, std::unique_ptr<statement>> cache_;
};

[[noreturn]] void throw_sqlite(sqlite3* db, int rc, std::string_view what);
// The kind of a SQLite result code.
storage_error::kind error_kind(int rc);

}  // namespace logitaudit::storage
