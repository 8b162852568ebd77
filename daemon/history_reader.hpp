// The history service over the stored audits: reads each series' audits on the db thread (the
// baselines' digests, the verdict counts, the bursts' verdicts, the fingerprints, the
// predictions) and classifies them with audit::analyse_series.
#pragma once

#include "api/history_service.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

namespace net = boost::asio;

class history_reader final : public api::history_service {
 public:
  history_reader(storage::db_worker& db, audit::history_thresholds thresholds, audit::evidence_thresholds evidence)
      : db_(db), thresholds_(thresholds), evidence_(evidence) {}
  net::awaitable<std::vector<api::series_view>> series(storage::series_filter filter, int audits) override;
  net::awaitable<std::vector<storage::alert_delivery>> deliveries(int limit) override;

 private:
  storage::db_worker& db_;
  audit::history_thresholds thresholds_;
  audit::evidence_thresholds evidence_;  // which baselines were alone
};

// One stored job as an audit of the series on `backend` (exposed for the tests and the CLI's
// offline use). Reads runs without their streams' bytes. Its baselines are the solo baseline
// runs whose evidence says they were alone (no company, no cache reuse): the only numbers that
// witness a change of the server. Fillers, cache primers, neighbours and probes never count.
audit::series_audit load_series_audit(storage::store& s, const storage::job_record& job, const std::string& backend,
                                      const audit::evidence_thresholds& evidence);

// The label of a solo baseline in a series: its prompt, and its sampling when not greedy.
std::string baseline_label(const storage::run_record& r);

}  // namespace logitaudit::daemon
