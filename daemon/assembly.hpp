// The composition root: every part of logitauditd and every route, built from one
// daemon_config. The daemon's main, the in-process test daemon, the HTTP fuzz target and the
// offline `logitaudit run` (through lifecycle_settings) all wire the daemon here, so that a new
// part or route family is added once. Tests replace the clock, the backends or the store
// through the named hooks below, and nothing else.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alerts.hpp"
#include "api/http_server.hpp"
#include "api/metrics.hpp"
#include "api/read_model.hpp"
#include "config/daemon_config.hpp"
#include "fleet_reader.hpp"
#include "history_reader.hpp"
#include "retention.hpp"
#include "job_lifecycle.hpp"
#include "job_queue.hpp"
#include "loop_health.hpp"
#include "job_service.hpp"
#include "scheduler.hpp"
#include "storage/database_lock.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

// The database a daemon runs on, opened as main opens it: the SQLite file locked against a
// second daemon, or the PostgreSQL database joined as a fleet member before anything writes.
struct opened_database {
  std::optional<storage::database_lock> lock;  // SQLite: held while the daemon runs
  std::unique_ptr<storage::db_worker> db;
  std::optional<fleet_settings> fleet;  // PostgreSQL: this member, joined
};
struct startup_failure {
  int exit_code;  // 2: a setting to fix; 4: the database failed
  std::string message;
};
// Opens `conf.database` for `listen` (what the lock file and the fleet table say about this
// process). Blocks; never throws.
expected<opened_database, startup_failure> open_database(const config::daemon_config& conf);

// What a test may replace. Each is named for what it replaces; empty means the real thing.
struct assembly_hooks {
  // The scheduler's clock in Unix seconds, and how long it sleeps at most between looks (a
  // clock that jumps needs short sleeps).
  std::function<std::int64_t()> clock;
  std::chrono::seconds clock_max_sleep{60};
  // Told of each schedule fire: the schedule and the audit it submitted (0: none).
  std::function<void(std::int64_t schedule, std::int64_t audit)> on_fire;
  // Told after each attempt of an alert's delivery, and after each refresh of the /metrics
  // series gauges (both on the API executor): what tests await instead of polling.
  std::function<void(std::int64_t delivery, audit::delivery_status)> on_alert_attempt;
  std::function<void()> on_gauges_refreshed;
  // Replaces the configured backends (name -> client config), e.g. with TLS settings a
  // config file cannot express.
  std::optional<std::map<std::string, clients::backend_config>> backends;
  // This daemon as GET /v1/fleet and the fleet's table show it (default: host, pid, listen).
  std::optional<storage::fleet_member> self;
  std::string version = LOGITAUDIT_VERSION;  // GET /v1/info, /openapi.json
  // How often the loops' health is judged, and how long a loop stays unhealthy before its
  // loop_unhealthy alert; a test wants both short.
  std::chrono::milliseconds loop_watch_period{5000};
  std::chrono::seconds loop_alert_after{30};
  // How long a client may take to send a request (default 30 s); a fuzzer wants it short.
  std::optional<std::chrono::seconds> read_timeout;
};

// Every part, alive together. Construct on the thread that will run `api`; nothing runs
// until start(). The store is the caller's (open_database, or a test's own db_worker).
class assembly {
 public:
  assembly(const config::daemon_config& conf, storage::db_worker& db, std::optional<fleet_settings> fleet,
           net::any_io_executor api, net::any_io_executor audits, assembly_hooks hooks = {});
  assembly(const assembly&) = delete;
  assembly& operator=(const assembly&) = delete;
  ~assembly();

  // Binds the REST server; throws boost::system::system_error when it cannot.
  void listen(const net::ip::tcp::endpoint& ep);
  unsigned short port() const { return server_->port(); }
  // Starts the queue (resuming what an earlier process left), the scheduler and the alerts.
  void start();
  // As SIGTERM does: stops accepting and scheduling, then lets every running job reach a
  // group boundary. Run on the `api` executor; completes when no job runs.
  net::awaitable<void> stop();

  api::router& routes() { return routes_; }
  const api::router& routes() const { return routes_; }
  job_lifecycle& lifecycle() { return lifecycle_; }
  daemon::scheduler& schedules() { return scheduler_; }
  api::daemon_metrics& metrics() { return metrics_; }
  loop_health& loops() { return loops_; }

 private:
  void add_routes(const config::daemon_config& conf, const assembly_hooks& hooks);

  loop_health loops_;  // first: every part below reports to it
  api::daemon_metrics metrics_;
  api::read_model reads_;
  job_lifecycle lifecycle_;
  repro_jobs repros_;
  job_queue queue_;
  job_service service_;
  daemon::scheduler scheduler_;
  history_reader history_;
  alerter alerts_;
  retention_keeper retention_;
  std::unique_ptr<fleet_reader> fleet_;
  api::router routes_;
  std::unique_ptr<api::http_server> server_;
  net::any_io_executor api_;
  std::string name_;  // this daemon, as a loop_unhealthy alert names it
  std::chrono::milliseconds loop_watch_period_;
};

}  // namespace logitaudit::daemon
