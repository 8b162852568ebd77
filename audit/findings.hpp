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

#include "analysis.hpp"
#include "burst_measurement.hpp"
#include "certify.hpp"
#include "compare.hpp"
#include "decode_steps.hpp"
#include "evidence.hpp"
#include "fingerprint.hpp"
#include "harness_power.hpp"
#include "number_format.hpp"
#include "reference.hpp"
#include "frontier.hpp"
#include "logit_stream.hpp"
#include "plan.hpp"
#include "search.hpp"
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
};

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


enum class prediction_outcome {
  held,
  failed,
  undecided,  // no counted stream: nothing to decide it on (every one failed or was flagged)
};
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

// Everything besides the streams that the judgement reads.
struct evaluation_evidence {
  std::map<std::size_t, burst_measurement> bursts;  // by group index; a burst without one is not batched
  std::map<std::size_t, load_measurement> loads;    // by group index; a load level without one was not reached
  std::map<std::string, backend_fingerprints> fingerprints;
  evidence_thresholds thresholds;
  std::optional<reference_evidence> reference;  // when the spec names a reference audit
  // Per backend, its most recent selftest against seeded faults (absent: none was run).
  std::map<std::string, selftest_summary> selftests;
};

struct findings {
  std::vector<std::string> backends;
  std::vector<condition_tally> pooled;  // in spec order
  std::map<std::string, std::vector<condition_tally>> per_backend;
  std::vector<run_verdict> verdicts;
  std::map<std::size_t, burst_verdict> bursts;  // by group index
  std::vector<prediction_result> predictions;
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
  std::optional<reference_findings> reference;  // the second verdict, when the spec names a reference
  // Harness power: per backend, how its server writes logprobs (the oracle's resolution), and
  // its path's most recent selftest (absent: none).
  std::map<std::string, number_format> resolution;
  std::map<std::string, selftest_summary> selftests;
  // What the audit saw of its servers: restarts ("a: before group 12: ..."), canaries that
  // could not be judged ("a: the server was never idle ..."), bursts that had foreign load.
  std::vector<std::string> restarts;
  // Backends that hung ("a: URL: /health answers, but no completion since ...; F groups failed,
  // R not run"), read from the reason their groups that were not run carry.
  std::vector<std::string> hung;
  // Per backend, the waits for an idle server before solo groups (spec.wait_for_quiet_s).
  std::vector<std::string> quiet_waits;
  std::vector<std::string> canary_undecided;
  int foreign_load_bursts = 0;
  std::vector<attribution_tally> attributions;  // burst conditions with divergent streams, per backend
  evidence_thresholds thresholds;
  std::vector<search_result> searches;        // threshold_search conditions, per backend
  std::vector<throughput_result> throughput;  // throughput probes, per backend
  std::vector<load_curve> load_curves;        // per backend and load condition, level by level (docs/load.md)
  std::vector<frontier_row> frontier;         // sweeps (or specs with a probe): one row per backend
  std::optional<audit::certificate> certificate;  // a certify job's (audit/certify.hpp)
  // The analyses' sections (audit/analysis.hpp), each read by section<S>(f).
  section_store sections;
};

// The section of type S of `f`, empty when its analysis had nothing to say.
template <class S>
const S& section(const findings& f) {
  static const S none{};
  const S* s = f.sections.find<S>();
  return s ? *s : none;
}

// Judges every observed run of `plan`. Pure: the same inputs give the same findings.
findings evaluate(const audit_spec& spec, const audit_plan& plan, const std::vector<observed_run>& runs,
                  const evaluation_evidence& evidence = {});

// The canonical text of a spec's predictions and its XXH3-64 (hex): what is registered,
// with a time, before the first request.
std::string prediction_registration_text(const std::vector<prediction>& predictions);
std::string prediction_hash(const std::vector<prediction>& predictions);

}  // namespace logitaudit::audit
