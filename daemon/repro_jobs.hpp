// Repros, a job of their own (docs/explain.md): a divergent burst run of an ended audit,
// reduced against its configured backend's live server (audit/repro_search.hpp, the bursts in
// clients/repro.hpp). A repro is checked against the audit's stored evidence and stored
// queued; the queue (job_queue) holds its backend, runs it on the measuring thread like an
// audit, and it ends in the store with its outcome and bundle. A daemon that stops while one
// runs leaves it running in the store, and the next start resumes it from its beginning (or
// marks it interrupted, as it does audits).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "api/audit_service.hpp"
#include "audit/repro_search.hpp"
#include "job_lifecycle.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

// What the API sees of a running repro: written on the measuring thread, read on the API's.
struct repro_live {
  std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
  std::atomic<bool> by_user{false};  // the stop is a cancel; otherwise the daemon is stopping
  std::atomic<int> bursts{0};
  mutable std::mutex m;
  std::string phase;  // guarded by m
  std::string phase_now() const {
    std::lock_guard lock(m);
    return phase;
  }
};

class repro_jobs {
 public:
  // `member`: the daemon the repros it stores belong to ("" alone, a fleet member's name).
  repro_jobs(storage::db_worker& db, job_lifecycle& lifecycle, std::string member);

  // Checks a repro of `run` in `audit` against what is stored (the audit ended, the run
  // diverged in a burst, its backend is configured here) and stores it queued. Errors name
  // their field: not_found, not_ended, not_divergent, not_a_burst, unknown_backend,
  // invalid_repro.
  net::awaitable<expected<storage::repro_record, api::service_error>> create(std::int64_t audit, std::int64_t run,
                                                                            api::repro_settings settings);
  // Runs stored repro `id` to its end in the store, on the calling executor (the measuring
  // thread). Nothing when it is no longer queued (cancelled meanwhile).
  net::awaitable<void> run(std::int64_t id, std::shared_ptr<repro_live> live);

  const std::string& member() const { return member_; }

 private:
  storage::db_worker& db_;
  job_lifecycle& lifecycle_;
  std::string member_;
};

// The API's view of a stored repro, with a running one's live progress.
api::repro_view view_of(const storage::repro_record& r, const repro_live* live);

}  // namespace logitaudit::daemon
