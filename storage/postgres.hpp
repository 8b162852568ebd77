// PostgreSQL through libpq, as the engine-neutral interface of sql.hpp. Statements are
// prepared on the server once per session and parameter types, run with typed parameters and
// read back in binary format (exact doubles, raw bytea); `?N` and
// `?` in the shared SQL become `$N`. A connection that was lost is re-established at the next
// statement outside a transaction. Errors are storage_error exceptions, their kind read from
// the SQLSTATE. Only the PostgreSQL implementation includes this header.
#pragma once

#include <libpq-fe.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "repositories.hpp"
#include "sql.hpp"

namespace logitaudit::storage {

struct pg_conn_closer {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct pg_result_clearer {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using pg_result = std::unique_ptr<PGresult, pg_result_clearer>;

// The shared SQL's parameters (?N, and ? as SQLite numbers it) as PostgreSQL's $N.
std::string postgres_parameters(const std::string& sql);

class pg_connection;

class pg_statement final : public sql_statement {
 public:
  pg_statement(pg_connection& c, std::string sql) : c_(c), sql_(std::move(sql)) {}
  using sql_statement::bind;

  pg_statement& bind(int i, std::int64_t v) override;
  pg_statement& bind(int i, double v) override;
  pg_statement& bind(int i, std::string_view v) override;
  pg_statement& bind_blob(int i, std::span<const std::uint8_t> v) override;
  pg_statement& bind_null(int i, sql_type as = sql_type::unknown) override;

  bool step() override;
  void reset() override;

  std::int64_t integer(int col) const override;
  double real(int col) const override;
  bool is_null(int col) const override;
  std::string text(int col) const override;
  std::vector<std::uint8_t> blob(int col) const override;
  int columns() const override { return result_ ? PQnfields(result_.get()) : 0; }
  std::string column_name(int col) const override { return PQfname(result_.get(), col); }
  sql_type column_type(int col) const override;

 private:
  struct param {
    unsigned type = 0;  // an Oid; 0 lets the server infer it
    bool null = true;
    bool binary = false;
    std::string value;
  };
  param& at(int i);

  pg_connection& c_;
  std::string sql_;  // with $N parameters
  std::vector<param> params_;
  // Server-side prepared statements of this text, by parameter types, on the connection's
  // current session (a reconnect starts a new one).
  std::map<std::vector<unsigned>, std::string> prepared_;
  std::uint64_t session_ = 0;
  pg_result result_;
  int row_ = -1;
  int rows_ = 0;
};

class pg_connection final : public sql_connection {
 public:
  // Connects to `url` (postgresql://user[:password]@host[:port]/database[?options]).
  // Throws storage_error (kind unavailable) naming the URL without its password.
  explicit pg_connection(const std::string& url);

  sql_dialect dialect() const override { return sql_dialect::postgresql; }
  void exec(std::string_view sql) override;
  pg_statement& prepare(const std::string& sql) override;
  std::int64_t changes() const override { return changes_; }
  void begin() override;
  void commit() override;
  void rollback() noexcept override;
  std::string location() const override { return redacted_; }
  void follow_ids(const std::string& table) override;
  void suspend(const std::string& why) override { suspended_ = why; }
  void resume() override { suspended_.clear(); }

  // Prepares `sql` on the server under a new name; returns the name. Throws storage_error.
  std::string prepare_on_server(const std::string& sql, const std::vector<unsigned>& types);
  // Runs prepared statement `name`; the result is tuples or a command's. Throws storage_error.
  pg_result run_prepared(const std::string& name, const std::string& sql, const std::vector<const char*>& values,
                         const std::vector<int>& lengths, const std::vector<int>& formats);
  // Counts the server sessions: prepared statements belong to one.
  std::uint64_t session() const { return session_; }
  // Reconnects a lost connection, unless a transaction was open on it (that one is gone): a
  // new session. Throws storage_error (kind unavailable).
  void ensure_connected();

 private:
  pg_result check(PGresult* r, std::string_view what);

  std::string url_;
  std::string redacted_;
  std::unique_ptr<PGconn, pg_conn_closer> conn_;
  std::unordered_map<std::string, std::unique_ptr<pg_statement>> cache_;
  std::int64_t changes_ = 0;
  bool in_transaction_ = false;
  std::string suspended_;
  std::uint64_t session_ = 1;
  std::uint64_t statements_ = 0;
};

}  // namespace logitaudit::storage
