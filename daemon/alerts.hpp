// Alerts: when an audit ends, the transitions it made in its series (an unexplained step, one
// confirmed, noise, a rate shift, a change the fingerprint explains, a server that changed
// during the audit, a failed audit) go to the configured webhooks, signed, with retries and
// backoff. Each delivery is stored before its first attempt and updated after each, so the
// log is readable over the API and a delivery a stopped daemon left pending is resumed at the
// next start. Alerts run on the API's executor: they never delay or fail an audit.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "history_reader.hpp"
#include "loop_health.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

namespace net = boost::asio;

struct webhook {
  std::string url, secret;
  std::set<audit::alert_kind> on;  // empty: every kind
};

struct alert_settings {
  std::vector<webhook> webhooks;
  int attempts = 5;                        // per delivery
  std::chrono::milliseconds backoff{1000};  // before the second attempt; doubled after each
  std::chrono::milliseconds timeout{10'000};  // per attempt
};

class alerter {
 public:
  alerter(net::any_io_executor ex, storage::db_worker& db, history_reader& history, alert_settings settings);

  // Resumes the deliveries an earlier process left pending.
  void start();
  // Classifies the series of audit `job` and sends what it changed. Returns at once.
  void audit_ended(std::int64_t job);
  bool enabled() const { return !settings_.webhooks.empty(); }
  // A loop of the daemon made no progress for a while (loop_health): every webhook that takes
  // loop_unhealthy is told at once, without the database (which is often what failed).
  void loop_unhealthy(const loop_status& loop, const std::string& daemon);

  // Told after every attempt (delivery id, its status), on the executor; for tests.
  std::function<void(std::int64_t, audit::delivery_status)> on_attempt;
  loop_health* health = nullptr;  // where the database reads of alerts report failures (null: nowhere)

 private:
  net::awaitable<void> resume_pending();
  net::awaitable<void> classify_and_send(std::int64_t job);
  net::awaitable<void> classify_and_send_once(std::int64_t job);
  net::awaitable<void> deliver(std::int64_t id, webhook hook, std::string payload, int attempts_before);
  net::awaitable<void> deliver_unstored(webhook hook, std::string payload, std::string key);

  net::any_io_executor ex_;
  storage::db_worker& db_;
  history_reader& history_;
  alert_settings settings_;
};

}  // namespace logitaudit::daemon
