// The persistent FIFO of audits: queued jobs are taken in order, never two on one backend,
// and each runs through the lifecycle on the audits' own executor and thread, so that no API
// request can delay a burst. Jobs an earlier process left running are resumed first (or marked
// interrupted). In a fleet, jobs are leased instead: the oldest whose backends no daemon holds,
// and running jobs whose daemon stopped renewing its lease (taken over and resumed); a cancel
// or a shutdown stops a job at its next group boundary; whoever waits for a job's end is woken
// when it comes. Repros (repro_jobs.hpp) are jobs of this queue too: each holds its backend and
// runs on the audits' thread; a daemon runs its own. Not thread-safe: it lives on the executor
// it was made with (the API's), except idle(), which any thread may call.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "job_lifecycle.hpp"
#include "loop_health.hpp"
#include "repro_jobs.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

// A daemon of a fleet (a shared PostgreSQL database): it leases the jobs it runs instead of
// taking them from the queue alone (storage::fleet_repository).
struct fleet_settings {
  std::string member;  // this process's id, joined already
  int lease_ttl_s = 15;
  int heartbeat_s = 3;
};

struct queue_config {
  int max_running_jobs = 2;
  std::optional<fleet_settings> fleet;
  bool resume_interrupted = true;  // jobs an earlier process left running: resume, or mark interrupted
  std::chrono::milliseconds poll{1000};  // how often the queue is looked at without a wake-up
};

// What one stored group adds to the daemon's counters (small, so it crosses threads cheaply).
struct group_stats {
  std::string backend;
  std::size_t requests = 0;  // requests sent, every attempt counted
  std::size_t failed = 0;    // of the group's requests, failed after their retries
  std::size_t retries = 0;   // the group's attempts beyond its first
  std::optional<std::int64_t> launch_spread_ns;  // bursts only
};

class job_queue;

// A backend held for a selftest or a repro for as long as this lives (job_queue::hold); moved,
// never copied. Its destructor releases it: in the daemon at once, in the fleet's database by
// a task on the db thread (or by expiry, lease_ttl_s after the last heartbeat).
class backend_hold {
 public:
  backend_hold() = default;
  backend_hold(job_queue* queue, std::string backend, std::string holder)
      : queue_(queue), backend_(std::move(backend)), holder_(std::move(holder)) {}
  backend_hold(backend_hold&& o) noexcept
      : queue_(std::exchange(o.queue_, nullptr)), backend_(std::move(o.backend_)), holder_(std::move(o.holder_)) {}
  backend_hold& operator=(backend_hold&& o) noexcept {
    if (this != &o) {
      reset();
      queue_ = std::exchange(o.queue_, nullptr);
      backend_ = std::move(o.backend_);
      holder_ = std::move(o.holder_);
    }
    return *this;
  }
  backend_hold(const backend_hold&) = delete;
  backend_hold& operator=(const backend_hold&) = delete;
  ~backend_hold() { reset(); }
  explicit operator bool() const { return queue_ != nullptr; }
  void reset();

 private:
  job_queue* queue_ = nullptr;
  std::string backend_, holder_;
};

class job_queue {
 public:
  // `ex` is where the queue lives; `audits` where the jobs run.
  job_queue(net::any_io_executor ex, net::any_io_executor audits, storage::db_worker& db, job_lifecycle& lifecycle,
            repro_jobs& repros, queue_config config);

  // Observers, called on the queue's executor: every stored group, every job's end.
  std::function<void(const group_stats&)> on_group;
  std::function<void(const job_end&)> on_end;
  // Where the dispatch and heartbeat loops report their passes (null: nowhere).
  loop_health* health = nullptr;

  // Resumes (or marks) jobs left running by an earlier process, then dispatches.
  void start();
  // Stops taking jobs; running jobs stop at their next group boundary and stay running in the
  // database, to be resumed on the next start.
  void stop();
  bool started() const { return started_; }
  bool stopping() const { return stopping_; }
  // No job runs here. Safe from any thread.
  bool idle() const { return running_count_.load() == 0; }
  // Look at the queue now (a job was queued).
  void wake();

