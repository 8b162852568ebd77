// The tests' PostgreSQL cluster and their throwaway databases.
#include "postgres.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

#include "storage/postgres.hpp"

namespace logitaudit::test_support {
namespace {

namespace fs = std::filesystem;

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

bool answers(const std::string& url) {
  try {
    storage::pg_connection c(url);
    return true;
  } catch (const storage::storage_error&) {
    return false;
  }
}

// A cluster started by this process, stopped when it exits.
struct own_cluster {
  fs::path state = fs::temp_directory_path() / ("logitaudit-pg-" + std::to_string(::getpid()) + ".state");
  std::string url;
  own_cluster() {
    const std::string cmd = "bash '" LOGITAUDIT_SOURCE_DIR "/scripts/postgres-cluster.sh' start '" + state.string() + "' >/dev/null";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("could not start a PostgreSQL cluster: " + cmd);
    url = first_line(state);
  }
  ~own_cluster() {
    const std::string cmd = "bash '" LOGITAUDIT_SOURCE_DIR "/scripts/postgres-cluster.sh' stop '" + state.string() + "'";
    [[maybe_unused]] const int rc = std::system(cmd.c_str());
  }
};

}  // namespace

std::string postgres_admin_url() {
  static std::once_flag once;
  static std::string url;
  std::call_once(once, [] {
#ifdef LOGITAUDIT_POSTGRES_STATE
    if (const auto shared = first_line(LOGITAUDIT_POSTGRES_STATE); !shared.empty() && answers(shared)) {
      url = shared;
      return;
    }
#endif
    static own_cluster cluster;
    url = cluster.url;
  });
  return url;
}

postgres_database::postgres_database() {
  static std::atomic<int> counter{0};
  name_ = "t" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  admin_ = postgres_admin_url();
  storage::pg_connection c(admin_);
  c.exec("CREATE DATABASE " + name_);
  url_ = admin_.substr(0, admin_.rfind('/') + 1) + name_;
}

postgres_database::~postgres_database() {
  try {
    storage::pg_connection c(admin_);
    c.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception&) {  // the cluster is gone with the run
  }
}

namespace {

void cluster(const std::string& verb, const std::string& state, const std::string& extra = "") {
  const std::string cmd = "bash '" LOGITAUDIT_SOURCE_DIR "/scripts/postgres-cluster.sh' " + verb + " '" + state + "' " + extra;
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("postgres-cluster.sh " + verb + " failed: " + cmd);
}

}  // namespace

private_postgres::private_postgres(bool durable) {
  static std::atomic<int> count{0};
  state_ = (fs::temp_directory_path() / ("logitaudit-pg-own-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(++count) + ".state"))
               .string();
  cluster("start", state_, durable ? "--durable >/dev/null" : ">/dev/null");
  url_ = first_line(state_);
}

private_postgres::~private_postgres() {
  try {
    cluster("stop", state_);
  } catch (const std::exception&) {  // a test's end: nothing left to tell
  }
}

void private_postgres::halt() { cluster("halt", state_); }
void private_postgres::resume() { cluster("resume", state_); }

}  // namespace logitaudit::test_support
