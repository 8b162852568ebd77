// Offline commands on a logitaudit database: `verify`, `db vacuum`, `db backup`, `db check`.
#pragma once

#include <CLI/CLI.hpp>

namespace logitaudit::cli {

// Exit codes: 0 ok, 1 verify found a mismatch, 2 bad arguments, 4 the database cannot be opened.
void add_db_commands(CLI::App& app);

}  // namespace logitaudit::cli
