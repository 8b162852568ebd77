// logitaudit: the command-line front door to logitauditd. For now it only answers
// --version and --help; its subcommands arrive with issue 7.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"logitaudit: submit logit-reproducibility audits and read their findings."};
  app.set_version_flag("--version", std::string("logitaudit ") + LOGITAUDIT_VERSION);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
