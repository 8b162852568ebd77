// Verdicts and findings: every stream judged against its baseline, and against the evidence
// that its condition happened (a burst that batched, a cache that was reused); tallied per
// condition (pooled and per backend) with the streams that lack that evidence counted apart;
// the positive controls checked; the pre-registered predictions evaluated; and one sentence
// per finding computed from the data.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "advice_evidence.hpp"
#include "burst_measurement.hpp"
#include "compare.hpp"
#include "decode_steps.hpp"
#include "evidence.hpp"
#include "fingerprint.hpp"
#include "harness_power.hpp"
#include "reference_evidence.hpp"
#include "logit_stream.hpp"
#include "plan.hpp"
#include "sections.hpp"
#include "spec.hpp"

namespace logitaudit::audit {

// What the runner observed for one planned request.
struct observed_run {
  std::size_t group = 0;
  std::size_t request = 0;
  std::optional<logit_stream> stream;  // nullopt: the request failed
  std::string error;                   // why it failed
  // A request that claims to be alone (serial): the server's busy slots per decode while it
  // ran (1 when it was alone); nullopt when the server exposes no counters.
  std::optional<double> company;
};

struct run_verdict {
  std::size_t group = 0;
  std::size_t request = 0;
  std::string backend;
  std::string condition;
  bool failed = false;  // failed itself, or its baseline failed: kept out of every tally
  std::string error;
  std::optional<comparison> result;  // for compared runs whose stream and baseline exist
  evidence_flag flag = evidence_flag::none;  // judged, but its condition did not happen: counted apart
  std::string flag_reason;
  std::optional<double> company;  // not_solo: the busy slots per decode of the request that had company
  // A burst member with decode steps (audit/decode_steps.hpp): the batch at its first logit
  // difference, and over its positions after the first, how often the width changed and how
  // often a neighbour finished or joined (the base rates its attribution is tested against).
  bool has_steps = false;
  std::optional<divergence_step> at_difference;
  int step_positions = 0, width_changes = 0, finish_positions = 0, join_positions = 0;
  // Counted in its condition's tallies and in the predictions.
  bool counted() const { return !failed && result && flag == evidence_flag::none; }
};

// The batching evidence of a concurrent or cross-batch condition: medians over its bursts.
struct burst_summary {
  int bursts = 0;
  int batched = 0;
  int width = 0;
  double expected = 0;                   // requests the server could batch at once
  std::optional<double> median_measured;  // busy slots per decode (or timed concurrency)
  concurrency_measure measured_by = concurrency_measure::none;
  double median_overlap = 0;
  // Of `bursts`, how many streamed for decode steps (the rest were plain); unset in findings
  // stored before plain bursts existed (they all streamed).
  std::optional<int> streamed;
};

struct condition_tally {
  std::string condition;
  condition_kind kind = condition_kind::repeat;
  int concurrency = 1;
  bool seeded = false;
  int n = 0;  // counted streams
  int logit_identical = 0;
  int token_identical = 0;
  int failed = 0;   // kept out of n
  int flagged = 0;  // not_batched / not_reused / not_solo / control_ineffective: kept out of n
  int not_solo = 0;     // of flagged: solo requests (or their baselines) that had company
  int ineffective = 0;  // of flagged: controls that could not have diverged
  std::optional<burst_summary> bursts;  // concurrent and cross-batch conditions
  // A threshold search: its bursts width by width (the search's `bursts` is the median over
  // every width, which no width had).
  std::vector<burst_summary> widths;
  bool control() const { return is_control(kind); }
};


// Everything besides the streams that the judgement reads.
struct evaluation_evidence {
  std::map<std::size_t, burst_measurement> bursts;  // by group index; a burst without one is not batched
  std::map<std::size_t, load_measurement> loads;    // by group index; a load level without one was not reached
  std::map<std::string, backend_fingerprints> fingerprints;
  evidence_thresholds thresholds;
  std::optional<reference_evidence> reference;  // when the spec names a reference audit
  // Per backend, its most recent selftest against seeded faults (absent: none was run).
  std::map<std::string, selftest_summary> selftests;
  // Per backend, an advice stored for its model file and build (`logitaudit advise`).
  std::map<std::string, stored_advice> advice;
  // An advise job's certify jobs, as stored (absent before they ran).
  std::optional<advice_evidence> advice_run;
};

// The judgement of an audit: every stream's verdict, the tallies per condition, whether the
// findings can be trusted at all, and the analyses' sections (audit/analysis.hpp).
struct findings {
  std::vector<std::string> backends;
  std::vector<condition_tally> pooled;  // in spec order
  std::map<std::string, std::vector<condition_tally>> per_backend;
  std::vector<run_verdict> verdicts;
  std::map<std::size_t, burst_verdict> bursts;  // by group index
  std::vector<std::string> sentences;
  bool valid = true;
  std::string invalid_reason;  // "comparator vacuous: ..." when a control came out identical
  int failed_runs = 0;
  int flagged_runs = 0;
  std::vector<std::string> fingerprint_changes;  // "backend: field" changed during the job
  // "the before fingerprint of small": a fingerprint of a backend with measured streams that
  // is not in the evidence (not taken, or not stored), so that nothing shows its server
  // stayed the same.
  std::vector<std::string> missing_fingerprints;
  // Per backend, the machine its fingerprint names (the before one's, else the after one's):
  // a finding is a property of the machine it was measured on.
  std::map<std::string, std::map<std::string, std::string>> machines;
  evidence_thresholds thresholds;
  // The analyses' sections, each read by section<S>(f).
  section_store sections;
};

// The section of type S of `f`, empty when its analysis had nothing to say.
template <class S>
const S& section(const findings& f) {
  static const S none{};
  const S* s = f.sections.find<S>();
  return s ? *s : none;
}

// Judges every observed run of `plan`, then runs every analysis. Pure: the same inputs give the
// same findings.
findings evaluate(const audit_spec& spec, const audit_plan& plan, const std::vector<observed_run>& runs,
                  const evaluation_evidence& evidence = {});

}  // namespace logitaudit::audit
