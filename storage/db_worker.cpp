// The database thread: drain pending group writes as one batch, then run queued tasks.
#include "db_worker.hpp"

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
    std::deque<std::function<void(store&)>> tasks;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !pending_.empty() || !tasks_.empty(); });
      if (stopping_ && pending_.empty() && tasks_.empty()) return;
      batch.swap(pending_);
      tasks.swap(tasks_);
    }
    // Writes first, so a task queued after a group sees it. One transaction per job's batch.
    std::map<std::int64_t, std::vector<group_write>> by_job;
    for (auto& [job, g] : batch) by_job[job].push_back(std::move(g));
    for (auto& [job, groups] : by_job) {
      try {
        db->evidence().record_groups(job, groups);
        std::lock_guard lock(mutex_);
        ++batches_;
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex_);
        write_errors_.emplace(job, std::string("storing results failed: ") + e.what());
      }
    }
    for (auto& t : tasks) t(*db);
  }
}

}  // namespace logitaudit::storage
