// What is stored, as plain values: jobs, the evidence of their runs (streams, bursts,
// fingerprints, verdicts) and schedules. No storage engine appears here: the repositories
// (repositories.hpp) hand these out, whatever database is behind them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "audit/burst_measurement.hpp"
#include "audit/decode_steps.hpp"
#include "audit/evidence.hpp"
#include "audit/findings.hpp"
#include "audit/predictions.hpp"
#include "audit/fingerprint.hpp"
#include "audit/logit_stream.hpp"
#include "audit/plan.hpp"
#include "audit/spec.hpp"
#include "audit/states.hpp"

namespace logitaudit::storage {

// A database that fails is broken infrastructure, not an input the caller can fix: storage
// errors are exceptions, with a kind that says what a caller may tell its user.
struct storage_error : std::runtime_error {
  enum class kind {
    full,          // the disk, or the configured size cap, is full
    busy,          // another process holds the database
    newer_schema,  // written by a newer logitaudit
    unavailable,   // the database server cannot be reached (PostgreSQL)
    conflict,      // a row that must be unique exists already (a schedule's fire, a stored group)
    lease_lost,    // another daemon of the fleet holds the job now
    invalid,       // rows from outside (an evidence bundle) that do not fit this database, named
    broken,        // anything else: corruption, I/O errors, a bug
  };
  storage_error(kind k, const std::string& what) : std::runtime_error(what), why(k) {}
  kind why;
};

struct new_job {
  audit::audit_spec spec;  // as admitted; spec_json is its stored encoding (documents.hpp)
  std::string spec_json;
  std::string spec_hash;
  std::string prediction_hash;
  std::string predictions_registered_at;  // RFC 3339 UTC
  std::size_t total_requests = 0;
  std::size_t total_groups = 0;
  std::vector<std::string> tags;
  std::optional<std::int64_t> schedule_id;
  // The fire time (Unix seconds) of the schedule's fire that made the job: one job per fire,
  // across every daemon on the database (a second one is a storage_error of kind conflict).
  std::optional<std::int64_t> fire_unix;
  std::string created_at;
  std::vector<std::string> backends;  // by name: the series the job belongs to
  bool starts_servers = false;        // the daemon starts its backends' servers (managed backends)
  // Stored running: a job another job runs itself (an advise job's certify jobs), which the
  // queue never takes.
  bool held = false;
};

// A job as the queue sees it, read from columns and never from its spec: what it holds while
// it runs.
struct job_holding {
  std::int64_t id = 0;
  std::vector<std::string> backends;  // by name
  bool starts_servers = false;
};

// A daemon of a fleet (many daemons on one PostgreSQL database).
struct fleet_member {
  std::string id;  // unique per process: host, pid and start time
  std::string host;
  std::int64_t pid = 0;
  std::string listen;
  std::string version;
  std::string started_at, heartbeat_at;  // RFC 3339 UTC, as the database's clock says
  bool alive = false;                    // its heartbeat is within its lease time
};

// A job leased by a member: no other member runs it, or any of its backends, until it expires.
struct job_lease {
  std::int64_t job = 0;
  std::string member;
  std::string leased_at, expires_at;
  std::vector<std::string> backends;
  int takeovers = 0;  // how often the job was taken over from a member whose lease expired
  bool cancel_requested = false;
};

// What claim() leased.
struct claimed_job {
  std::int64_t id = 0;
  std::string taken_from;  // the member whose expired lease this replaced; empty for a queued job
};

struct job_record {
  std::int64_t id = 0;
  audit::job_status status = audit::job_status::queued;
  // The spec's stored bytes (hashed into spec_hash, served as they are), decoded once when the
  // row is read by storage's codec (documents.hpp): nobody else parses them. nullopt: the text
  // is not a spec this build reads.
  std::string spec_json;
  std::optional<audit::audit_spec> spec;
  std::string spec_hash, prediction_hash, predictions_registered_at;
  std::int64_t total_requests = 0, done_requests = 0, failed_requests = 0, total_groups = 0;
  std::string error;
  std::vector<std::string> tags;
  std::optional<std::int64_t> schedule_id;
  std::string created_at, started_at, finished_at;
  // The findings as stored (empty until the job ends with findings), and decoded the same way.
  std::string findings_json;
  std::optional<audit::findings> findings;
  // An audit imported from an evidence bundle: where it was measured (origin empty: here).
  struct import_provenance {
    std::string origin;    // "host:database" of the exporting daemon
    std::int64_t audit = 0;  // its id there
    std::string version;   // the exporting logitaudit's version
    std::string imported_at;
    bool imported() const { return !origin.empty(); }
  } provenance;

