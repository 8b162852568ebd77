// `logitaudit run`: an audit run in this process, without the daemon — the engine, the
// clients and the report, straight against the backends named on the command line.
#pragma once

#include <CLI/CLI.hpp>

namespace logitaudit::cli {

// Adds the subcommand to `app`; its callback runs the audit and exits with the command's
// status (0 findings valid, 1 findings invalid or --strict with a failed prediction,
// 2 bad arguments, 3 no backend reachable, 4 the database failed).
void add_run_command(CLI::App& app);

}  // namespace logitaudit::cli
