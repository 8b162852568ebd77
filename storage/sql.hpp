// What the stores need of a SQL engine: a connection that runs statements with numbered
// parameters (?1 or ?; a PostgreSQL connection rewrites them to $1), typed binds and typed
// columns, and a transaction guard (explicit commit, rollback in a noexcept destructor). The
// repositories (sql_repositories.cpp) are written once against this; sqlite.hpp and
// postgres.hpp implement it. Errors are storage_error exceptions (records.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "records.hpp"

namespace logitaudit::storage {

enum class sql_dialect { sqlite, postgresql };

// The type a NULL stands for, for engines that type their parameters.
enum class sql_type { unknown, integer, real, text, blob };

// A statement, reset for reuse: bind every parameter, step through the rows, reset. Not
// thread-safe.
class sql_statement {
 public:
  virtual ~sql_statement() = default;

  virtual sql_statement& bind(int i, std::int64_t v) = 0;
  virtual sql_statement& bind(int i, double v) = 0;
  virtual sql_statement& bind(int i, std::string_view v) = 0;
  virtual sql_statement& bind_blob(int i, std::span<const std::uint8_t> v) = 0;
  virtual sql_statement& bind_null(int i, sql_type as = sql_type::unknown) = 0;
  sql_statement& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  sql_statement& bind(int i, std::size_t v) { return bind(i, static_cast<std::int64_t>(v)); }
  sql_statement& bind(int i, bool v) { return bind(i, static_cast<std::int64_t>(v)); }
  sql_statement& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  sql_statement& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  template <class T>
  sql_statement& bind(int i, const std::optional<T>& v) {
    if (v) return bind(i, *v);
    if constexpr (std::is_floating_point_v<T>) return bind_null(i, sql_type::real);
    else if constexpr (std::is_integral_v<T>) return bind_null(i, sql_type::integer);
    else return bind_null(i, sql_type::text);
  }

  // One step: true when a row is available. Throws storage_error.
  virtual bool step() = 0;
  // Steps to completion (a statement without rows); resets for reuse.
  void run() {
    while (step()) {
    }
    reset();
  }
  virtual void reset() = 0;

  virtual std::int64_t integer(int col) const = 0;
  virtual double real(int col) const = 0;
  virtual bool is_null(int col) const = 0;
  virtual std::string text(int col) const = 0;
  virtual std::vector<std::uint8_t> blob(int col) const = 0;
  // The current row's shape, for copying rows whatever their table (storage/copy.hpp).
  virtual int columns() const = 0;
  virtual std::string column_name(int col) const = 0;
  // The value's type in this row (unknown for NULL).
  virtual sql_type column_type(int col) const = 0;
};

// One connection. Not thread-safe: a store keeps it on one thread.
class sql_connection {
 public:
  virtual ~sql_connection() = default;
  virtual sql_dialect dialect() const = 0;
  // Runs statements without parameters or rows (DDL, several separated by ';').
  virtual void exec(std::string_view sql) = 0;
  // A cached statement for `sql` (the same text gives the same statement, reset).
  virtual sql_statement& prepare(const std::string& sql) = 0;
  // Rows changed by the last statement that ran.
  virtual std::int64_t changes() const = 0;
  // A write transaction: SQLite takes the writer's lock at once (BEGIN IMMEDIATE).
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  // Where it lives, for messages (a path, or a URL without its password).
  virtual std::string location() const = 0;
  // Makes the next ids of `table`'s `id` column follow the largest stored one (after rows were
  // inserted with their ids).
  virtual void follow_ids(const std::string& table) = 0;
  // While suspended, every statement fails at once as unavailable, saying `why` (the db thread
  // holds group writes the server did not take: nothing may read around them).
  virtual void suspend(const std::string& why) { (void)why; }
  virtual void resume() {}
};

// begin() ... commit(); rolls back otherwise.
class transaction {
 public:
  explicit transaction(sql_connection& c) : c_(c) { c_.begin(); }
  ~transaction() noexcept {
    if (!done_) c_.rollback();
  }
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  void commit() {
    c_.commit();
    done_ = true;
  }

 private:
  sql_connection& c_;
  bool done_ = false;
};

// A store that speaks SQL: the engines of sql_repositories. copy_database reads and writes
// whole tables through its connection; nothing outside storage/ sees it.
class sql_backed {
 public:
  virtual ~sql_backed() = default;
  virtual sql_connection& connection() = 0;
};

}  // namespace logitaudit::storage
