// Moving a database between engines (SQLite to PostgreSQL and back): every row of every table
// the audits live in, with its ids, in one transaction of the target.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "repositories.hpp"

namespace logitaudit::storage {

struct copy_report {
  std::vector<std::pair<std::string, std::int64_t>> rows;  // per table, in copy order
};

class sql_connection;

// The SQL connection of an engine of sql_repositories (every engine open_store() opens), for
// the chores that move rows whatever their table (this copy, evidence bundles). Throws
// storage_error (broken) for a store that is not SQL.
sql_connection& connection_of(store& s);

// Copies `from` into `to`, which must hold no audit and no schedule (storage_error, kind
// conflict, otherwise). Nothing of it stays in `to` when it fails. Throws storage_error.
copy_report copy_database(store& from, store& to);

}  // namespace logitaudit::storage
