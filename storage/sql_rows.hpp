// What the SQL repositories (sql_jobs.cpp, sql_evidence.cpp, sql_schedules.cpp, sql_alerts.cpp,
// sql_repros.cpp) share: multi-row inserts, ids a RETURNING clause gives, and the text forms of
// the columns that hold a map, a list, a status or a digest; and each repository's factory,
// for make_sql_repositories. Internal to storage/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/states.hpp"
#include "audit/stream_encoding.hpp"
#include "repositories.hpp"
#include "sql.hpp"
#include "sql_repositories.hpp"

namespace logitaudit::storage::sql_rows {

// Inserts rows [0, n) with multi-row VALUES, in chunks of 64, 32, ... 1 rows, so that a few
// statement texts (each prepared once) serve any count. bind_row(s, p, i) binds row i's
// columns from parameter p on; on_returned reads each row a RETURNING clause gives.
void insert_rows(sql_connection& db, const std::string& head, int cols, std::size_t n,
                 const std::function<void(sql_statement&, int, std::size_t)>& bind_row, const std::string& returning = "",
                 const std::function<void(sql_statement&)>& on_returned = {});
// Runs an INSERT ... RETURNING id and returns the id. Throws storage_error (broken) when none came.
std::int64_t returned_id(sql_statement& s);
// A map of names to hashes as "name\thash\n" lines, and back.
std::string hashes_text(const std::map<std::string, std::string>& m);
std::map<std::string, std::string> hashes_of(const std::string& text);
// Tags as a JSON array, and back (a text that is not one reads as none).
std::string tags_text(const std::vector<std::string>& tags);
std::vector<std::string> tags_of(const std::string& text);
// A stored status; throws storage_error (broken) for one this build does not know.
audit::job_status status_of(const std::string& s);
// A stored 16-byte digest; nullopt for any other length.
std::optional<audit::digest128> digest_of(const std::vector<std::uint8_t>& b);

// The one row a query by key read, if any.
template <class T>
std::optional<T> only(std::vector<T> rows) {
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::unique_ptr<job_repository> make_jobs(sql_connection& c, write_fence fence);
std::unique_ptr<evidence_repository> make_evidence(sql_connection& c, write_fence fence);
std::unique_ptr<schedule_repository> make_schedules(sql_connection& c);
std::unique_ptr<alert_repository> make_alerts(sql_connection& c);
std::unique_ptr<repro_repository> make_repros(sql_connection& c);

}  // namespace logitaudit::storage::sql_rows
