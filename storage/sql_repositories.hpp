// The repositories of repositories.hpp written once, in the SQL both engines speak, over a
// sql_connection (sql.hpp). Each engine's store owns the connection and its schema
// (sqlite_store, postgres_store) and hands the connection to these.
#pragma once

#include <memory>

#include "repositories.hpp"
#include "sql.hpp"

namespace logitaudit::storage {

struct sql_repositories {
  std::unique_ptr<job_repository> jobs;
  std::unique_ptr<evidence_repository> evidence;
  std::unique_ptr<schedule_repository> schedules;
  std::unique_ptr<alert_repository> alerts;
};

// Repositories over `c`, which must outlive them.
sql_repositories make_sql_repositories(sql_connection& c);

}  // namespace logitaudit::storage
