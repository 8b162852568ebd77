// The daemon-facing subcommands: submit, list, status, report, runs, stream, compare, cancel,
// schedule add|list|show|rm, backends. Each talks to logitauditd's REST API (--server,
// LOGITAUDIT_SERVER; token from LOGITAUDIT_TOKEN), prints tables for people and the server's
// JSON with --json. Exit codes: exit_codes.hpp.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "daemon_client.hpp"

namespace logitaudit::cli {

void add_remote_commands(CLI::App& app);

// The daemon a command talks to: `server` (its --server), else `logitaudit --server`, else
// $LOGITAUDIT_SERVER, else http://127.0.0.1:8700; the token from $LOGITAUDIT_TOKEN.
daemon_client connect_daemon(const std::string& server);

}  // namespace logitaudit::cli
