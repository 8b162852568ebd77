// The one thread that touches the database. Callers hand it work and never block on disk:
// group and fingerprint writes are queued and committed in batches (each group still whole),
// other work runs in order, against the storage interfaces. Writes that find the database
// server unreachable are held and tried again (for up to two minutes before their jobs fail); while
// any are held, other work fails at once as unavailable, so nothing reads around them and
// the API keeps answering (503). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "repositories.hpp"

namespace logitaudit::storage {

class db_worker {
 public:
  using opener = std::function<std::unique_ptr<store>()>;
  // Opens the store with `open` on the worker thread; rethrows what `open` throws.
  explicit db_worker(opener open);
  // open_store(location), capped at `max_bytes` when > 0 and the engine is a file.
  explicit db_worker(std::string location, std::int64_t max_bytes = 0);
  ~db_worker();  // writes what is queued, then stops
  db_worker(const db_worker&) = delete;
  db_worker& operator=(const db_worker&) = delete;

  // Queues one finished group of `job`; returns at once. The plan it points into must
  // outlive the write (flush() waits for it).
  void enqueue_group(std::int64_t job, group_write g);
  // Queues one fingerprint of `job`; returns at once. Held and retried like a group; one
  // that still cannot be written is logged and missing, which the audit's validity names.
  void enqueue_fingerprint(std::int64_t job, fingerprint_write f);

  // Runs `fn` on the worker thread after everything queued before it; the future carries
  // its result or its exception.
  template <class F>
  auto submit(F fn) -> std::future<decltype(fn(std::declval<store&>()))> {
    using R = decltype(fn(std::declval<store&>()));
    auto task = std::make_shared<std::packaged_task<R(store&)>>(std::move(fn));
    auto fut = task->get_future();
    post([task](store& s) { (*task)(s); });
    return fut;
  }

  // Runs `fn` on the worker thread after everything queued before it; returns at once.
  // Exceptions from `fn` are the caller's to catch inside `fn`.
  void post(std::function<void(store&)> fn);

  // Blocks until everything queued so far is on disk.
  void flush();
  // The first of `job`'s group writes that failed ("" if none): that job must end failed.
  // Errors are per job, so a full disk during one job does not fail the next one.
  std::string write_error(std::int64_t job) const;
  std::size_t batches_committed() const;

 private:
  void loop(opener open, std::promise<void> opened);
  // Writes `batch` (held writes first), one transaction per job; the jobs whose server was
  // unreachable stay in held_, unless the outage outlasted max_outage_.
  void write(store& db, std::vector<std::pair<std::int64_t, group_write>> batch,
             std::vector<std::pair<std::int64_t, fingerprint_write>> fingerprints);
  // Whether a failed write is held for another try (the server is unreachable, and has not
  // been for longer than max_outage_); starts the outage's clock.
  bool hold_after(const storage_error& e, std::string& outage);
  bool holding() const { return !held_.empty() || !held_fingerprints_.empty(); }

  std::chrono::milliseconds max_outage_{120000};
  std::vector<std::pair<std::int64_t, group_write>> held_;  // db thread only
  std::vector<std::pair<std::int64_t, fingerprint_write>> held_fingerprints_;  // db thread only
  // (job, group index) of held writes whose COMMIT was sent but not answered: they may be
  // stored already, and meeting them again as a unique-key conflict is no error.
  std::set<std::pair<std::int64_t, std::size_t>> unacknowledged_;  // db thread only
  std::chrono::steady_clock::time_point outage_since_, next_try_;
  std::chrono::milliseconds retry_delay_{100};

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void(store&)>> tasks_;
  std::vector<std::pair<std::int64_t, group_write>> pending_;
  std::vector<std::pair<std::int64_t, fingerprint_write>> pending_fingerprints_;
  bool stopping_ = false;
  std::map<std::int64_t, std::string> write_errors_;
  std::size_t batches_ = 0;
  std::thread thread_;
};

}  // namespace logitaudit::storage
