// logitaudit: the command-line front door. Subcommands live in their own files; this file
// only wires them. (Daemon-facing subcommands arrive with the daemon.)
#include <CLI/CLI.hpp>

#include "db_commands.hpp"
#include "run_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"logitaudit: audits whether LLM servers return bit-identical logprobs under load."};
  app.set_version_flag("--version", std::string("logitaudit ") + LOGITAUDIT_VERSION);
  app.require_subcommand(0, 1);
  logitaudit::cli::add_run_command(app);
  logitaudit::cli::add_db_commands(app);
  CLI11_PARSE(app, argc, argv);
  if (app.get_subcommands().empty()) {
    std::cout << app.help();
    return 0;
  }
  return 0;
}
