// The SQLite implementation of the storage interfaces: one database file (or ":memory:"),
// its numbered migrations and its chores; the queries are the shared sql_repositories. Only storage/ and the
// storage tests include this; everyone else reaches it through repositories.hpp.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "repositories.hpp"
#include "sql_repositories.hpp"
#include "sqlite.hpp"

namespace logitaudit::storage {

inline constexpr int kSchemaVersion = 12;

// The numbered migrations (migration N brings version N-1 to N), for tests that build an
// older database and open it with this program.
std::span<const char* const> sqlite_migrations();

class sqlite_store final : public store, public sql_backed, private file_maintenance {
 public:
  // Opens or creates the database and applies the migrations. Refuses (storage_error,
  // kind newer_schema) a database whose schema is newer than this program's.
  explicit sqlite_store(const std::string& path);
  ~sqlite_store() override;

  job_repository& jobs() override { return *repos_.jobs; }
  evidence_repository& evidence() override { return *repos_.evidence; }
  schedule_repository& schedules() override { return *repos_.schedules; }
  alert_repository& alerts() override { return *repos_.alerts; }
  repro_repository& repros() override { return *repos_.repros; }
  file_maintenance* maintenance() override { return this; }
  fleet_repository* fleet() override { return nullptr; }
  int schema_version() override;
  sql_connection& connection() override { return db_; }
  void suspend_statements(const std::string& why) override { db_.suspend(why); }
  void resume_statements() override { db_.resume(); }
  std::string location() const override { return db_.path(); }

  // The connection itself, for tests that look at rows.
  database& db() { return db_; }

 private:
  void migrate();
  void limit_size(std::int64_t max_bytes) override;
  void vacuum() override;
  void backup(const std::string& destination) override;
  std::string integrity_check() override;
  void checkpoint() override;

  database db_;
  sql_repositories repos_;
};

}  // namespace logitaudit::storage
