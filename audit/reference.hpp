// The second verdict: every stream of an audit against a reference audit's solo stream for the
// same request (the same prompt, sampling and length, on any backend), so that tonight's numbers
// are held against numbers certified elsewhere, on another machine, weeks ago. Pure.
#pragma once

#include <boost/describe/enum.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baseline_stream.hpp"
#include "compare.hpp"
#include "evidence.hpp"
#include "fingerprint.hpp"
#include "plan.hpp"
#include "reference_evidence.hpp"
#include "spec.hpp"

namespace logitaudit::audit {

struct observed_run;  // findings.hpp

BOOST_DEFINE_ENUM_CLASS(reference_outcome, matches_reference, differs, not_comparable)
std::string_view to_string(reference_outcome o);

struct reference_verdict {
  std::size_t group = 0, request = 0;
  reference_outcome outcome = reference_outcome::not_comparable;
  std::optional<comparison> result;  // matches_reference and differs
  std::string reason;                // not_comparable: why ("the reference has no such request")
};

// One condition's streams against the reference.
struct reference_tally {
  std::string condition;
  int n = 0;                // compared with a reference stream
  int logit_matches = 0;    // bit for bit
  int token_matches = 0;
  int not_comparable = 0;
};

struct reference_findings {
  std::int64_t audit = 0;
  std::string origin;
  std::vector<reference_verdict> verdicts;  // per stream that arrived, in run order
  std::vector<reference_tally> pooled;      // per condition (the solo baselines as "baseline"), in spec order
  // Per backend of this audit: the fingerprint fields that differ from the reference's
  // fingerprint ("machine:cpu_features", "build_info", ...).
  std::map<std::string, std::vector<std::string>> fingerprint_differences;
  std::string sentence;
  // The gate: every solo baseline (shown alone on both sides) matches its reference bit for
  // bit and none is not comparable. Streams under load are reported, never gated: a batch
  // moves them on a server that is not batch-invariant, changed or not.
  bool all_match() const;
  // The pooled tally of a condition ("baseline" for the solo baselines); null when there is none.
  const reference_tally* tally(const std::string& condition) const;
};

// Judges every stream of `runs` against `ref`. Streams of a request the reference has no solo
// stream for (or only one whose evidence says it was not alone), a baseline of this audit that
// was not alone, and every stream when the lengths or top-k differ, are not comparable, with
// the reason.
reference_findings judge_against_reference(const audit_spec& spec, const audit_plan& plan,
                                           const std::vector<observed_run>& runs, const reference_evidence& ref,
                                           const std::map<std::string, backend_fingerprints>& fingerprints,
                                           const evidence_thresholds& thresholds);

}  // namespace logitaudit::audit
