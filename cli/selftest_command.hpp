// `logitaudit selftest`: seeded faults against a backend's own server through the in-process
// proxy (clients/selftest.hpp), the table of what was caught, stored with --db so that every
// later audit of that backend's path cites it.
#pragma once

#include <CLI/CLI.hpp>

namespace logitaudit::cli {

// Adds the subcommand to `app`. Exit codes: 0 every fault caught and no equivalent flagged,
// 1 a miss, 2 bad arguments, 3 the backend could not be reached, 4 the database.
void add_selftest_command(CLI::App& app);

}  // namespace logitaudit::cli
