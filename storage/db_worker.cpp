// The database thread: drain pending group writes as one batch, then run queued tasks.
#include "db_worker.hpp"

#include <spdlog/spdlog.h>

namespace logitaudit::storage {

db_worker::db_worker(opener open) {
  std::promise<void> opened;
  auto ready = opened.get_future();
  thread_ = std::thread([this, open = std::move(open), p = std::move(opened)]() mutable { loop(std::move(open), std::move(p)); });
  try {
    ready.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

db_worker::db_worker(std::string location, std::int64_t max_bytes)
    : db_worker([location, max_bytes] {
        auto s = open_store(location);
        if (max_bytes > 0)
          if (auto* m = s->maintenance()) m->limit_size(max_bytes);
        return s;
      }) {}

db_worker::~db_worker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void db_worker::enqueue_group(std::int64_t job, group_write g) {
  {
    std::lock_guard lock(mutex_);
    pending_.emplace_back(job, std::move(g));
  }
  wake_.notify_all();
}

void db_worker::enqueue_fingerprint(std::int64_t job, fingerprint_write f) {
  {
    std::lock_guard lock(mutex_);
    pending_fingerprints_.emplace_back(job, std::move(f));
  }
  wake_.notify_all();
}

void db_worker::post(std::function<void(store&)> fn) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(fn));
  }
  wake_.notify_all();
}

void db_worker::flush() { submit([](store&) { return 0; }).get(); }

std::string db_worker::write_error(std::int64_t job) const {
  std::lock_guard lock(mutex_);
  auto it = write_errors_.find(job);
  return it == write_errors_.end() ? "" : it->second;
}

std::size_t db_worker::batches_committed() const {
  std::lock_guard lock(mutex_);
  return batches_;
}

namespace {

// After a lost COMMIT was retried and hit a unique key: the groups that attempt held are
// stored already; write the rest of `groups` (measured since). A group stored that this
// daemon never tried to write is a real conflict.
void write_after_lost_commit(store& db, std::int64_t job, std::vector<group_write>& groups,
                             const std::set<std::pair<std::int64_t, std::size_t>>& tried_before) {
  const auto stored = db.evidence().stored_groups(job);
  std::vector<group_write> rest;
  for (auto& g : groups) {
    const auto index = g.group->index;
    if (!stored.count(index)) rest.push_back(std::move(g));
    else if (!tried_before.count({job, index}))
      throw storage_error(storage_error::kind::conflict,
                          "group " + std::to_string(index) + " of audit " + std::to_string(job) +
                              " is stored already, though this daemon never wrote it");
  }
  groups = std::move(rest);
  if (!groups.empty()) db.evidence().record_groups(job, groups);
}

}  // namespace

bool db_worker::hold_after(const storage_error& e, std::string& outage) {
  using clock = std::chrono::steady_clock;
  if (e.why != storage_error::kind::unavailable) return false;
  if (outage.empty()) outage = e.what();
  if (outage_since_ == clock::time_point{}) outage_since_ = clock::now();
  return clock::now() - outage_since_ < max_outage_;
}

