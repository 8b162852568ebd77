// The history of a series (the audits of one schedule on one backend, or of ad-hoc audits of
// one spec on one backend) told as the second seed document tells drift from a real change:
// noise is intermittent and unbiased, a real change is a consistent, directional step.
// Every transition between consecutive audits is classified from the solo baselines' digests,
// the declared fingerprint and the identical-rates. Pure: the same audits give the same answer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprint.hpp"
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
  int n = 0, logit_identical = 0, token_identical = 0, flagged = 0, failed = 0;
  int bursts = 0, batched = 0;  // concurrent and cross-batch conditions: the batching evidence
};

// One audit of a series, as stored.
struct series_audit {
  std::int64_t job = 0;
  std::string time;    // RFC 3339 UTC, when it was created
  std::string status;  // the job's status
  bool ended = false;  // done: its baselines and verdicts exist
  bool valid = false;
  std::string invalid_reason;
  bool server_changed = false;  // its fingerprint (or canary) moved between its start and end
  std::optional<backend_fingerprint> before, after;
  std::map<std::string, baseline_digests> baselines;  // by baseline label (prompt, sampling)
  std::vector<condition_counts> conditions;            // in spec order
};

// Every threshold of the classification; the daemon's configuration keys `history.*`.
struct history_thresholds {
  double confidence = 0.95;     // of the Jeffreys intervals
  double rate_shift_q = 0.05;   // Benjamini-Hochberg q below which a rate moved
  int rate_min_history = 3;     // earlier audits a segment needs before a rate shift can fire
  int rate_window = 1;          // the latest audits tested against the segment's earlier ones
  int confirm_after = 1;        // following audits that must keep a step (or a shift) to confirm it
};

enum class transition_kind {
  unchanged,          // every shared baseline digest is equal
  explained,          // the baselines changed with a declared fingerprint field
  unexplained_step,   // the baselines changed, no declared field did
  intermittent,       // the baselines went back to, or on from, values of the same fingerprint
  not_comparable,     // one side has no baselines to compare (failed, server changed, none shared)
};
std::string_view to_string(transition_kind k);

enum class change_state {
  suspected,      // seen on the latest audits only
  confirmed,      // the following audits kept it
  not_persistent, // the following audits did not keep it: a single night
};
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
  std::vector<rate_shift> rate_shifts;
  std::string reason;  // not_comparable: why
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

struct series_history {
  std::vector<fingerprint_segment> segments;
  std::vector<transition> transitions;  // between consecutive comparable audits, oldest first
  // The series' state from its latest audits: "no_history", "stable", "explained_change",
  // "step_suspected", "step_confirmed", "intermittent", "rate_shift_suspected",
  // "rate_shift_confirmed", "server_changed", "failed".
  std::string state;
};

// Classifies the series `audits` (oldest first).
series_history analyse_series(const std::vector<series_audit>& audits, const history_thresholds& t = {});

// The states analyse_series can report, in the order of their gauge values.
const std::vector<std::string_view>& series_states();

}  // namespace logitaudit::audit
