// The daemon-facing subcommands, registered family by family (remote_common.hpp). Every command
// is one or a few REST calls; what is printed is a table for people or, with --json, the
// daemon's own JSON (so scripts see exactly what the API promises in docs/api.md).
#include "remote_commands.hpp"

#include "remote_common.hpp"

namespace logitaudit::cli {

daemon_client connect_daemon(const std::string& server) {
  const std::string& given = server.empty() ? remote::global_server : server;
  return daemon_client(given.empty() ? remote::env_or("LOGITAUDIT_SERVER", "http://127.0.0.1:8700") : given,
                       remote::env_or("LOGITAUDIT_TOKEN", ""));
}

void add_remote_commands(CLI::App& app) {
  app.add_option("--server", remote::global_server, "logitauditd URL for daemon commands (also accepted after the command)");
  remote::add_submit(app);
  remote::add_replay(app);
  remote::add_audit_commands(app);
  remote::add_schedule(app);
  remote::add_history(app);
  remote::add_backends(app);
}

}  // namespace logitaudit::cli
