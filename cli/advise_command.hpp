// `logitaudit advise`: from "not reproducible under load" to the fix and its cost. A sweep of
// managed llama-servers of the user's model measures each configuration's throughput; certify
// then tries them from the fastest down and stops at the first certified (docs/advise.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace logitaudit::cli {

struct advise_args {
  std::string model;              // the GGUF file
  std::vector<std::string> also;  // other quantisations of it
  std::vector<std::string> quantize;  // types llama-quantize makes from `model`
  std::string claim = "batch-invariant";
  int slots = 4;
  int threads = 2;
  int ctx_per_slot = 1024;
  int n_predict = 16;
  int certify_budget = 200;  // requests per certify job
  double minutes = 30;       // the whole advice
  // The settings swept, each both ways (flash attention off and on, -ub 512 and 128); the
  // quantisations always.
  std::vector<std::string> vary = {"kv_unified", "prompt_cache", "flash_attn"};
  std::string db;            // empty: in memory
  std::string format = "text";
  bool quiet = false;
};

// Sweeps, certifies, prints the advice and its table on stdout (progress on stderr); returns
// the exit code (0). Throws cli_failure for bad arguments (2), a sweep whose servers gave
// nothing (3) and a database that fails (4).
int run_advise(const advise_args& args);

void add_advise_command(CLI::App& app);

}  // namespace logitaudit::cli
