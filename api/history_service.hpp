// What the history routes need from the daemon: the series the stored audits form, each with
// its newest audits and their classification (audit/history.hpp).
#pragma once

#include <boost/asio.hpp>
#include <map>
#include <vector>

#include "audit/history.hpp"
#include "storage/records.hpp"

namespace logitaudit::api {

struct series_view {
  storage::series_summary summary;
  std::vector<audit::series_audit> audits;  // oldest first
  std::map<std::int64_t, std::vector<storage::prediction_record>> predictions;  // by job
  audit::series_history history;
  audit::history_thresholds thresholds;
};

class history_service {
 public:
  virtual ~history_service() = default;
  // The series matching `filter` (the one with the newest audit first), each with its newest
  // `audits` audits, classified. Suspends; storage errors are exceptions.
  virtual boost::asio::awaitable<std::vector<series_view>> series(storage::series_filter filter, int audits) = 0;
  // The newest `limit` alert deliveries to webhooks, newest first.
  virtual boost::asio::awaitable<std::vector<storage::alert_delivery>> deliveries(int limit) = 0;
};

}  // namespace logitaudit::api
