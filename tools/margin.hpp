// The top1-top2 logprob margin of greedy decoding, measured on a real llama-server: with the
// drift a batch causes, it decides whether a greedy token survives numerical jitter
// (docs/models.md compares the generated models' margins with the trained ones').
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "audit/expected.hpp"

namespace logitaudit::tools {

struct margin_distribution {
  std::size_t prompts = 0;
  int n_predict = 0;
  std::vector<double> margins;  // every greedy position's top1 - top2 in nats, ascending

  // The q-quantile (0..1) by the nearest rank; 0 when empty.
  double quantile(double q) const;
  // The share of positions whose margin is below `nats`.
  double share_below(double nats) const;
  // One line: quantiles, the minimum, and the shares below 0.01, 0.1 and 1 nat.
  std::string summary() const;
  // The same as a JSON object (scripts/train-model.sh keeps it in MODEL.measured.json).
  std::string json() const;
};

// Serves `model` with a local llama-server (one slot, two threads, prompt cache off), decodes
// the seed protocol's prompts greedily for the seed protocol's length with top-2 logprobs, and
// keeps every position's top1 - top2. Blocks; the error says what failed.
expected<margin_distribution, std::string> measure_margin(const std::string& model);

}  // namespace logitaudit::tools
