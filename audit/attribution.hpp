// Attribution at the first divergence: whether divergent streams first differ where the
// server's batch changed (a neighbour finished or joined) more often than chance would put
// them there. Per condition and backend, from the verdicts' decode steps; pure.
#pragma once

#include <string>
#include <vector>

#include "findings.hpp"

namespace logitaudit::audit {

// Attribution at the first divergence, per condition and backend: how many divergent streams
// have their first difference where the batch changed, against how often it changed at all.
struct attribution_tally {
  std::string condition, backend;
  int divergent = 0;       // counted streams with a logit difference
  int with_steps = 0;      // of them, with decode steps reaching the first difference
  int at_first_token = 0;  // of them, first difference at position 0 (the prompt's step)
  int tested = 0;          // with_steps - at_first_token: the ones the test below is on
  int at_width_change = 0, at_finish = 0, at_join = 0;
  int positions = 0, width_changes = 0, finishes = 0, joins = 0;  // base rates, over every counted stream
  double p_width_change = 1;  // one-sided exact binomial test: P(X >= at_width_change | tested, base rate)
  std::string no_steps_reason;  // when no stream had steps
  double base_rate() const { return positions > 0 ? static_cast<double>(width_changes) / positions : 0; }
};

// The attribution analysis's section of the findings: burst conditions with divergent
// streams, per backend.
struct attribution_section {
  std::vector<attribution_tally> tallies;
};

// One tally per burst condition and backend that has counted divergent streams.
std::vector<attribution_tally> tally_attributions(const audit_spec& spec, const std::vector<run_verdict>& verdicts);

// One sentence per tally: the counts, the base rate, the exact test and what it allows to say.
std::string attribution_sentence(const attribution_tally& t);

// A run's attribution in words: "width 4 (was 4); nothing joined or finished" or
// "width 3 (was 4): request 1 finished".
std::string describe_divergence_step(const divergence_step& d);

}  // namespace logitaudit::audit
