// One process at a time runs jobs on a SQLite database: the daemon (or an offline `logitaudit
// run --db`) holds an exclusive lock on FILE.lock for as long as it lives. The kernel drops
// the lock when the process dies, even by SIGKILL, so a crash never leaves it stale. The lock
// file says who holds it, so that a second process can name the holder. Many daemons on one
// database need PostgreSQL and its leases.
#pragma once

#include <optional>
#include <string>

#include "audit/expected.hpp"

namespace logitaudit::storage {

class database_lock {
 public:
  // Takes the lock of `database` for `holder` (e.g. "logitauditd pid 42 listening on
  // 127.0.0.1:8700"). Does not wait. Errors: held by another process (the message names it and
  // what it said of itself), or the lock file cannot be opened. ":memory:" needs no lock.
  static expected<database_lock, std::string> acquire(const std::string& database, const std::string& holder);

  database_lock(database_lock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  database_lock& operator=(database_lock&&) = delete;
  database_lock(const database_lock&) = delete;
  ~database_lock();

 private:
  database_lock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace logitaudit::storage
