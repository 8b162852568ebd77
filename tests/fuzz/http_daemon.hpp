// The configuration the HTTP fuzz target runs the daemon with: one backend that is never there
// (jobs fail fast), a token, and every other setting the daemon's default. The daemon itself
// is built by daemon::assembly, as logitauditd builds it; suite.route_tables checks that this
// configuration serves the daemon's whole route table.
#pragma once

#include <string>

#include "config/daemon_config.hpp"

namespace logitaudit::fuzz {

inline config::daemon_config http_daemon_config(const std::string& database) {
  config::daemon_config c;
  c.database = database;
  c.listen = "127.0.0.1:0";
  config::backend_entry b;
  b.name = "b";
  b.url = "http://127.0.0.1:1";
  c.backends.push_back(b);
  c.tokens = {"fuzz-token-1"};
  return c;
}

}  // namespace logitaudit::fuzz
