// `logitaudit advise`: from "not reproducible under load" to the fix and its cost. A sweep of
// managed llama-servers of the user's model measures each configuration's throughput; certify
// then tries them from the fastest down and stops at the first certified (docs/advise.md).
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <string>
#include <vector>

namespace logitaudit::cli {

// The settings --vary may sweep.
inline constexpr std::array<const char*, 6> kAdviseAxes = {"kv_unified", "prompt_cache", "flash_attn", "ubatch", "cpu_variant", "device"};

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
  double minutes = 30;       // the certify phase
  // The load each configuration is measured under: `slots` requests in flight, else Poisson
  // arrivals at `rate`, else `trace`; its lengths, its length, and its objectives (0: none).
  double rate = 0;
  std::string trace;
  int trace_block_size = 0;  // a hash id's tokens (0: the trace format's)
  double trace_scale = 1;    // prompt lengths and the block size times this (cli/trace_file.hpp scale_trace)
  int prompt_tokens = 64, output_tokens = 64;
  double load_seconds = 8;
  double ttft_ms = 0, itl_ms = 0;
  // The settings swept, each both ways (flash attention off and on, -ub 512 and 128); the
  // quantisations always.
  std::vector<std::string> vary = {"kv_unified", "prompt_cache", "flash_attn"};
  int measurement_priority = 10;  // of the thread that times the jobs (daemon/measurement_thread.hpp)
  std::string db;            // empty: in memory
  std::string format = "text";
  std::string save_result;   // --save-result FILE: each configuration's load level as a vLLM result
  bool quiet = false;
};

// Runs an advise job (the sweep, then its certify jobs) and prints the advice and its table on
// stdout (progress on stderr); returns the exit code (0). Throws cli_failure for bad arguments
// (2), a job that did not end done (3) and a database that fails (4).
int run_advise(const advise_args& args);

void add_advise_command(CLI::App& app);

}  // namespace logitaudit::cli
