// The pre-registered predictions (spec.hpp's `prediction`), each decided from the counted
// streams of its conditions; registered, with a hash, before the first request.
#pragma once

#include <boost/describe/enum.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec.hpp"

namespace logitaudit::audit {

BOOST_DEFINE_ENUM_CLASS(prediction_outcome,
  held,
  failed,
  undecided  // no counted stream: nothing to decide it on (every one failed or was flagged)
)
std::string_view to_string(prediction_outcome o);
std::optional<prediction_outcome> parse_prediction_outcome(std::string_view s);

struct prediction_result {
  prediction claim;
  int k = 0;        // counted streams matching the expectation
  int n = 0;        // counted streams of the named conditions
  int flagged = 0;  // streams of those conditions counted apart
  prediction_outcome outcome = prediction_outcome::undecided;
  bool held() const { return outcome == prediction_outcome::held; }
};

// The outcome of a prediction from its counts (shared with the independent verifier).
prediction_outcome decide(const prediction& p, int k, int n);

struct run_verdict;  // findings.hpp

// Each prediction decided from the counted verdicts of its conditions, in spec order.
std::vector<prediction_result> judge_predictions(const audit_spec& spec, const std::vector<run_verdict>& verdicts);

// The predictions analysis's section of the findings: one result per prediction, in spec order.
struct prediction_section {
  std::vector<prediction_result> results;
};

// The canonical text of a spec's predictions and its XXH3-64 (hex): what is registered,
// with a time, before the first request.
std::string prediction_registration_text(const std::vector<prediction>& predictions);
std::string prediction_hash(const std::vector<prediction>& predictions);

}  // namespace logitaudit::audit
