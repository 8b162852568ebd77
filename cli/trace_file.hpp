// A recorded trace for a load condition (docs/load.md): a file of arrival offsets with prompt
// and output lengths, as JSON Lines ({"at_ms": 0, "prompt_tokens": 32, "output_tokens": 16} per
// line), one JSON array of such objects or of [at_ms, prompt_tokens, output_tokens], or CSV
// with the header at_ms,prompt_tokens,output_tokens. Read here; its values are checked with
// the spec (audit::validate), each named by its index.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "audit/expected.hpp"
#include "audit/load.hpp"

namespace logitaudit::cli {

// A trace as read, with what its format says of its blocks.
struct trace_read {
  std::vector<audit::trace_entry> entries;
  std::string format;     // "mooncake", "bailian" or "logitaudit"
  int block_size = 512;   // the tokens of one hash id its format implies (Bailian's 16, else 512)
  bool has_blocks() const;
};

// A production trace made to fit a small model's context: each request's prompt length and the
// block size times `factor` (rounded, at least 1), so that each request keeps its share of
// blocks and what they share; output lengths and times kept. Mooncake's 512-token blocks at
// 1/32 are 16-token blocks, its 6,955-token request 217 tokens.
void scale_trace(trace_read& t, double factor);

// Errors name the line ("line 7: not a JSON object") and stop at the first; a file of more
// than audit::kMaxTraceEntries requests is refused. Mooncake's JSON Lines ({"timestamp" ms,
// "input_length", "output_length", "hash_ids"}) and Bailian's ({"chat_id", "timestamp" s, ...})
// are read as AIPerf documents them.
expected<trace_read, std::string> parse_trace(std::string_view text);
// The file at `path` parsed; errors begin with the path ("t.csv: line 7: ...").
expected<trace_read, std::string> read_trace_file(const std::string& path);

// What AIPerf's analyze-trace prints of a trace, from our own reading: its requests, span and
// rate, the prompt and output lengths, and with hash ids the blocks, and the share of prompt
// tokens an unbounded prefix cache would serve (audit::trace_implied_cached).
struct trace_summary {
  std::size_t requests = 0;
  double span_s = 0, rate_rps = 0;
  audit::latency_summary prompt_tokens, output_tokens;  // the lengths' mean and percentiles
  int prompt_min = 0, prompt_max = 0, output_min = 0, output_max = 0;
  std::size_t blocks = 0, unique_blocks = 0;        // hash ids, and the distinct ones
  std::int64_t total_prompt_tokens = 0, implied_cached_tokens = 0;
  std::size_t requests_reusing = 0;                 // with an implied cached prefix
  std::size_t overfull = 0;  // requests with more hash ids than their length fills at this block size
  std::size_t too_long = 0;  // requests longer than a replay sends (audit::kMaxLoadPromptTokens)
  double reuse_share() const {
    return total_prompt_tokens > 0 ? static_cast<double>(implied_cached_tokens) / static_cast<double>(total_prompt_tokens) : 0;
  }
};
trace_summary summarize_trace(const std::vector<audit::trace_entry>& trace, int block_size);

// `logitaudit trace analyze FILE [--block-size N] [--format text|json]` (cli/trace_command.cpp).
void add_trace_command(CLI::App& app);

}  // namespace logitaudit::cli
