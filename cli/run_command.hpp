// `logitaudit run`: an audit run in this process, without the daemon, through the same job
// lifecycle the daemon uses: stored in the --db file (or an in-memory database), evaluated
// from what was stored, rendered.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "audit/evidence.hpp"
#include "clients/http_client.hpp"
#include "config/daemon_config.hpp"

namespace logitaudit::cli {

struct run_args {
  std::string preset = "seed-protocol";
  int measurement_priority = 10;  // of the thread that times the audit (daemon/measurement_thread.hpp)
  std::string spec_file;
  std::vector<std::string> backends;  // NAME=URL or URL
  std::string api = "llama";
  std::string format = "text";
  int n_predict = 0;
  int top_k = 0;
  std::vector<std::string> tags;
  bool strict = false;
  bool short_form = false;  // --short: the verdict alone
  bool quiet = false;
  std::string db;           // store the job here; empty: an in-memory database
  std::int64_t resume = 0;  // resume this stored job (with --db)
  audit::evidence_thresholds evidence;
  std::string ca_file;  // https --backend servers: the PEM file of the CAs to trust (default: the system's)
  std::string load_trace;         // a trace file (cli/trace_file.hpp): a load condition that replays it
  std::vector<double> trace_speeds;  // its levels (1: as recorded)
  std::string junit;                 // --junit FILE: the report as JUnit XML, beside the printed one
  std::string save_result;           // --save-result FILE: the load levels as vLLM results
  int trace_block_size = 0;          // a hash id's tokens (0: the trace format's)
  double trace_scale = 1;            // prompt lengths and the block size times this (scale_trace)
};

// Runs `task` on `io` to its end (the offline commands' one coroutine at a time) and returns
// its value; rethrows what it threw.
template <class T>
T run_on(clients::net::io_context& io, clients::net::awaitable<T> task) {
  std::optional<T> out;
  std::exception_ptr error;
  clients::net::co_spawn(io, std::move(task), [&](std::exception_ptr e, T v) {
    error = e;
    if (!e) out.emplace(std::move(v));
  });
  io.run();
  io.restart();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}


// Runs the audit; prints the report on stdout and progress on stderr. Returns the command's
// exit code (0 findings valid, 1 findings invalid or --strict with a failed prediction,
// 3 no request got through); throws cli_failure for bad arguments (2) and a database that
// cannot be opened, is held by another process or fails (4).
int run_audit(const run_args& args);

// The --backend servers of `a` as a configuration's entries: their API kind, the CA file of
// https ones, the bearer token from LOGITAUDIT_BACKEND_TOKEN. Throws cli_failure (2) for a
// --ca-file that is unreadable or names no https backend.
std::vector<config::backend_entry> backend_entries(const run_args& a);

// Adds the subcommand to `app`.
void add_run_command(CLI::App& app);

// A report file of `flag` (`--junit FILE` of run, submit --wait and replay; `--save-result FILE`
// of run and advise) written whole: a temporary file beside it, then renamed, so that CI never
// reads half of one; a file that cannot be written is exit 2, naming the flag, the file and why.
void write_report_file(const std::string& flag, const std::string& path, const std::string& text);

}  // namespace logitaudit::cli
