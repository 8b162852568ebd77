// Runs an audit plan against real backends: each backend's groups in order; backends on
// different hosts in parallel, backends of one host one after another (host_turn), bursts through run_burst, bounded retries of
// transport failures, cancellation at group boundaries, fingerprints before and after.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "audit/burst_measurement.hpp"
#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "audit/spec.hpp"
#include "audit/states.hpp"
#include "backend.hpp"
#include "selftest.hpp"

namespace logitaudit::clients {

struct run_progress {
  std::size_t done = 0;    // requests finished (ok or failed)
  std::size_t total = 0;   // planned requests, less those skipped
  std::size_t failed = 0;
  std::size_t skipped = 0;  // requests of groups not needed (a decided threshold search)
};

struct group_outcome {
  std::size_t group = 0;
  std::string backend;
  std::vector<audit::observed_run> runs;  // one per planned request, failed ones included
  std::optional<audit::burst_measurement> burst;  // absent for serial groups
  std::optional<audit::load_measurement> load;    // a load level's background and probes
  int attempts = 0;
  bool retryable_failure = false;  // some request failed in a way another attempt may fix
  std::optional<client_errc> first_failure;  // the code of the first request that failed
  std::string first_error;
};

// One retry of a group, as it is decided (logged and counted by the caller).
struct retry_event {
  std::string backend;
  std::size_t group = 0;
  int attempt = 0;       // the attempt that failed
  std::string reason;    // its first failure
  std::string waited;    // what was awaited before the next attempt ("/health answered after 1.2 s")
};

struct runner_options {
  int max_attempts = 3;  // per group, for transport failures and 5xx answers
  std::chrono::milliseconds retry_delay{250};
  std::set<std::size_t> skip_groups;  // resume: groups already stored are not run again
  std::shared_ptr<std::atomic<bool>> cancel;  // checked before each group
  std::function<void(const run_progress&)> on_progress;
  std::function<void(const group_outcome&)> on_group;  // each group as it completes (persistence)
  // Each fingerprint the moment it is taken (persistence: "before" is stored with its own time).
  std::function<void(const std::string& backend, audit::fingerprint_phase, const audit::backend_fingerprint&)> on_fingerprint;
  // Asked before each group: false skips it (a threshold search's width already decided).
  std::function<bool(const audit::request_group&)> wanted;
  // Managed backends: their server is started when the backend's turn comes (start_server
  // returns its URL) and stopped when its turn ends. A server that does not start fails the
  // backend's every request with the reason.
  std::set<std::string> managed;
  std::function<net::awaitable<expected<std::string, std::string>>(const std::string& backend)> start_server;
  std::function<void(const std::string& backend)> stop_server;
  // What is known of a started server's machine (read at each of its fingerprints).
  std::function<std::map<std::string, std::string>(const std::string& backend)> server_machine;
  // A spec that asks for it: each backend's selftest, as it comes (the daemon stores it, so the
  // audit's evaluation cites it).
  std::function<void(const std::string& backend, const backend_config& config, const selftest_result&)> on_selftest;
  // Each retry, before it is made (the daemon logs a warning and counts it in /metrics).
  std::function<void(const retry_event&)> on_retry;
  // A backend found hung (its health target answers, a completion of one token does not within
  // the group's deadline): told once, with the words the report uses.
  std::function<void(const std::string& backend, const std::string& hang)> on_hung;
  // A connection refused or reset, or a 503 (a server restarting, loading its model): the
  // next attempt waits for the kind's health target to answer 2xx, at most this long.
  std::chrono::milliseconds health_wait{15'000};
  // The first-byte deadline of a group: this multiple of the longest solo request the backend
  // answered in this audit, times the group's width, never below the floor (and never above
  // the configured deadline). A request that stalls is then seen in seconds.
  double first_byte_multiple = 10;
  std::chrono::milliseconds first_byte_floor{5'000};
  // A canary that moved while the server had company is taken again once the server is
  // idle (no request processing), waiting at most this long; else it is undecided.
  std::chrono::milliseconds idle_wait{10'000};
  // A solo request (or the canary) was alone when the server's busy slots per decode stayed at
  // or below this.
  double solo_busy_slots = 1.05;
};

struct job_outcome {
  std::vector<group_outcome> groups;  // in completion order
  std::map<std::string, audit::backend_fingerprints> fingerprints;
  std::vector<std::string> errors;  // fingerprint failures and the like, for the job's record
  // Each backend that hung ("NAME: URL: /health answers, but no completion since ...; F groups
  // failed, N not run"): its remaining groups are recorded with the reason backend_hung.
  std::vector<std::string> hung;
  bool cancelled = false;

  std::vector<audit::observed_run> runs() const;
};

// Whether a failure is worth another attempt (the server may answer next time).
bool retryable(const client_error& e);

// The request the plan means, in the client's terms.
completion_request to_request(const audit::planned_request& r, const audit::audit_plan& plan);

// Runs `plan` (from `spec`) on the backends in `configs` (keyed by spec backend name).
// Suspends until every group has run, failed or been cancelled. Throws only on bugs.
net::awaitable<job_outcome> run_audit(audit::audit_spec spec, audit::audit_plan plan,
                                      std::map<std::string, backend_config> configs, runner_options options);

}  // namespace logitaudit::clients
