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
  history_reader(storage::db_worker& db, audit::history_thresholds thresholds) : db_(db), thresholds_(thresholds) {}
  net::awaitable<std::vector<api::series_view>> series(storage::series_filter filter, int audits) override;
  net::awaitable<std::vector<storage::alert_delivery>> deliveries(int limit) override;

 private:
  storage::db_worker& db_;
  audit::history_thresholds thresholds_;
};

// One stored job as an audit of the series on `backend` (exposed for the tests and the CLI's
// offline use). Reads runs without their streams' bytes.
audit::series_audit load_series_audit(storage::store& s, const storage::job_record& job, const std::string& backend);

// The label of a solo baseline in a series: its prompt, and its sampling when not greedy.
std::string baseline_label(const storage::run_record& r);

}  // namespace logitaudit::daemon
