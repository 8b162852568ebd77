// The repositories of repositories.hpp written once, in the SQL both engines speak, over a
// sql_connection (sql.hpp). Each engine's store owns the connection and its schema
// (sqlite_store, postgres_store) and hands the connection to these.
#pragma once

#include <functional>
#include <memory>

#include "repositories.hpp"
#include "sql.hpp"

namespace logitaudit::storage {

struct sql_repositories {
  std::unique_ptr<job_repository> jobs;
  std::unique_ptr<evidence_repository> evidence;
  std::unique_ptr<schedule_repository> schedules;
  std::unique_ptr<alert_repository> alerts;
  std::unique_ptr<repro_repository> repros;
};

// Called inside each transaction that writes a job's evidence, status or end, before it
// writes: throws (storage_error, kind lease_lost) when this process may no longer write the job.
using write_fence = std::function<void(std::int64_t job)>;

// Repositories over `c`, which must outlive them; `fence` may be empty (one process writes).
sql_repositories make_sql_repositories(sql_connection& c, write_fence fence = {});

}  // namespace logitaudit::storage
