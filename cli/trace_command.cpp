// `logitaudit trace analyze FILE`: what a trace holds before it is replayed (cli/trace_file.hpp),
// as AIPerf's analyze-trace prints it: requests, span and rate, the lengths' distributions, and
// for a trace with hash ids its blocks and the prefix reuse it implies.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

#include "audit/numbers.hpp"
#include "exit_codes.hpp"
#include "trace_file.hpp"

namespace logitaudit::cli {
namespace {

struct trace_args {
  std::string file;
  int block_size = 0;
  double scale = 1;
  std::string format = "text";
};

nlohmann::json lengths_json(const audit::latency_summary& s, int min, int max) {
  return {{"mean", s.mean}, {"min", min}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", max}};
}

void run_analyze(const trace_args& a) {
  auto read = read_trace_file(a.file);
  if (!read) throw cli_failure(exit_usage, "trace analyze: " + read.error());
  if (a.block_size > 0) read->block_size = a.block_size;
  if (a.scale != 1) scale_trace(*read, a.scale);
  const int block_size = read->block_size;
  const auto s = summarize_trace(read->entries, block_size);
  if (a.format == "json") {
    nlohmann::json j = {{"file", a.file},
                        {"format", read->format},
                        {"requests", s.requests},
                        {"span_s", s.span_s},
                        {"request_rate", s.rate_rps},
                        {"input_length", lengths_json(s.prompt_tokens, s.prompt_min, s.prompt_max)},
                        {"output_length", lengths_json(s.output_tokens, s.output_min, s.output_max)},
                        {"total_input_tokens", s.total_prompt_tokens},
                        {"requests_too_long", s.too_long}};
    if (read->has_blocks())
      j["prefix"] = {{"block_size", block_size},
                     {"blocks", s.blocks},
                     {"unique_blocks", s.unique_blocks},
                     {"implied_cached_tokens", s.implied_cached_tokens},
                     {"reuse_share", s.reuse_share()},
                     {"requests_reusing", s.requests_reusing},
                     {"requests_with_more_blocks_than_tokens", s.overfull}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  using audit::fixed;
  auto lengths = [](const audit::latency_summary& l, int min, int max) {
    return "mean " + fixed(l.mean, 1) + ", min " + std::to_string(min) + ", p50 " + fixed(l.p50, 0) + ", p90 " + fixed(l.p90, 0) +
           ", p99 " + fixed(l.p99, 0) + ", max " + std::to_string(max);
  };
  std::cout << a.file << " (" << read->format << " trace): " << s.requests << " requests over " << fixed(s.span_s, 2) << " s, "
            << fixed(s.rate_rps, 2) << " requests/s\n"
            << "  input tokens:  " << lengths(s.prompt_tokens, s.prompt_min, s.prompt_max) << " (" << s.total_prompt_tokens << " in all)\n"
            << "  output tokens: " << lengths(s.output_tokens, s.output_min, s.output_max) << "\n";
  if (s.too_long > 0)
    std::cout << "  note: " << s.too_long << " requests are longer than " << audit::kMaxLoadPromptTokens
              << " tokens, the most a replay sends: scale the trace (--scale, run --trace-scale)\n";
  if (!read->has_blocks()) {
    std::cout << "  no hash_ids: every request's prompt is its own (no shared prefix to replay)\n";
    return;
  }
  std::cout << "  prefix blocks: " << s.blocks << " hash ids of " << block_size << " tokens, " << s.unique_blocks << " distinct\n"
            << "  reuse: " << s.requests_reusing << " of " << s.requests << " requests share a prefix with an earlier one; an "
            << "unbounded prefix cache would serve " << s.implied_cached_tokens << " of " << s.total_prompt_tokens
            << " input tokens (" << fixed(100 * s.reuse_share(), 1) << "%)\n";
  if (s.overfull > 0)
    std::cout << "  note: " << s.overfull << " requests have more hash ids than their input length fills at " << block_size
              << " tokens a block; is the block size right? (Mooncake's is 512, Bailian's 16: --block-size)\n";
}

}  // namespace

void add_trace_command(CLI::App& app) {
  auto* trace = app.add_subcommand("trace", "look at a load trace before replaying it (docs/load.md)");
  trace->require_subcommand(1);
  auto args = std::make_shared<trace_args>();
  auto* analyze = trace->add_subcommand(
      "analyze", "a trace's requests, rate, lengths and, with hash ids, the prefix reuse an unbounded cache would see");
  analyze->add_option("file", args->file, "the trace: Mooncake or Bailian JSON Lines, ours as JSON Lines, a JSON array or CSV")
      ->required()
      ->check(CLI::ExistingFile);
  analyze->add_option("--block-size", args->block_size, "the tokens of one hash id (default: the format's, 512 or Bailian's 16)")
      ->check(CLI::Range(1, audit::kMaxLoadPromptTokens));
  analyze->add_option("--scale", args->scale, "as run --trace-scale: the prompt lengths and the block size times this")
      ->check(CLI::Range(0.001, 1.0));
  analyze->add_option("--format", args->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  analyze->callback([args] { run_analyze(*args); });
}

}  // namespace logitaudit::cli
