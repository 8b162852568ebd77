// logitauditd: the long-running audit service. For now it only answers --version and
// --help; the REST API, job queue and scheduler arrive with issue 6.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"logitauditd: audits whether LLM servers return bit-identical logprobs under load."};
  app.set_version_flag("--version", std::string("logitauditd ") + LOGITAUDIT_VERSION);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
