// The tests' PostgreSQL: a private cluster (scripts/postgres-cluster.sh), either the one the
// ctest fixture `postgres` started for the whole run, or, when a test binary runs on its own,
// one this process starts on first use and stops when it exits.
#pragma once

#include <string>

namespace logitaudit::test_support {

// The cluster's admin URL (database "postgres", user "la", trust authentication).
std::string postgres_admin_url();

// A new empty database on that cluster, dropped (with every connection to it) when this goes.
class postgres_database {
 public:
  postgres_database();
  ~postgres_database();
  postgres_database(const postgres_database&) = delete;
  postgres_database& operator=(const postgres_database&) = delete;
  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }

 private:
  std::string admin_;  // kept: the destructor may run at exit, after the statics it came from
  std::string name_;
  std::string url_;
};

// A cluster of one test's own (scripts/postgres-cluster.sh), for the faults that stop it:
// halted as a crash would, resumed on the same port; stopped and deleted when this goes.
// Throws std::runtime_error when the script fails.
class private_postgres {
 public:
  explicit private_postgres(bool durable = false);
  ~private_postgres();
  private_postgres(const private_postgres&) = delete;
  private_postgres& operator=(const private_postgres&) = delete;
  const std::string& url() const { return url_; }  // its admin URL (database "postgres")
  void halt();
  void resume();

 private:
  std::string state_;
  std::string url_;
};

}  // namespace logitaudit::test_support