  bool is_running(std::int64_t id) const { return running_.count(id) > 0; }
  bool busy(const std::string& backend) const { return busy_backends_.count(backend) > 0; }
  // Where audits run: the measuring thread, whose bursts no API request can delay.
  const net::any_io_executor& audits() const { return audits_; }
  // Holds `backend` for work other than an audit (`holder`: "selftest", "repro 12") as long
  // as the returned hold lives: no audit, repro or selftest starts on it meanwhile, here or
  // (in a fleet) in any daemon of the database, through the backend's lease an audit takes
  // too. An empty hold when something holds it already. Suspends (the lease is taken on the
  // db thread); throws storage_error when the database fails. On the queue's executor.
  net::awaitable<backend_hold> hold(std::string backend, std::string holder);
  static const std::string managed_servers_key;
  // A running repro's live progress here; nullptr when none runs here under `id`.
  const repro_live* repro_progress(std::int64_t id) const;
  // Asks a repro running here to stop at its next probe, as its user; false when it is not
  // running here.
  bool cancel_repro(std::int64_t id);
  // Asks a running job to stop at its next group boundary, as its user; false when it is not
  // running here.
  bool cancel(std::int64_t id);
  // Completes when job `id` is no longer running here.
  net::awaitable<void> until_stopped(std::int64_t id);
  // Completes when no job runs here (after stop(): when every job reached its boundary).
  net::awaitable<void> until_idle();
  // Completes when job `id` changes (a group of it is stored, it ends here, or notify says
  // so), or after `timeout`.
  net::awaitable<void> until_change(std::int64_t id, std::chrono::milliseconds timeout);
  // Job `id` changed without running here (cancelled while queued, deleted): wake its waiters.
  void notify(std::int64_t id);
  // The key a repro's waiters wait under (until_change, notify): audits and repros are
  // numbered apart.
  static std::int64_t waiter_key(std::int64_t repro) { return -repro; }

 private:
  struct running_job {
    std::int64_t id = 0;
    std::shared_ptr<job_stop> stop = std::make_shared<job_stop>();
    std::vector<std::string> backends;
  };
  net::awaitable<void> dispatch_loop();
  net::awaitable<void> recover_left();
  // One look at the queue: launches what may run here now.
  net::awaitable<void> dispatch_once();
  net::awaitable<void> dispatch_leased();
  // Renews this member's leases while it runs jobs or takes them; stops jobs cancelled
  // through another member.
  net::awaitable<void> heartbeat_loop();
  // What a job holds here while it runs: its backends' names, and the managed servers' key.
  static std::vector<std::string> backends_of(storage::job_holding job);
  void launch(std::int64_t id, std::vector<std::string> backends);
  // Repros (this daemon's own): queued ones start before queued audits, each holding its
  // backend; those an earlier process left running are resumed from their start or marked.
  net::awaitable<void> dispatch_repros();
  net::awaitable<void> recover_repros();
  // In a fleet: the unfinished repros of daemons no longer alive become this one's (a running
  // one is queued again, or marked interrupted), since member names change with every start.
  net::awaitable<void> adopt_orphaned_repros();
  void launch_repro(const storage::repro_record& r, backend_hold held);
  friend class backend_hold;
  void release(const std::string& backend, const std::string& holder);  // what a backend_hold does when it goes
  std::size_t running_total() const { return running_.size() + repros_running_.size(); }
  void ended(const std::shared_ptr<running_job>& job, std::exception_ptr e, job_end end);

  net::any_io_executor ex_, audits_;
  storage::db_worker& db_;
  job_lifecycle& lifecycle_;
  repro_jobs& repros_;
  queue_config config_;
  net::steady_timer wake_;
  // Before the repros, whose holds release into them when the queue goes.
  std::set<std::string> busy_backends_;
  std::set<std::string> holds_;  // of those, the ones a backend_hold holds (a selftest, a repro)
  std::map<std::int64_t, std::shared_ptr<running_job>> running_;
  struct running_repro {
    backend_hold held;
    std::shared_ptr<repro_live> live = std::make_shared<repro_live>();
  };
  std::map<std::int64_t, running_repro> repros_running_;
  std::atomic<std::size_t> running_count_{0};  // running_total(), readable from other threads
  std::map<std::int64_t, std::vector<std::shared_ptr<net::steady_timer>>> waiters_;
  bool started_ = false;
  bool stopping_ = false;
};

}  // namespace logitaudit::daemon
