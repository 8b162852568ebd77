// The history of a series (the audits of one schedule on one backend, or of ad-hoc audits of
// one spec on one backend) told as the second seed document tells drift from a real change:
// noise is intermittent and unbiased, a real change is a consistent, directional step.
// Every transition between consecutive audits is classified from the solo baselines' digests,
// the declared fingerprint and the identical-rates. Pure: the same audits give the same answer.
#pragma once

#include <boost/describe/enum.hpp>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprint.hpp"
#include "states.hpp"
#include "statistics.hpp"

namespace logitaudit::audit {

// The digests of one solo baseline (hex).
struct baseline_digests {
  std::string logit, token;
  bool operator==(const baseline_digests&) const = default;
};

// One condition's counted streams in one audit (flagged and failed streams are not in n).
struct condition_counts {
  std::string condition;
  bool control = false;
  bool repeat = false;  // serial repeats: the audit's evidence of being stable within itself
  int n = 0, logit_identical = 0, token_identical = 0, flagged = 0, failed = 0;
  int bursts = 0, batched = 0;  // concurrent and cross-batch conditions: the batching evidence
};

// An audit's streams against its reference audit (a nightly gate), from its findings.
struct reference_summary {
  std::int64_t audit = 0;
  int baselines = 0, baselines_matching = 0;  // the solo baselines
  int streams = 0, streams_matching = 0;      // every stream compared, baselines included
  int not_comparable = 0, baselines_not_comparable = 0;
  std::vector<std::string> differing_fields;  // this backend's fingerprint against the reference's
  // The gate (reference_findings::all_match): the solo baselines alone; streams under load move
  // with the batch on a server that is not batch-invariant, and are reported, not gated. Three
  // states: all matched (and at least one was compared); a mismatch (a solo baseline differs,
  // what alerts); else undecided (a baseline not alone, or none compared), which never alerts.
  bool all_match() const { return baselines > 0 && baselines_matching == baselines && baselines_not_comparable == 0; }
  bool mismatch() const { return baselines_matching < baselines; }
};

// One audit of a series, as stored.
struct series_audit {
  std::int64_t job = 0;
  std::string time;    // RFC 3339 UTC, when it was created
  job_status status = job_status::done;
  bool ended = false;  // done: its baselines and verdicts exist
  bool valid = false;
  std::string invalid_reason;
  bool server_changed = false;  // its fingerprint (or canary) moved between its start and end
  std::optional<backend_fingerprint> before, after;
  std::map<std::string, baseline_digests> baselines;  // by baseline label (prompt, sampling)
  std::vector<condition_counts> conditions;            // in spec order
  std::optional<reference_summary> reference;          // the spec named a reference audit
};

// Every threshold of the classification; the daemon's configuration keys `history.*`.
struct history_thresholds {
  double confidence = 0.95;     // of the Jeffreys intervals
  double rate_shift_q = 0.05;   // Benjamini-Hochberg q below which a rate moved
  int rate_min_history = 3;     // earlier audits a segment needs before a rate shift can fire
  int rate_window = 1;          // the latest audits tested against the segment's earlier ones
  int confirm_after = 1;        // following audits that must keep a step (or a shift) to confirm it
};

BOOST_DEFINE_ENUM_CLASS(transition_kind,
  unchanged,          // every shared baseline digest is equal
  explained,          // the baselines changed with a declared fingerprint field
  unexplained_step,   // the baselines changed, no declared field did
  intermittent,       // the baselines went back to, or on from, values of the same fingerprint, with evidence of noise
  reversion,          // the baselines returned to earlier values after a step, every audit stable within itself
  not_comparable     // one side has no baselines to compare (failed, server changed, none shared)
)
std::string_view to_string(transition_kind k);

BOOST_DEFINE_ENUM_CLASS(change_state,
  suspected,      // seen on the latest audits only
  confirmed,      // the following audits kept it
  not_persistent // the following audits did not keep it: a single night
)
std::string_view to_string(change_state s);

// A condition's identical-rate that moved inside one fingerprint segment.
struct rate_shift {
  std::string condition;
  std::string level;  // "logit" or "token"
  int before_k = 0, before_n = 0, after_k = 0, after_n = 0;
  double p = 1, q = 1;
  change_state state = change_state::suspected;
  bool upward() const;
};

struct transition {
  std::int64_t from_job = 0, to_job = 0;
  transition_kind kind = transition_kind::unchanged;
  std::optional<change_state> state;        // unexplained_step only
  std::vector<std::string> changed_fields;   // declared categories ("build", "model identity", ...)
  std::vector<std::string> field_details;    // the raw fields ("model_sha256", "generation_settings", ...)
  std::vector<std::string> changed_baselines;  // labels whose digests differ
  int shared_baselines = 0;
  bool canary_changed = false;
  // "cpu_features: avx2 fma -> avx2 fma avx512f": each machine fact that changed, with its values.
  std::vector<std::string> machine_changes;
  std::vector<rate_shift> rate_shifts;
  std::string reason;  // not_comparable: why
  // A classification that a later audit revised: the audit that did (0: none) and what the
  // transition was first classified as ("unexplained_step (suspected)").
  std::int64_t revised_at = 0;
  std::string first_classified;
  // reversion: the audit whose numbers came back, and the audit of the step it reverts.
  std::int64_t returned_to = 0, reverts = 0;
  // The one word for the transition: its kind, or "rate_shift" when only a rate moved.
  std::string classification() const;
  std::string sentence() const;
};

// A run of consecutive comparable audits with the same declared fingerprint.
struct fingerprint_segment {
  std::int64_t first_job = 0, last_job = 0;
  int audits = 0;
  std::vector<std::string> opened_by;  // the declared categories that changed at its start
};

// The series' state from its latest audits (docs/history.md).
BOOST_DEFINE_ENUM_CLASS(series_state,
  no_history,            // fewer than two comparable audits
  stable,                // the latest transition changed nothing
  explained_change,      // the baselines changed with a declared fingerprint field
  rate_shift_suspected,  // an identical-rate moved on the latest audits
  rate_shift_confirmed,  // and the following audits kept it
  intermittent,          // the baselines went back to, or on from, earlier values
  step_suspected,        // the baselines changed and no declared field did
  step_confirmed,        // and the following audits kept it
  server_changed,        // the latest audit's server changed mid-audit
  failed,                // the latest audit did not end
  reverted              // the latest audit brought back the numbers of before a step
)
// In the order of their gauge values.
inline constexpr std::array kSeriesStates = {
    series_state::no_history,    series_state::stable,         series_state::explained_change,
    series_state::rate_shift_suspected, series_state::rate_shift_confirmed, series_state::intermittent,
    series_state::step_suspected, series_state::step_confirmed, series_state::server_changed,
    series_state::failed,        series_state::reverted};
std::string_view to_string(series_state s);
std::optional<series_state> parse_series_state(std::string_view s);

struct series_history {
  std::vector<fingerprint_segment> segments;
  std::vector<transition> transitions;  // between consecutive comparable audits, oldest first
  series_state state = series_state::no_history;
};

// Classifies the series `audits` (oldest first).
series_history analyse_series(const std::vector<series_audit>& audits, const history_thresholds& t = {});

// What an audit's end can tell a webhook: the kinds of alerts (docs/history.md).
BOOST_DEFINE_ENUM_CLASS(alert_kind,
  unexplained_step,  // the baselines changed and no declared field did
  confirmed,         // the audit after a step or a shift kept it
  intermittent,      // the baselines went back to, or on from, earlier values
  rate_shift,        // an identical-rate moved
  explained,         // the baselines changed with a declared field
  server_changed,    // the server changed mid-audit
  failed,            // the audit did not end (a cancelled one is no alert)
  reversion,         // the baselines returned to the numbers of before a step
  revised,           // this audit revised an earlier transition's classification (its alert is out of date)
  reference_mismatch,  // a nightly gate: this audit stopped matching its reference audit
  loop_unhealthy      // a loop of the daemon (the scheduler, the queue, ...) has made no progress for a while
)
inline constexpr std::array kAlertKinds = {alert_kind::unexplained_step, alert_kind::confirmed, alert_kind::intermittent,
                                           alert_kind::rate_shift,       alert_kind::explained, alert_kind::server_changed,
                                           alert_kind::failed,           alert_kind::reversion, alert_kind::revised,
                                           alert_kind::reference_mismatch, alert_kind::loop_unhealthy};
std::string_view to_string(alert_kind k);
std::optional<alert_kind> parse_alert_kind(std::string_view s);

}  // namespace logitaudit::audit
