// Two audits' solo baselines side by side (the same server another day, another build?):
// matched by backend, prompt and sampling, each pair compared like any stream. Pure.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baseline_stream.hpp"
#include "compare.hpp"
#include "evidence.hpp"
#include "findings.hpp"

namespace logitaudit::audit {

struct baseline_pair {
  baseline_key key;
  std::optional<comparison> result;  // absent: in only one of the audits, or not shown solo
  bool in_a = false, in_b = false;
  // Why the pair is not compared although both audits have it: a side whose evidence says it
  // was not alone ("a: ...", "b: ..."). A batch or a cache moves such numbers, not a change of
  // the server. Empty: compared, or in one audit only.
  std::string not_solo;
};

struct baseline_comparison {
  std::vector<baseline_pair> baselines;  // ordered by key
  std::map<std::string, std::vector<std::string>> fingerprint_differences;  // backends in both, by name
};

// The baselines of audit `a` against those of audit `b` (a pair only where both sides' evidence
// says they were alone), and each shared backend's fingerprint (before each audit) against the
// other's.
baseline_comparison compare_baselines(const std::vector<baseline_stream>& a, const std::vector<baseline_stream>& b,
                                      const std::map<std::string, backend_fingerprints>& fingerprints_a,
                                      const std::map<std::string, backend_fingerprints>& fingerprints_b,
                                      const evidence_thresholds& thresholds);

}  // namespace logitaudit::audit
