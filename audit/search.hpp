// The concurrency-threshold search: for each burst width, is the stream still what a solo
// request gives? Each width is decided SAME, DIFFERENT or UNKNOWN against the serial
// reference, the way Chromium's Pinpoint decides whether a commit changed a metric: a
// significance test for DIFFERENT, a test of power for SAME, and more trials while neither is
// reached, up to a cap. Bursts the server did not batch are not evidence (not_batched). Pure.
#pragma once

#include <boost/describe/enum.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan.hpp"
#include "spec.hpp"
#include "statistics.hpp"

namespace logitaudit::audit {

struct findings;

BOOST_DEFINE_ENUM_CLASS(search_decision,
  unknown,      // not decided (yet, or after max_trials)
  same,         // a divergence rate `magnitude` above the reference's is ruled out
  different,    // diverges more often than the reference (Fisher p < alpha)
  not_batched  // no burst of this width batched in max_trials: nothing to decide on
)
std::string_view to_string(search_decision d);
std::optional<search_decision> parse_search_decision(std::string_view s);

struct search_width {
  int width = 0;
  int trials = 0;          // bursts run
  int batched_trials = 0;  // of them, judged batched (only their streams count)
  int n = 0;               // counted streams
  int logit_identical = 0;
  int token_identical = 0;
  rate_interval logit_interval, token_interval;  // Jeffreys 95% of the identical rates
  double logit_p = 1, token_p = 1;               // Fisher's exact test against the reference
  search_decision logit = search_decision::unknown;
  search_decision token = search_decision::unknown;

  bool decided() const {
    return logit != search_decision::unknown && token != search_decision::unknown;
  }
};

struct search_result {
  std::string backend;
  std::string condition;
  int reference_n = 0;  // counted serial reference streams
  int reference_logit_identical = 0;
  int reference_token_identical = 0;
  std::vector<search_width> widths;     // ascending
  std::optional<int> logit_threshold;   // the smallest width decided DIFFERENT at the logit level
  std::optional<int> token_threshold;   // ... at the token level
};

// One width's decision from its counts. `identical`/`n` are the width's counted streams,
// `ref_identical`/`ref_n` the reference's; `trials` bursts ran, `batched_trials` of them batched.
// `p` receives Fisher's p (1 when not computed).
search_decision decide_width(int ref_identical, int ref_n, int identical, int n, int trials, int batched_trials,
                             const search_settings& s, double* p = nullptr);

// Every threshold_search condition's result per backend, from judged findings (verdicts and

// The search analysis's section of the findings: per threshold_search condition and backend.
struct search_section {
  std::vector<search_result> results;
};

// burst verdicts). Widths and trials that did not run are absent.
std::vector<search_result> threshold_searches(const audit_spec& spec, const audit_plan& plan, const findings& f);

// Whether group `g` of a threshold search still has to run, given the findings so far: its
// width is undecided (or below min_trials) and under max_trials. Groups of other kinds: true.
bool search_needs(const audit_spec& spec, const audit_plan& plan, const findings& so_far, const request_group& g);

}  // namespace logitaudit::audit
