// The storage interfaces: jobs, evidence, schedules, and the housekeeping only a file-backed
// SQLite database has. The daemon, the API and the CLI see these and nothing of the engine;
// open_store() picks the implementation. Every method may throw storage_error. No
// implementation is thread-safe: one store lives on one thread (db_worker).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "audit/baselines.hpp"
#include "records.hpp"

namespace logitaudit::storage {

class job_repository {
 public:
  virtual ~job_repository() = default;
  virtual std::int64_t create(const new_job& j) = 0;
  // started_at is set on the first `running`, finished_at on a final status.
  virtual void set_status(std::int64_t job, audit::job_status status, const std::string& at, const std::string& error = {}) = 0;
  // The job's end, in one transaction: its status and error, every verdict, every burst's
  // verdict, the predictions and the findings (as the API renders them, `findings_json`).
  virtual void finish(std::int64_t job, audit::job_status status, const std::string& error, const audit::findings& f,
                      const std::string& findings_json, const std::string& at) = 0;
  // The requests the job plans, once a threshold search has skipped the trials it did not need.
  virtual void set_total_requests(std::int64_t job, std::int64_t total) = 0;
  // Progress a job makes through jobs of its own (an advise job's certify jobs): requests done.
  virtual void add_done_requests(std::int64_t job, std::int64_t n) = 0;
  virtual std::optional<job_record> get(std::int64_t job) = 0;
  virtual std::vector<job_record> with_status(audit::job_status status) = 0;  // oldest first
  // What the queue needs to start jobs (their backends, whether they start servers), from
  // columns: of the jobs with `status`, oldest first, and of one job.
  virtual std::vector<job_holding> holdings(audit::job_status status) = 0;
  virtual std::optional<job_holding> holding(std::int64_t job) = 0;
  virtual std::vector<job_record> page(const job_query& q) = 0;
  virtual std::vector<job_record> of_schedule(std::int64_t schedule, int limit) = 0;  // newest first
  // The series the stored jobs form, the one with the newest job first.
  virtual std::vector<series_summary> series(const series_filter& filter) = 0;
  // The newest `limit` jobs of a series, oldest first.
  virtual std::vector<job_record> series_jobs(const series_key& key, int limit) = 0;
  virtual std::map<audit::job_status, std::int64_t> counts() = 0;
  virtual std::vector<std::int64_t> ids() = 0;
  virtual std::vector<prediction_record> predictions(std::int64_t job) = 0;
  // Deletes the job and everything stored for it; false when there was none.
  virtual bool remove(std::int64_t job) = 0;
};

class evidence_repository {
 public:
  virtual ~evidence_repository() = default;
  // Stores finished groups, each whole (its runs, streams and burst) or not at all, in one
  // transaction, and adds them to the job's progress.
  virtual void record_groups(std::int64_t job, const std::vector<group_write>& groups) = 0;
  // "before" keeps the first one stored (a resumed job keeps its real start); "after" the last.
  virtual void record_fingerprint(std::int64_t job, const std::string& backend, audit::fingerprint_phase phase,
                                  const audit::backend_fingerprint& f, const std::string& taken_at) = 0;
  virtual std::set<std::size_t> stored_groups(std::int64_t job) = 0;
  // Runs in plan order without their streams' bytes, with their verdicts once the job ended.
  virtual std::vector<run_record> runs(std::int64_t job, const run_filter& filter = {}) = 0;
  virtual std::optional<run_record> run(std::int64_t job, std::int64_t run) = 0;
  // One run with its stream decoded; reads that run's bytes only.
  virtual std::optional<stream_record> stream(std::int64_t job, std::int64_t run) = 0;
  // Every stored run as the runner observed it (streams decoded, with the server's account),
  // for evaluating the job from what was stored.
  virtual std::vector<audit::observed_run> observations(std::int64_t job) = 0;
  virtual std::vector<burst_record> bursts(std::int64_t job) = 0;
  // The figures of each load level of `job`, by group index (docs/load.md).
  virtual std::map<std::size_t, audit::load_measurement> load_levels(std::int64_t job) = 0;
  virtual std::vector<fingerprint_record> fingerprint_records(std::int64_t job) = 0;
  virtual std::map<std::string, audit::backend_fingerprints> fingerprints(std::int64_t job) = 0;
  // The job's solo baselines that succeeded, decoded, each with its evidence of being alone
  // (judged by the reader: audit::not_solo_reason).
  virtual std::vector<audit::baseline_stream> baselines(std::int64_t job) = 0;
  // The stored bytes and digests of every ok run, as written.
  virtual std::vector<stored_stream> stored_streams(std::int64_t job) = 0;
  // Selftests of backends' paths: stored whole (returns its id); the newest of a backend at a
  // URL; the newest `limit` of a backend ("" for all), newest first.
  virtual std::int64_t record_selftest(const selftest_record& s) = 0;
  virtual std::optional<selftest_record> latest_selftest(const std::string& backend, const std::string& url) = 0;
  virtual std::vector<selftest_record> selftests(const std::string& backend, int limit) = 0;
};

class schedule_repository {
 public:
  virtual ~schedule_repository() = default;
  // Inserts (id 0) or updates; returns the id.
  virtual std::int64_t save(const schedule_record& r) = 0;
  // Moves schedule `id`'s next fire from `from` to `next` and records its last fire, only if
  // its next fire is still `from`: false when another daemon (or an edit) moved it meanwhile,
  // whose newer record then stands.
  virtual bool advance(std::int64_t id, std::int64_t from, std::optional<std::int64_t> next,
                       std::optional<std::int64_t> last_fire) = 0;
  virtual std::optional<schedule_record> get(std::int64_t id) = 0;
  virtual std::vector<schedule_record> list() = 0;
  // Its jobs stay, unlinked; false when there was none.
  virtual bool remove(std::int64_t id) = 0;
};

class alert_repository {
 public:
  virtual ~alert_repository() = default;
  // Stores a pending delivery; returns its id.
  virtual std::int64_t enqueue(const std::string& url, const std::string& payload, const std::string& at) = 0;
  virtual void record_attempt(std::int64_t id, audit::delivery_status status, int attempts, unsigned http_status,
                              const std::string& error, const std::string& at) = 0;
  virtual std::vector<alert_delivery> pending() = 0;  // oldest first
  virtual std::vector<alert_delivery> recent(int limit) = 0;  // newest first
};

// Repros (records.hpp), one row each from their queueing to their end.
class repro_repository {
 public:
  virtual ~repro_repository() = default;
  virtual std::int64_t create(const repro_record& r) = 0;  // stored queued; returns its id
  virtual std::optional<repro_record> get(std::int64_t id) = 0;
  // Of one daemon's repros (by member) those with `status`, oldest first.
  virtual std::vector<repro_record> with_status(audit::job_status status, const std::string& member) = 0;
  // Moves a repro from `from` to `to` (started_at set when `to` is running, finished_at when
  // it is final); false when it was not in `from` (another move came first).
  virtual bool move(std::int64_t id, audit::job_status from, audit::job_status to, const std::string& at) = 0;
  // Its end: status, bursts, outcome, message, the cases, files and finished_at of `r`.
  virtual void finish(const repro_record& r) = 0;
  // Every daemon's repros that have not ended (queued or running), oldest first.
  virtual std::vector<repro_record> unfinished() = 0;
  // Makes `to` the daemon of repro `id` if `from` still is and it has not ended; false when
  // another daemon came first.
  virtual bool adopt(std::int64_t id, const std::string& from, const std::string& to) = 0;
};

// Many daemons on one database (PostgreSQL): who is alive, and which jobs each holds. A job
// is leased with its backends (SELECT ... FOR UPDATE SKIP LOCKED on the jobs, a unique row
// per backend), kept by heartbeats, and taken over by another member when its lease expires.
class fleet_repository {
 public:
  virtual ~fleet_repository() = default;
  // Registers this process, and makes it the member whose leases fence this store's writes:
  // from now on, a job's groups, status and end are refused (kind lease_lost) once another
  // member holds the job's lease.
  virtual void join(const fleet_member& me, int ttl_s) = 0;
  // Extends the member's heartbeat and every lease it holds by ttl_s; returns the jobs it holds
  // that a user asked (through any member) to cancel. `running`: the jobs it runs now;
  // `holding`: the backends it holds for no job now (a selftest, a repro). Leases a lost write
  // left behind are dropped first: those of jobs that have ended, those of jobs not in
  // `running` leased more than ttl_s ago (their end was lost: another claim resumes them), and
  // job-less ones of backends not in `holding`. Throws storage_error.
  virtual std::vector<std::int64_t> heartbeat(const std::string& member, int ttl_s, const std::set<std::int64_t>& running,
                                              const std::set<std::string>& holding) = 0;
  // Leases the oldest job that is queued, or running under an expired lease (set back to
  // queued, to be resumed), whose backends no live lease holds; nullopt when there is none.
  // Jobs in `skip` are passed over.
  virtual std::optional<claimed_job> claim(const std::string& member, int ttl_s, const std::set<std::int64_t>& skip) = 0;
  virtual void release(const std::string& member, std::int64_t job) = 0;
  // Leases `backend` alone for a holder that is no job ("selftest", "repro 12"), as a claim
  // leases a job's backends: false while a live lease holds it. Kept by the member's
  // heartbeats, released by release_backend, taken by anyone once it expires. Both throw
  // storage_error.
  virtual bool hold_backend(const std::string& member, const std::string& backend, const std::string& holder, int ttl_s) = 0;
  virtual void release_backend(const std::string& member, const std::string& backend, const std::string& holder) = 0;
  // Releases every lease of the member and removes it from the fleet (a clean stop).
  virtual void leave(const std::string& member) = 0;
  // Asks the member running `job` to stop it at its next group; false when no lease holds it.
  virtual bool request_cancel(std::int64_t job) = 0;
  virtual std::vector<fleet_member> members() = 0;  // live ones first, then the newest
  virtual std::vector<job_lease> leases() = 0;       // live ones, by job
};

// The chores of a database that is one file (SQLite).
class file_maintenance {
 public:
  virtual ~file_maintenance() = default;
  // Caps the file at about `max_bytes`: writes beyond it fail as on a full disk (kind full),
  // and nothing stored is touched.
  virtual void limit_size(std::int64_t max_bytes) = 0;
  // Rebuilds the file to hand back the space of deleted jobs.
  virtual void vacuum() = 0;
  // A consistent copy while the store stays usable.
  virtual void backup(const std::string& destination) = 0;
  // "ok", or the first problem found.
  virtual std::string integrity_check() = 0;
  // Moves the write-ahead log into the file, so that its size is the whole database's.
  virtual void checkpoint() = 0;
};

class store {
 public:
  virtual ~store() = default;
  virtual job_repository& jobs() = 0;
  virtual evidence_repository& evidence() = 0;
  virtual schedule_repository& schedules() = 0;
  virtual alert_repository& alerts() = 0;
  virtual repro_repository& repros() = 0;
  // nullptr where the engine has no such chores.
  virtual file_maintenance* maintenance() = 0;
  // nullptr where one process holds the database (SQLite).
  virtual fleet_repository* fleet() = 0;
  virtual int schema_version() = 0;
  // While the database server is away and the db thread holds group writes it did not take,
  // every statement fails at once as unavailable, saying `why`, so that nothing reads around
  // the held writes; resume_statements() ends that. A no-op for an engine with no server.
  virtual void suspend_statements(const std::string& why) = 0;
  virtual void resume_statements() = 0;
  // Where it lives, for messages ("logitaudit.db").
  virtual std::string location() const = 0;
};

// Opens (creating and migrating) the store at `location`: a PostgreSQL URL
// ("postgresql://user@host:port/database"), or a SQLite file path, or ":memory:" for a SQLite
// database that lives as long as the store. Throws storage_error.
std::unique_ptr<store> open_store(const std::string& location);

// True for "postgresql://..." and "postgres://...": what open_store() hands to PostgreSQL.
bool is_postgres_url(const std::string& location);
// The location as messages and logs may show it: a URL's password (user:PASSWORD@, or
// password=) replaced by "***"; a path as it is.
std::string redact_url(const std::string& location);

}  // namespace logitaudit::storage
