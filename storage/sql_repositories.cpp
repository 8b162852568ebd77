// The repositories over SQL, one file each (sql_jobs, sql_evidence, sql_schedules, sql_alerts,
// sql_repros), in the SQL SQLite and PostgreSQL share: numbered parameters, INSERT ... RETURNING,
// ON CONFLICT upserts; where the two differ (reading a JSON array) the connection's dialect picks
// the clause. This file builds them, and says what time it is in the stores' format.
#include "sql_repositories.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "sql_rows.hpp"

namespace logitaudit::storage {

sql_repositories make_sql_repositories(sql_connection& c, write_fence fence) {
  if (!fence) fence = [](std::int64_t) {};
  return {sql_rows::make_jobs(c, fence), sql_rows::make_evidence(c, fence), sql_rows::make_schedules(c), sql_rows::make_alerts(c),
          sql_rows::make_repros(c)};
}

namespace {

std::string utc_text(std::chrono::system_clock::time_point now) {
  using namespace std::chrono;
  const auto t = system_clock::to_time_t(now);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[96];
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ms));
  return b;
}

}  // namespace

std::string now_utc() { return utc_text(std::chrono::system_clock::now()); }

std::string utc_days_ago(int days) { return utc_text(std::chrono::system_clock::now() - std::chrono::hours(24) * days); }

}  // namespace logitaudit::storage
