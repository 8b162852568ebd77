// The top1-top2 logprob margin of greedy decoding, measured on a real llama-server: the
// property that decides whether a greedy token survives numerical jitter.
#pragma once

#include <cstddef>
#include <string>

#include "audit/expected.hpp"

namespace logitaudit::tools {

struct margin_summary {
  std::size_t prompts = 0;
  std::size_t tokens = 0;
  double median = 0;
  double p10 = 0;
  double min = 0;
};

// Serves `model` with a local llama-server, decodes a few fixed prompts greedily with
// top-2 logprobs, and summarises top1 - top2. Blocks; the error says what failed.
expected<margin_summary, std::string> measure_margin(const std::string& model);

}  // namespace logitaudit::tools