  // The row create(j) stored as `id`, without reading it back (and decoding its spec again).
  static job_record queued(const new_job& j, std::int64_t id) {
    job_record r;
    r.id = id;
    r.spec_json = j.spec_json;
    r.spec = j.spec;
    r.spec_hash = j.spec_hash;
    r.prediction_hash = j.prediction_hash;
    r.predictions_registered_at = j.predictions_registered_at;
    r.total_requests = static_cast<std::int64_t>(j.total_requests);
    r.total_groups = static_cast<std::int64_t>(j.total_groups);
    r.tags = j.tags;
    r.schedule_id = j.schedule_id;
    r.created_at = j.created_at;
    return r;
  }
};

// Newest first; every member narrows ("" / nullopt / 0: no bound).
struct job_query {
  std::optional<audit::job_status> status;
  std::string tag;
  std::int64_t before = 0;  // ids below this
  int limit = 50;
};

// One finished group, as the runner saw it. Points into the job's plan, which must outlive
// the write.
struct group_write {
  const audit::audit_plan* plan = nullptr;
  const audit::request_group* group = nullptr;
  std::vector<audit::observed_run> runs;  // one per planned request
  std::optional<audit::burst_measurement> burst;
  int attempts = 1;
  // Keeps `plan` (and `group`, inside it) alive while the write waits on the db thread: a job
  // that ends (a full disk) frees its plan while its last groups may still be queued.
  std::shared_ptr<const audit::audit_plan> owner;
  std::optional<audit::load_measurement> load;  // a load level's figures (its background is never stored)
};

// One fingerprint of a job's backend, as taken; written like a group (held while the
// database server is away), since an audit without both of a backend's fingerprints cannot
// say that the server stayed the same.
struct fingerprint_write {
  std::string backend;
  audit::fingerprint_phase phase = audit::fingerprint_phase::before;
  audit::backend_fingerprint fingerprint;
  std::string taken_at;
};

// A compared run's verdict, stored when its job ends.
struct verdict_record {
  bool logit_identical = false, token_identical = false;
  int first_logit_difference = -1, first_token_difference = -1;
  double max_abs_delta = 0, mean_abs_delta = 0;
  std::uint64_t max_ulp = 0;
  std::optional<double> margin_at_flip;
  audit::evidence_flag flag = audit::evidence_flag::none;
  std::string flag_reason;
  int first_text_difference = -1;
  // The batch at the first difference (a burst's decode steps): its width there and just
  // before, and the joins and finishes between. nullopt: no steps reach it.
  std::optional<int> width_at_difference, width_before_difference;
  std::string events_before_difference;
};

// One run without its stream's bytes: what it asked, how it went, the stream's identity and
// the server's own account of it.
struct run_record {
  std::int64_t id = 0;
  std::size_t group = 0, request = 0;
  std::string backend, condition;
  int replicate = 0;
  std::string prompt;
  double temperature = 0;
  std::optional<std::int64_t> seed;
  bool cache_prompt = false;
  std::optional<std::int64_t> id_slot;  // the slot the request asked for
  bool compared = false;
  std::optional<std::int64_t> baseline_group;
  bool ok = false;
  std::string error;
  std::int64_t write_ns = 0, first_byte_ns = 0, last_byte_ns = 0;
  // ok runs:
  std::optional<audit::stream_digests> digests;
  std::int64_t token_count = 0;
  std::string stop_reason;
  std::int64_t prompt_tokens = -1, cached_tokens = -1, slot = -1;  // as the server said; -1: not said
  audit::server_timings server;
  // As stored (storage/stream_documents.hpp), set into the stream when it is read: each
  // token's text ("" before schema 7), and streamed token times (schema 8).
  std::string token_texts, token_times;
  std::optional<audit::run_steps> decode_steps;  // burst members: the reconstructed steps (schema 8)
  std::optional<double> company;  // serial requests: the server's busy slots per decode while it ran
  std::optional<verdict_record> verdict;
};

struct run_filter {
  std::string condition;  // "" any; "baseline" the solo baselines
  std::string backend;
};

// One run with its stream decoded (ids, logprobs, top-k) and its text.
struct stream_record {
  run_record run;
  audit::logit_stream stream;
  std::string pruned_at;  // its bytes were removed by the retention policy then ("": kept); stream is then empty
};

// A stored stream's bytes and digests, as written: what `verify` recomputes.
struct stored_stream {
  std::int64_t run = 0;
  std::vector<std::uint8_t> token_digest, logit_digest, encoding;
  std::string pruned_at;  // its bytes were removed by the retention policy then ("" : kept)
};

struct burst_record {
  std::size_t group = 0;
  std::string backend, condition;
  int replicate = 0;
  audit::burst_measurement measurement;
  std::optional<audit::burst_verdict> verdict;  // stored when the job ends
};

// One selftest of a backend's path against seeded faults (clients/selftest.hpp), as stored.
struct selftest_record {
  std::int64_t id = 0;
  std::string backend, url, api;
  std::string taken_at;  // RFC 3339 UTC
  audit::harness_power power;
  std::string paths;  // "serial, burst, sse, openai"
  audit::selftest_summary summary() const {
    return {id, taken_at, power.caught, power.faults, power.equivalents_flagged, power.equivalents, power.passed(),
            power.summary(), paths};
  }
};

// A repro (docs/explain.md): a divergent burst run reduced against its live server, a job of
// its own. It is queued, holds its backend through the queue, runs on the measuring thread and
// ends with its outcome and bundle; a daemon that stops while it runs resumes it from its start
// on the next start (or marks it interrupted).
struct repro_record {
  std::int64_t id = 0;
  std::int64_t audit = 0, run = 0;  // the divergent run, in its audit
  std::string backend;              // configured, by name: what it holds
  std::string member;               // the daemon that runs it ("" alone; a fleet member's name)
  audit::job_status status = audit::job_status::queued;
  int trials = 0, max_bursts = 0;
  int bursts = 0;  // once ended (a running one's live count is the queue's)
  std::string created_at, started_at, finished_at;
  std::string outcome, message;   // once ended (clients::repro_outcome)
  std::string original, minimal;  // the cases, described
  std::map<std::string, std::string> files;  // the bundle, once ended
};

struct fingerprint_record {
  std::string backend;
  audit::fingerprint_phase phase = audit::fingerprint_phase::before;
  audit::backend_fingerprint fingerprint;
  std::string taken_at;  // RFC 3339 UTC, when it was read from the server
};

struct prediction_record {
  std::string id;
  audit::prediction_outcome outcome = audit::prediction_outcome::undecided;
  int k = 0, n = 0, flagged = 0;
};

struct schedule_record {
  std::int64_t id = 0;  // 0: not stored yet
  std::string cron;
  std::string timezone = "UTC";
  std::string spec_json;                   // as stored, like a job's
  std::optional<audit::audit_spec> spec;   // decoded once when the row is read
  bool enabled = true;
  audit::missed_fire_policy missed = audit::missed_fire_policy::run_once;
  std::string created_at;
  std::optional<std::int64_t> next_fire_unix;
  std::optional<std::int64_t> last_fire_unix;
};

// A series: the audits of one schedule on one backend, or the ad-hoc audits (no schedule) of
// one spec (by its hash) on one backend.
struct series_key {
  std::optional<std::int64_t> schedule;
  std::string spec_hash;  // ad-hoc series; ignored for a schedule's
  std::string backend;
  bool operator==(const series_key&) const = default;
};

struct series_summary {
  series_key key;
  std::int64_t audits = 0, first_job = 0, last_job = 0;
  std::string last_spec_hash, last_time;
};

// Every member narrows ("" / nullopt: no bound).
struct series_filter {
  std::string backend;
  std::string spec_hash;
  std::optional<std::int64_t> schedule;
};

// One alert to one webhook: stored before its first attempt, updated after each, so that
// a delivery the daemon did not finish is resumed when it starts again.
struct alert_delivery {
  std::int64_t id = 0;
  std::string url;      // the webhook (its secret is never stored)
  std::string payload;  // the JSON body, as signed
  std::string created_at;
  audit::delivery_status status = audit::delivery_status::pending;
  int attempts = 0;
  unsigned last_status = 0;  // the receiver's last HTTP status; 0: none
  std::string last_error, last_attempt_at;
};

// The current time as RFC 3339 UTC with milliseconds.
std::string now_utc();
// The time `days` days ago, in the same form (timestamps of that form compare as text).
std::string utc_days_ago(int days);

}  // namespace logitaudit::storage
