// The PostgreSQL implementation of the storage interfaces, for fleets: the schema in its own
// numbered migrations (applied under an advisory lock, so daemons starting together migrate
// once), the queries of sql_repositories, and the fleet's leases, which also fence every write
// of a job. The server does the chores a file needs (backups are pg_dump's), so maintenance()
// is nullptr.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "postgres.hpp"
#include "repositories.hpp"
#include "sql_repositories.hpp"

namespace logitaudit::storage {

inline constexpr int kPostgresSchemaVersion = 9;

std::span<const char* const> postgres_migrations();

class postgres_store final : public store, public sql_backed {
 public:
  // Connects, then applies the migrations. Throws storage_error: unavailable (naming the URL
  // without its password), newer_schema.
  explicit postgres_store(const std::string& url);

  job_repository& jobs() override { return *repos_.jobs; }
  evidence_repository& evidence() override { return *repos_.evidence; }
  schedule_repository& schedules() override { return *repos_.schedules; }
  alert_repository& alerts() override { return *repos_.alerts; }
  repro_repository& repros() override { return *repos_.repros; }
  file_maintenance* maintenance() override { return nullptr; }
  fleet_repository* fleet() override { return fleet_.get(); }
  int schema_version() override;
  sql_connection& connection() override { return db_; }
  void suspend_statements(const std::string& why) override { db_.suspend(why); }
  void resume_statements() override { db_.resume(); }
  std::string location() const override { return db_.location(); }

  pg_connection& db() { return db_; }

 private:
  void migrate();
  // Refuses (lease_lost) a write to a job another member holds, or one that ended while this
  // member was not holding it; nothing before join().
  void fence(std::int64_t job);

  pg_connection db_;
  std::string member_;  // set by fleet().join()
  sql_repositories repos_;
  std::unique_ptr<fleet_repository> fleet_;
};

}  // namespace logitaudit::storage
