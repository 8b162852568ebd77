// Table by table, parents before children, rows by their keys; values bound with the type
// they have in the source row, so that integers, doubles (bit for bit), text and bytes cross
// engines unchanged.
#include "copy.hpp"

#include "sql.hpp"

namespace logitaudit::storage {
namespace {

struct table {
  const char* name;
  const char* order;  // its key, for a stable copy order
  bool has_id;        // an `id` column the engine assigns
};

// Every table of the shared schema (not the migrations' bookkeeping, not the fleet's leases).
constexpr table kTables[] = {
    {"schedules", "id", true},          {"jobs", "id", true},
    {"job_backends", "job_id, backend", false}, {"fingerprints", "job_id, backend, phase", false},
    {"groups", "job_id, group_index", false},   {"bursts", "job_id, group_index", false},
    {"runs", "id", true},               {"streams", "run_id", false},
    {"verdicts", "run_id", false},      {"predictions", "job_id, prediction_id", false},
    {"alert_deliveries", "id", true},   {"schedule_fires", "schedule_id, fire_unix", false},
    {"selftests", "id", true},          {"repros", "id", true},
};

std::int64_t count(sql_connection& c, const std::string& t) {
  auto& s = c.prepare("SELECT count(*) FROM " + t);
  s.step();
  const auto n = s.integer(0);
  s.reset();
  return n;
}

}  // namespace

// The SQL connection of an engine of sql_repositories (every engine open_store() opens).
sql_connection& connection_of(store& s) {
  auto* sql = dynamic_cast<sql_backed*>(&s);
  if (!sql) throw storage_error(storage_error::kind::broken, s.location() + " is not an SQL database: it cannot be copied");
  return sql->connection();
}

copy_report copy_database(store& from, store& to) {
  auto& src = connection_of(from);
  auto& dst = connection_of(to);
  if (const auto jobs = count(dst, "jobs"), schedules = count(dst, "schedules"); jobs + schedules > 0)
    throw storage_error(storage_error::kind::conflict, to.location() + " holds " + std::to_string(jobs) + " audit(s) and " +
                                                           std::to_string(schedules) +
                                                           " schedule(s): copy into a new, empty database");
  copy_report report;
  transaction t(dst);
  for (const auto& tb : kTables) {
    auto& rows = src.prepare(std::string("SELECT * FROM ") + tb.name + " ORDER BY " + tb.order);
    sql_statement* insert = nullptr;
    std::int64_t n = 0;
    while (rows.step()) {
      const int cols = rows.columns();
      if (!insert) {
        std::string names, params;
        for (int c = 0; c < cols; ++c) {
          names += (c ? ", " : "") + rows.column_name(c);
          params += (c ? ", ?" : "?") + std::to_string(c + 1);
        }
        insert = &dst.prepare(std::string("INSERT INTO ") + tb.name + " (" + names + ") VALUES (" + params + ")");
      }
      for (int c = 0; c < cols; ++c) {
        switch (rows.column_type(c)) {
          case sql_type::integer: insert->bind(c + 1, rows.integer(c)); break;
          case sql_type::real: insert->bind(c + 1, rows.real(c)); break;
          case sql_type::text: insert->bind(c + 1, rows.text(c)); break;
          case sql_type::blob: insert->bind_blob(c + 1, rows.blob(c)); break;
          case sql_type::unknown: insert->bind_null(c + 1); break;
        }
      }
      insert->run();
      ++n;
    }
    rows.reset();
    if (tb.has_id) dst.follow_ids(tb.name);
    report.rows.emplace_back(tb.name, n);
  }
  t.commit();
  return report;
}

}  // namespace logitaudit::storage
