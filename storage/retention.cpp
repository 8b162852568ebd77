// Pruning stream bytes, through the SQL connection (both engines speak this SQL).
#include "retention.hpp"

#include "copy.hpp"
#include "documents.hpp"
#include "sql.hpp"

namespace logitaudit::storage {
namespace {

// The audits that a stored spec (of an audit or a schedule) names as its reference.
std::set<std::int64_t> referenced_audits(sql_connection& db) {
  std::set<std::int64_t> out;
  for (const char* table : {"jobs", "schedules"}) {
    auto& s = db.prepare(std::string("SELECT spec_json FROM ") + table + " WHERE spec_json LIKE '%\"reference\"%'");
    while (s.step())
      if (auto spec = decode_spec(s.text(0)); spec && spec->reference_audit) out.insert(*spec->reference_audit);
    s.reset();
  }
  return out;
}

}  // namespace

prune_result prune_stream_bytes(store& st, const std::string& finished_before, const std::string& now) {
  auto& db = connection_of(st);
  prune_result r;
  r.kept_as_reference = referenced_audits(db);
  std::string keep;
  for (const auto id : r.kept_as_reference) keep += (keep.empty() ? "" : ", ") + std::to_string(id);
  const std::string which =
      " FROM streams WHERE pruned_at = '' AND run_id IN (SELECT r.id FROM runs r JOIN jobs j ON j.id = r.job_id "
      "WHERE r.compared = 1 AND j.finished_at <> '' AND j.finished_at < ?1 "
      "AND j.status IN ('done', 'failed', 'cancelled', 'interrupted')" +
      (keep.empty() ? std::string() : " AND j.id NOT IN (" + keep + ")") + ")";
  transaction t(db);
  auto& count = db.prepare("SELECT count(*), coalesce(sum(length(encoding)), 0)" + which);
  count.bind(1, finished_before);
  count.step();
  r.streams = count.integer(0);
  r.bytes = count.integer(1);
  count.reset();
  if (r.streams > 0) {
    auto& audits = db.prepare("SELECT DISTINCT job_id FROM runs WHERE id IN (SELECT run_id" + which + ")");
    audits.bind(1, finished_before);
    while (audits.step()) r.audits.insert(audits.integer(0));
    audits.reset();
  }
  // substr(x, 1, 0) is an empty value of the column's own type on both engines.
  auto& prune = db.prepare("UPDATE streams SET encoding = substr(encoding, 1, 0), pruned_at = ?2 WHERE run_id IN "
                           "(SELECT run_id" + which + ")");
  prune.bind(1, finished_before).bind(2, now);
  prune.run();
  t.commit();
  return r;
}

}  // namespace logitaudit::storage
