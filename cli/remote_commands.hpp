// The daemon-facing subcommands: submit, list, status, report, runs, stream, compare, cancel,
// schedule add|list|show|rm, backends. Each talks to logitauditd's REST API (--server,
// LOGITAUDIT_SERVER; token from LOGITAUDIT_TOKEN), prints tables for people and the server's
// JSON with --json. Exit codes: exit_codes.hpp.
#pragma once

#include <CLI/CLI.hpp>

namespace logitaudit::cli {

void add_remote_commands(CLI::App& app);

}  // namespace logitaudit::cli
