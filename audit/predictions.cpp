// The pre-registered predictions: decided from the counted streams, and registered as text
// with its hash (audit/predictions.hpp).
#include "predictions.hpp"

#include <array>
#include <cstdio>
#include <set>

#include "enum_names.hpp"
#include "findings.hpp"
#include "numbers.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace logitaudit::audit {

std::string_view to_string(prediction_outcome o) { return enumerator_name(o); }

std::optional<prediction_outcome> parse_prediction_outcome(std::string_view s) {
  return parse_by_name(std::array{prediction_outcome::held, prediction_outcome::failed, prediction_outcome::undecided}, s);
}

prediction_outcome decide(const prediction& p, int k, int n) {
  if (n == 0) return prediction_outcome::undecided;
  return static_cast<double>(k) >= p.at_least * n - 1e-9 ? prediction_outcome::held : prediction_outcome::failed;
}

std::vector<prediction_result> judge_predictions(const audit_spec& spec, const std::vector<run_verdict>& verdicts) {
  std::vector<prediction_result> out;
  for (const auto& p : spec.predictions) {
    prediction_result pr;
    pr.claim = p;
    const std::set<std::string> names(p.conditions.begin(), p.conditions.end());
    for (const auto& v : verdicts) {
      if (!names.count(v.condition)) continue;
      if (!v.failed && v.flag != evidence_flag::none) ++pr.flagged;
      if (!v.counted()) continue;
      ++pr.n;
      const bool identical = p.level == identity_level::logit ? v.result->logit_identical : v.result->token_identical;
      pr.k += identical == (p.expect == expectation::identical);
    }
    pr.outcome = decide(p, pr.k, pr.n);
    out.push_back(pr);
  }
  return out;
}

std::string prediction_registration_text(const std::vector<prediction>& ps) {
  std::string t = "logitaudit predictions v1\n";
  for (const auto& p : ps) {
    t += p.id + "\t" + p.statement + "\t";
    for (std::size_t i = 0; i < p.conditions.size(); ++i) t += (i ? "," : "") + p.conditions[i];
    t += std::string("\t") + (p.level == identity_level::logit ? "logit" : "token") + "\t" +
         (p.expect == expectation::identical ? "identical" : "diverges") + "\t" + fixed(p.at_least, 6) + "\n";
  }
  return t;
}

std::string prediction_hash(const std::vector<prediction>& ps) {
  const auto text = prediction_registration_text(ps);
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(XXH3_64bits(text.data(), text.size())));
  return b;
}

}  // namespace logitaudit::audit