void db_worker::write(store& db, std::vector<std::pair<std::int64_t, group_write>> batch,
                      std::vector<std::pair<std::int64_t, fingerprint_write>> fingerprints) {
  using clock = std::chrono::steady_clock;
  const auto tried_before = unacknowledged_;
  batch.insert(batch.begin(), std::make_move_iterator(held_.begin()), std::make_move_iterator(held_.end()));
  held_.clear();
  fingerprints.insert(fingerprints.begin(), std::make_move_iterator(held_fingerprints_.begin()),
                      std::make_move_iterator(held_fingerprints_.end()));
  held_fingerprints_.clear();
  db.resume_statements();
  std::map<std::int64_t, std::vector<group_write>> by_job;
  for (auto& [job, g] : batch) by_job[job].push_back(std::move(g));
  std::string outage;
  for (auto& [job, groups] : by_job) {
    std::string error;
    bool hold = false;
    try {
      try {
        db.evidence().record_groups(job, groups);
      } catch (const storage_error& e) {
        if (e.why != storage_error::kind::conflict || tried_before.empty()) throw;
        // A COMMIT that reached the server before the connection broke.
        write_after_lost_commit(db, job, groups, tried_before);
      }
    } catch (const storage_error& e) {
      error = e.what();
      hold = hold_after(e, outage);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (hold) {
      for (auto& g : groups) {
        unacknowledged_.emplace(job, g.group->index);
        held_.emplace_back(job, std::move(g));
      }
      continue;
    }
    std::lock_guard lock(mutex_);
    if (error.empty()) ++batches_;
    else write_errors_.emplace(job, "storing results failed: " + error);
  }
  // A fingerprint write is idempotent (the first "before" stays, the last "after" wins), so a
  // lost COMMIT needs no care here.
  for (auto& [job, f] : fingerprints) {
    try {
      db.evidence().record_fingerprint(job, f.backend, f.phase, f.fingerprint, f.taken_at);
    } catch (const storage_error& e) {
      if (hold_after(e, outage)) {
        held_fingerprints_.emplace_back(job, std::move(f));
        continue;
      }
      spdlog::error("audit {}: storing the {} fingerprint of {} failed: {}", job, audit::to_string(f.phase), f.backend,
                    e.what());
    } catch (const std::exception& e) {
      spdlog::error("audit {}: storing the {} fingerprint of {} failed: {}", job, audit::to_string(f.phase), f.backend,
                    e.what());
    }
  }
  if (!holding()) {
    unacknowledged_.clear();
    outage_since_ = {};
    retry_delay_ = std::chrono::milliseconds(100);
    return;
  }
  next_try_ = clock::now() + retry_delay_;
  retry_delay_ = std::min(retry_delay_ * 2, std::chrono::milliseconds(2000));
  db.suspend_statements(outage + " (" + std::to_string(held_.size()) + " measured groups and " +
                        std::to_string(held_fingerprints_.size()) +
                        " fingerprints wait to be stored; they are written when the database answers again)");
}

void db_worker::loop(opener open, std::promise<void> opened) {
  std::unique_ptr<store> db;
  try {
    db = open();
    opened.set_value();
  } catch (...) {
    opened.set_exception(std::current_exception());
    return;
  }
  for (;;) {
    std::vector<std::pair<std::int64_t, group_write>> batch;
    std::vector<std::pair<std::int64_t, fingerprint_write>> fingerprints;
    std::deque<std::function<void(store&)>> tasks;
    bool stopping = false;
    {
      std::unique_lock lock(mutex_);
      const auto ready = [&] {
        return stopping_ || !pending_.empty() || !pending_fingerprints_.empty() || !tasks_.empty();
      };
      if (!holding()) wake_.wait(lock, ready);
      else wake_.wait_until(lock, next_try_, ready);  // held writes are tried again by then
      if (stopping_ && pending_.empty() && pending_fingerprints_.empty() && tasks_.empty() && !holding()) return;
      batch.swap(pending_);
      fingerprints.swap(pending_fingerprints_);
      tasks.swap(tasks_);
      stopping = stopping_;
    }
    // Writes first, so a task queued after a group sees it (or, while writes are held, fails
    // as unavailable). One transaction per job's batch.
    if (!holding() || stopping || std::chrono::steady_clock::now() >= next_try_) {
      write(*db, std::move(batch), std::move(fingerprints));
    } else {
      held_.insert(held_.end(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
      held_fingerprints_.insert(held_fingerprints_.end(), std::make_move_iterator(fingerprints.begin()),
                                std::make_move_iterator(fingerprints.end()));
    }
    for (auto& t : tasks) t(*db);
    if (stopping && holding()) {
      // Stopping with the server away: these groups are lost here; their jobs stay running in
      // the database and are measured again when resumed (their fingerprints taken again).
      std::lock_guard lock(mutex_);
      for (auto& [job, g] : held_) write_errors_.emplace(job, "storing results failed: the database did not come back");
      for (auto& [job, f] : held_fingerprints_)
        spdlog::error("audit {}: the {} fingerprint of {} is lost: the database did not come back", job,
                      audit::to_string(f.phase), f.backend);
      held_.clear();
      held_fingerprints_.clear();
    }
  }
}

}  // namespace logitaudit::storage
