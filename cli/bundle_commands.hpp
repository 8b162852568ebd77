// Evidence bundles from the command line: export (from a database, or from the daemon),
// import (into a database, or through the daemon), and their offline verification, which
// `logitaudit verify FILE` runs when FILE is a bundle (storage/bundle.hpp, docs/protocol.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace logitaudit::cli {

void add_bundle_commands(CLI::App& app);

// The whole of a file; throws cli_failure(exit_usage) when it cannot be read.
std::string read_all(const std::string& path);

// Whether `path` is a file that starts as an evidence bundle does.
bool is_bundle_file(const std::string& path);

// Verifies a bundle offline: its content digest, then every stream digest, verdict and
// prediction of each audit in it, recomputed (in a database in memory). Prints what it finds
// and throws cli_failure(exit_findings) on any mismatch, naming what differs.
void verify_bundle_file(const std::string& path);

}  // namespace logitaudit::cli
