// logitauditd in this process: the daemon's own composition root (daemon::assembly) over a real
// SQLite file, with the API on one thread, the audits on another and the REST server on a
// loopback port. The options become a daemon_config, as a config file would; the clock and
// the store are the assembly's named hooks. For API tests where the daemon binary adds
// nothing; tests wait on events (an audit's end, a schedule's fire), never on time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "config/daemon_config.hpp"
#include "daemon/assembly.hpp"
#include "http_call.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::test_support {

struct harness_options {
  std::map<std::string, std::string> backends;  // configured: name -> URL
  std::map<std::string, std::string> model_paths;  // configured: name -> the model file the daemon hashes
  std::map<std::string, std::map<std::string, std::string>> machines;  // configured: name -> declared machine labels
  std::string api = "llama";                    // their API kind
  bool allow_adhoc = false;
  std::vector<std::string> tokens;
  bool protect_reads = false;
  bool resume_interrupted = true;
  int max_running_jobs = 2;
  int max_queued_jobs = 100;
  audit::spec_limits limits;
  audit::evidence_thresholds evidence;
  audit::history_thresholds history;
  config::alerts_config alerts;
  std::size_t read_cache_bytes = 64u << 20;
  config::daemon_config::retention_config retention;  // off by default (stream_bytes_days 0)
  config::managed_config managed;  // models and llama-server of managed backends and sweeps
  std::string database;  // default: a fresh file in the temp folder, removed at the end
  std::function<void(storage::db_worker&)> before_start;  // rows an earlier process left
  // The loops' watch: how often it judges, how long a loop is unhealthy before its alert.
  std::chrono::milliseconds loop_watch_period{5000};
  std::chrono::seconds loop_alert_after{30};
};

// The daemon_config the options stand for (what a config file with the same keys gives).
config::daemon_config config_of(const harness_options& o, const std::string& database);

class daemon_harness {
 public:
  explicit daemon_harness(harness_options o);
  // Stops it as SIGTERM does: the server, the scheduler, then every running job at a boundary.
  ~daemon_harness();

  unsigned short port() const;
  storage::db_worker& db() { return *db_; }
  // The daemon's background loops (thread-safe): a test may report a pass of its own there.
  daemon::loop_health& loops() { return parts_->loops(); }
  api::router& routes() { return parts_->routes(); }
  const std::string& database() const { return database_; }

  http_reply call(boost::beast::http::verb method, const std::string& target, const std::string& body = {},
                  const std::string& content_type = "application/json", const std::string& token = {}) const;
  // The audit once it is final (long polls of GET /v1/audits/{id}?wait=); throws after 10 min.
  nlohmann::json wait_final(std::int64_t id) const;
  // Submits `spec` (JSON text) and waits for the audit to end.
  nlohmann::json run(const std::string& spec) const;

  // The scheduler's clock (Unix seconds), and the next fire after `poke()`.
  std::atomic<std::int64_t> clock{1798761600};  // 2027-01-01T00:00:00Z
  void poke_scheduler();
  // The audit of the next schedule fire (0: it failed to submit); throws after 60 s.
  std::int64_t await_fire();
  // Returns once `n` alert deliveries have ended (delivered or failed) since the start;
  // throws after 60 s.
  void await_deliveries_ended(std::size_t n);
  // How many refreshes of the /metrics series gauges have completed, and a wait until more
  // than `seen` have (throws after 60 s): read the count, then the gauges, then wait on it.
  std::size_t gauges_refreshes();
  void await_gauges_refreshes_above(std::size_t seen);

 private:
  boost::asio::io_context io_{1}, audits_{1};
  std::string database_;
  bool remove_database_ = false;
  std::unique_ptr<storage::db_worker> db_;
  std::unique_ptr<daemon::assembly> parts_;
  std::thread io_thread_, audit_thread_;
  std::mutex events_mutex_;
  std::condition_variable events_cv_;
  std::vector<std::int64_t> fires_;
  std::size_t deliveries_ended_ = 0, refreshes_ = 0;
};

}  // namespace logitaudit::test_support
