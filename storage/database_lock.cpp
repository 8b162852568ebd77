// flock(2) on the database's lock file, opened close-on-exec so that children (llama-servers
// the daemon starts) never inherit and keep it.
#include "database_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace logitaudit::storage {

expected<database_lock, std::string> database_lock::acquire(const std::string& database, const std::string& holder) {
  if (database == ":memory:" || database.empty()) return database_lock(-1, "");
  const std::string path = database + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return unexpected{"cannot open the lock file " + path + ": " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string who;
    char buf[512];
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n > 0) who.assign(buf, static_cast<std::size_t>(n));
    while (!who.empty() && (who.back() == '\n' || who.back() == '\0')) who.pop_back();
    ::close(fd);
    if (err != EWOULDBLOCK) return unexpected{"cannot lock " + path + ": " + std::strerror(err)};
    return unexpected{"database " + database + " is in use by " + (who.empty() ? "another process" : who) +
                      ": one process at a time runs audits on a SQLite database (several daemons need PostgreSQL)"};
  }
  // Ours now: say who we are for the next one that tries.
  const std::string line = holder + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    // The lock holds even if the note about it could not be written.
  }
  return database_lock(fd, path);
}

database_lock::~database_lock() {
  if (fd_ < 0) return;
  // Leave the file (removing it would race with a process that just opened it); the lock
  // goes with the descriptor.
  ::close(fd_);
}

}  // namespace logitaudit::storage
