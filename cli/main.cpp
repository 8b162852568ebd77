// logitaudit: the command-line front door. Subcommands live in their own files; this file
// wires them and turns every failure into one line on stderr and a documented exit code
// (exit_codes.hpp).
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "bundle_commands.hpp"
#include "db_commands.hpp"
#include "storage/records.hpp"
#include "exit_codes.hpp"
#include "remote_commands.hpp"
#include "advise_command.hpp"
#include "run_command.hpp"
#include "repro_command.hpp"
#include "selftest_command.hpp"
#include "trace_file.hpp"

int main(int argc, char** argv) {
  using namespace logitaudit::cli;
  // Logs go to stderr: stdout carries only what a command prints, so that `--format json` and
  // `--json` are exactly one JSON document a pipe can parse.
  spdlog::set_default_logger(spdlog::stderr_color_mt("logitaudit"));
  CLI::App app{
      "logitaudit: audits whether LLM servers return bit-identical logprobs under load.\n"
      "Daemon commands talk to logitauditd (--server, $LOGITAUDIT_SERVER; token $LOGITAUDIT_TOKEN).\n"
      "Exit codes: 0 ok, 1 findings invalid or audit failed (--strict: a prediction failed), 2 usage,\n"
      "3 daemon or backends unreachable, 4 database error, 5 request refused (4xx), 6 daemon error (5xx),\n"
      "70 internal error."};
  app.set_version_flag("--version", std::string("logitaudit ") + LOGITAUDIT_VERSION);
  app.require_subcommand(0, 1);
  add_run_command(app);
  add_advise_command(app);
  add_selftest_command(app);
  add_trace_command(app);
  add_repro_command(app);
  add_db_commands(app);
  add_bundle_commands(app);
  add_remote_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return exit_usage;
  } catch (const cli_failure& e) {
    if (*e.what()) std::cerr << "logitaudit: " << e.what() << "\n";
    return e.code;
  } catch (const logitaudit::storage::storage_error& e) {
    std::cerr << "logitaudit: database: " << e.what() << "\n";
    return exit_database;
  } catch (const std::exception& e) {
    // Anything else is a bug, not a usage error: say so, and never abort with a core dump.
    std::cerr << "logitaudit: internal error: " << e.what() << "\n";
    return exit_internal;
  }
  if (app.get_subcommands().empty()) std::cout << app.help();
  return exit_ok;
}
