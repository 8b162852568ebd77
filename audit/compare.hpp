// The comparator: one stream against its solo baseline, at the logit and the token level,
// with where and by how much they differ.
#pragma once

#include <cstdint>
#include <optional>

#include "logit_stream.hpp"

namespace logitaudit::audit {

struct comparison {
  bool logit_identical = false;   // logit digests equal
  bool token_identical = false;   // token digests equal
  int first_logit_difference = -1;  // first position whose id, logprob bits or top-k differ; -1: none
  int first_token_difference = -1;  // first position whose token differs (or where one stream ends)
  std::size_t aligned = 0;          // positions before the first token difference in both streams
  double max_abs_delta = 0;         // |logprob - baseline logprob| of the chosen token, over aligned
  double mean_abs_delta = 0;
  std::uint64_t max_ulp = 0;        // largest float32 ULP distance, chosen and same-key top-k entries
  std::optional<double> baseline_margin_at_flip;  // baseline top1 - top2 logprob at the first token difference
  // The first aligned position whose text differs (a token's text, or the content it spans)
  // while identity, which is ids and logprob bits only, may hold; -1: none, or no text kept.
  int first_text_difference = -1;

  bool operator==(const comparison&) const = default;
};

// Compares `s` with `baseline`. Identity comes from the digests (as stored); positions and
// deltas from the streams. Pure.
comparison compare_streams(const logit_stream& baseline, const stream_digests& baseline_digests,
                           const logit_stream& s, const stream_digests& digests);

// ULPs between two logprobs: in float32 when both are float32 values (as llama.cpp's are),
// else in float64. 0 for identical bits; saturates for NaN.
std::uint64_t ulp_distance(double a, double b);

}  // namespace logitaudit::audit
