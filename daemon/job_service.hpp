// The daemon's audit service: a persistent FIFO job queue in SQLite, run by the job runner
// with a configurable number of jobs at once but never two on the same backend, cancel at
// group boundaries, and resumption of interrupted jobs. All state lives on one executor;
// the database is reached only through the db thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/audit_service.hpp"
#include "api/metrics.hpp"
#include "clients/backend.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

namespace net = boost::asio;

struct service_config {
  std::map<std::string, clients::backend_config> backends;  // configured, by name
  bool allow_adhoc_backends = false;  // jobs may name URLs that are not configured
  int max_running_jobs = 2;
  int max_queued_jobs = 100;  // submissions beyond it are refused (field "queue")
  bool resume_interrupted = true;  // jobs an earlier process left running: resume, or mark interrupted
  audit::spec_limits limits;
  std::chrono::milliseconds poll{1000};  // how often the queue is looked at without a wake-up
  api::daemon_metrics* metrics = nullptr;  // counts requests, failures and burst spreads when set
};

// Not thread-safe: use from the executor it was made with.
class job_service final : public api::audit_service {
 public:
  job_service(net::any_io_executor ex, storage::db_worker& db, service_config config);

  // Resumes jobs left running by an earlier process, then starts the dispatcher.
  void start();
  // Stops taking jobs; running jobs stop at their next group boundary and stay `running`
  // in the database, to be resumed on the next start. `drained` completes when they have.
  void stop();
  // Safe from any thread (tests and shutdown poll it from outside the io thread).
  bool idle() const { return running_count_.load() == 0; }

  net::awaitable<expected<api::job_summary, std::vector<audit::spec_problem>>> submit(audit::audit_spec spec) override;
  // The same for a schedule's fire: the job is linked to the schedule.
  net::awaitable<expected<api::job_summary, std::vector<audit::spec_problem>>> submit_scheduled(audit::audit_spec spec,
                                                                                             std::int64_t schedule);
  // Fills configured backends' URLs into `spec` and reports the backends it may not use.
  std::vector<audit::spec_problem> resolve_backends(audit::audit_spec& spec) const;
  net::awaitable<std::optional<api::job_summary>> job(std::int64_t id) override;
  net::awaitable<std::vector<api::job_summary>> jobs(std::string status, std::string tag, std::int64_t before,
                                                     int limit) override;
  net::awaitable<std::optional<audit::findings>> findings(std::int64_t id) override;
  net::awaitable<std::optional<std::vector<api::run_view>>> runs(std::int64_t id, std::string condition,
                                                                 std::string backend) override;
  net::awaitable<std::optional<api::stream_view>> stream(std::int64_t id, std::int64_t run) override;
  net::awaitable<api::cancel_outcome> cancel(std::int64_t id) override;
  net::awaitable<expected<api::job_comparison, std::string>> compare(std::int64_t a, std::int64_t b) override;
  net::awaitable<bool> remove(std::int64_t id) override;
  net::awaitable<std::string> backends_json() override;
  net::awaitable<std::map<std::string, std::int64_t>> job_counts() override;
  bool ready() const override { return started_ && !stopping_; }
  const std::string* rendered_report(std::int64_t id, const std::string& format) override;
  void keep_rendered_report(std::int64_t id, const std::string& format, std::string body) override;

  struct running_job;  // shared with the job coroutines

 private:
  net::awaitable<void> dispatch_loop();
  void wake();
  net::awaitable<expected<api::job_summary, std::vector<audit::spec_problem>>> enqueue(audit::audit_spec spec,
                                                                                    std::optional<std::int64_t> schedule);

  // Ended audits (done, failed, cancelled) do not change until deleted: their summary,
  // findings and runs are kept here, least recently used out first, so that reading them —
  // what dashboards and pollers do most — never waits on the db thread. Touched only on the
  // io thread.
  struct ended_entry {
    std::optional<api::job_summary> summary;
    std::optional<audit::findings> findings;
    std::optional<std::vector<api::run_view>> runs;  // all of them, when there are not too many
    std::map<std::string, std::string> reports;      // rendered, by format
    std::uint64_t last_used = 0;
  };
  ended_entry* ended(std::int64_t id);
  net::awaitable<std::optional<audit::findings>> findings_from_db(std::int64_t id);
  net::awaitable<std::optional<std::vector<api::run_view>>> runs_from_db(std::int64_t id, std::string condition,
                                                                         std::string backend);
  ended_entry& remember(std::int64_t id);
  std::map<std::int64_t, ended_entry> ended_;
  std::uint64_t use_clock_ = 0;

  net::any_io_executor ex_;
  storage::db_worker& db_;
  service_config config_;
  net::steady_timer wake_;
  std::map<std::int64_t, std::shared_ptr<running_job>> running_;
  std::atomic<std::size_t> running_count_{0};  // running_.size(), readable from other threads
  std::set<std::string> busy_backends_;
  bool started_ = false;
  bool stopping_ = false;
};

}  // namespace logitaudit::daemon
