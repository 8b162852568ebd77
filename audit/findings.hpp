// Verdicts and findings: every stream judged against its baseline, tallied per condition
// (pooled and per backend), the positive controls checked, the pre-registered predictions
// evaluated, and one sentence per finding computed from the data.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare.hpp"
#include "fingerprint.hpp"
#include "logit_stream.hpp"
#include "plan.hpp"
#include "spec.hpp"

namespace logitaudit::audit {

// What the runner observed for one planned request.
struct observed_run {
  std::size_t group = 0;
  std::size_t request = 0;
  std::optional<logit_stream> stream;  // nullopt: the request failed
  std::string error;                   // why it failed
};

struct run_verdict {
  std::size_t group = 0;
  std::size_t request = 0;
  std::string backend;
  std::string condition;
  bool failed = false;       // failed itself, or its baseline failed: kept out of every tally
  std::string error;
  std::optional<comparison> result;  // for compared, judged runs
};

struct condition_tally {
  std::string condition;
  condition_kind kind = condition_kind::repeat;
  int concurrency = 1;
  bool seeded = false;
  int n = 0;                 // judged streams
  int logit_identical = 0;
  int token_identical = 0;
  int failed = 0;            // kept out of n
  bool control() const { return is_control(kind); }
};

struct prediction_result {
  prediction claim;
  int k = 0;  // streams matching the expectation
  int n = 0;  // judged streams of the named conditions
  bool held = false;
};

struct backend_fingerprints {
  backend_fingerprint before;
  backend_fingerprint after;
};

struct findings {
  std::vector<std::string> backends;
  std::vector<condition_tally> pooled;  // in spec order
  std::map<std::string, std::vector<condition_tally>> per_backend;
  std::vector<run_verdict> verdicts;
  std::vector<prediction_result> predictions;
  std::vector<std::string> sentences;
  bool valid = true;
  std::string invalid_reason;  // "comparator vacuous: ..." when a control came out identical
  int failed_runs = 0;
  std::vector<std::string> fingerprint_changes;  // "backend: field" changed during the job
};

// Judges every observed run of `plan`. Pure: the same inputs give the same findings.
findings evaluate(const audit_spec& spec, const audit_plan& plan, const std::vector<observed_run>& runs,
                  const std::map<std::string, backend_fingerprints>& fingerprints = {});

// The canonical text of a spec's predictions and its XXH3-64 (hex): what is registered,
// with a time, before the first request.
std::string prediction_registration_text(const std::vector<prediction>& predictions);
std::string prediction_hash(const std::vector<prediction>& predictions);

}  // namespace logitaudit::audit
