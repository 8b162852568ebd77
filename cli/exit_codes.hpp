// The exit codes of every `logitaudit` subcommand, in one place (README, docs/cli.md).
#pragma once

#include <stdexcept>
#include <string>

namespace logitaudit::cli {

enum exit_code : int {
  exit_ok = 0,
  exit_findings = 1,      // a positive control came out identical (findings invalid); with --strict also
                          // a failed prediction; with --wait also an audit that failed or was cancelled
  exit_usage = 2,         // bad arguments or an unreadable spec file
  exit_unreachable = 3,   // the daemon (or, for `run`, every backend) could not be reached
  exit_database = 4,      // offline commands: the database cannot be opened or written
  exit_rejected = 5,      // the daemon refused the request (HTTP 4xx: invalid field, not found, ...)
  exit_server_error = 6,  // the daemon failed (HTTP 5xx)
  exit_internal = 70,     // a bug in logitaudit itself (sysexits' EX_SOFTWARE): the message says where
};

// Thrown by a subcommand to end the program with `code` after printing `what()` on stderr
// (nothing when it is empty). Subcommands never call std::exit: main() returns the code.
struct cli_failure : std::runtime_error {
  cli_failure(int c, const std::string& message) : std::runtime_error(message), code(c) {}
  int code;
};

}  // namespace logitaudit::cli
