// Attribution at the first divergence: whether divergent streams first differ where the
// server's batch changed (a neighbour finished or joined) more often than chance would put
// them there. Per condition and backend, from the verdicts' decode steps; pure.
#pragma once

#include <string>
#include <vector>

#include "findings.hpp"

namespace logitaudit::audit {

// One tally per burst condition and backend that has counted divergent streams.
std::vector<attribution_tally> tally_attributions(const audit_spec& spec, const std::vector<run_verdict>& verdicts);

// One sentence per tally: the counts, the base rate, the exact test and what it allows to say.
std::string attribution_sentence(const attribution_tally& t);

// A run's attribution in words: "width 4 (was 4); nothing joined or finished" or
// "width 3 (was 4): request 1 finished".
std::string describe_divergence_step(const divergence_step& d);

}  // namespace logitaudit::audit
