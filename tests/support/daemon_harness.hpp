// logitauditd's parts wired in this process, as daemon/main.cpp wires them: a real SQLite
// file, the lifecycle, the queue (audits on their own thread), the service, the scheduler,
// the read model and the REST server on a loopback port. For API tests where the daemon
// binary adds nothing; tests wait on events (an audit's end, a schedule's fire), never on time.
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

#include "api/http_server.hpp"
#include "api/metrics.hpp"
#include "api/read_model.hpp"
#include "daemon/alerts.hpp"
#include "daemon/fleet_reader.hpp"
#include "daemon/history_reader.hpp"
#include "daemon/job_lifecycle.hpp"
#include "daemon/job_queue.hpp"
#include "daemon/job_service.hpp"
#include "daemon/scheduler.hpp"
#include "http_call.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::test_support {

struct harness_options {
  std::map<std::string, std::string> backends;  // configured: name -> URL
  std::map<std::string, std::string> model_paths;  // configured: name -> the model file the daemon hashes
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
  daemon::alert_settings alerts;
  std::size_t read_cache_bytes = 64u << 20;
  clients::managed_options managed;  // models and llama-server of managed backends and sweeps
  std::string database;  // default: a fresh file in the temp folder, removed at the end
  std::function<void(storage::db_worker&)> before_start;  // rows an earlier process left
};

class daemon_harness {
 public:
  explicit daemon_harness(harness_options o);
  // Stops it as SIGTERM does: the server, the scheduler, then every running job at a boundary.
  ~daemon_harness();

  unsigned short port() const;
  storage::db_worker& db() { return *db_; }
  api::router& routes() { return routes_; }
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

 private:
  boost::asio::io_context io_{1}, audits_{1};
  std::string database_;
  bool remove_database_ = false;
  std::unique_ptr<storage::db_worker> db_;
  api::daemon_metrics metrics_;
  std::unique_ptr<api::read_model> reads_;
  std::unique_ptr<daemon::job_lifecycle> lifecycle_;
  std::unique_ptr<daemon::job_queue> queue_;
  std::unique_ptr<daemon::job_service> service_;
  std::unique_ptr<daemon::scheduler> scheduler_;
  std::unique_ptr<daemon::history_reader> history_;
  std::unique_ptr<daemon::fleet_reader> fleet_;
  std::unique_ptr<daemon::alerter> alerts_;
  api::router routes_;
  std::unique_ptr<api::http_server> server_;
  std::thread io_thread_, audit_thread_;
  std::mutex fire_mutex_;
  std::condition_variable fire_cv_;
  std::vector<std::int64_t> fires_;
};

}  // namespace logitaudit::test_support
