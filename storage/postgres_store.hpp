// The PostgreSQL implementation of the storage interfaces, for fleets: the schema in its own
// numbered migrations (applied under an advisory lock, so daemons starting together migrate
// once), the queries of sql_repositories. The server does the chores a file needs
// (backups are pg_dump's), so maintenance() is nullptr.
#pragma once

#include <span>
#include <string>

#include "postgres.hpp"
#include "repositories.hpp"
#include "sql_repositories.hpp"

namespace logitaudit::storage {

inline constexpr int kPostgresSchemaVersion = 1;

std::span<const char* const> postgres_migrations();

class postgres_store final : public store {
 public:
  // Connects, then applies the migrations. Throws storage_error: unavailable (naming the URL
  // without its password), newer_schema.
  explicit postgres_store(const std::string& url);

  job_repository& jobs() override { return *repos_.jobs; }
  evidence_repository& evidence() override { return *repos_.evidence; }
  schedule_repository& schedules() override { return *repos_.schedules; }
  alert_repository& alerts() override { return *repos_.alerts; }
  file_maintenance* maintenance() override { return nullptr; }
  int schema_version() override;
  std::string location() const override { return db_.location(); }

  pg_connection& db() { return db_; }

 private:
  void migrate();

  pg_connection db_;
  sql_repositories repos_;
};

}  // namespace logitaudit::storage
