// The one life of an audit job. create: its spec resolved against the configured backends
// and validated, its predictions registered (hashed, with a time) and the job stored queued.
// run: its groups sent and each stored whole as it finishes, its fingerprints stored the
// moment they are taken, its findings evaluated from what was stored (never from memory), and
// its end written. logitauditd's queue and the offline `logitaudit run` are its two callers,
// so both store and judge the same way, with the error texts written here once.
// Thread-safe: no state but its configuration and the host's devices it keeps a minute (under
// a mutex); `run` may be awaited on any executor (the daemon runs audits on a thread of their
// own, apart from the API).
#pragma once

#include <chrono>
#include <mutex>

#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/service_error.hpp"
#include "audit/evidence.hpp"
#include "audit/expected.hpp"
#include "audit/findings.hpp"
#include "audit/plan.hpp"
#include "audit/spec.hpp"
#include "clients/backend.hpp"
#include "clients/job_runner.hpp"
#include "clients/managed_servers.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

namespace net = boost::asio;

struct lifecycle_config {
  std::map<std::string, clients::backend_config> backends;  // configured, by name
  bool allow_adhoc_backends = false;  // a spec may name URLs that are not configured
  audit::spec_limits limits;
  audit::evidence_thresholds evidence;
  int max_queued_jobs = 0;  // create refuses a job beyond this many queued (0: no bound)
  int max_attempts = 3;     // per group, for transport failures and 5xx answers
  std::chrono::milliseconds retry_delay{250};
  clients::managed_options managed;  // the models and llama-server of managed backends and sweeps
  // Retries and restarts (clients::runner_options): how long a refused backend is waited for,
  // how long a moved canary waits for an idle server, the derived first-byte deadline.
  std::chrono::milliseconds health_wait{15'000};
  std::chrono::milliseconds idle_wait{10'000};
  std::chrono::milliseconds first_byte_floor{5'000};
  double first_byte_multiple = 10;
  // Advise jobs run their certify jobs themselves, which a fleet's members would take over as
  // unleased: a fleet member refuses them.
  bool advise_jobs = true;
  // Repros (config repro.*): a request's defaults and the most bursts one may ask for.
  int repro_trials = 6, repro_max_bursts = 150, repro_max_bursts_limit = 2000;
};

// How a caller stops a running job: at the next group boundary. A stop by a user ends the job
// cancelled; any other stop (a shutdown) leaves it running, to be resumed by the next start.
struct job_stop {
  std::atomic<bool> requested{false};
  std::atomic<bool> by_user{false};
};

struct run_controls {
  std::shared_ptr<job_stop> stop = std::make_shared<job_stop>();
  std::function<void(const clients::run_progress&)> on_progress;
  std::function<void(const clients::group_outcome&)> on_group;  // each group, once queued for storage
  std::function<void()> on_stored;  // each group, once it is on disk (called on the db thread)
};

struct job_end {
  std::int64_t id = 0;
  // running: stopped by a shutdown and left to be resumed.
  audit::job_status status = audit::job_status::running;
  std::string error;
  bool storage_failed = false;  // the error is the database's (a write failed)
  std::optional<audit::findings> findings;  // none when left running or when the spec did not parse
};

class job_lifecycle {
 public:
  job_lifecycle(storage::db_worker& db, lifecycle_config config);

  const lifecycle_config& config() const { return config_; }

  // Expands a sweep into managed backends, fills configured backends' URLs and API kinds into
  // `spec`, and names each backend it may not use (not configured, ad hoc while ad-hoc
  // backends are off, a bad URL, a managed model this daemon does not have).
  std::vector<audit::spec_problem> resolve_backends(audit::audit_spec& spec) const;

  // The compute devices a managed server may have on this host (clients::host_devices), read at
  // most once a minute: reading runs the host's llama-server, which blocks the calling thread
  // (an HTTP thread, at a submission or GET /v1/backends) and takes a core from a measurement.
  clients::device_catalogue devices() const;

  // Where a spec enters (a submission, a schedule's creation or change, and each fire, since
  // the configuration may have changed since): the spec as a whole against this daemon's
  // limits and API kinds, then resolve_backends. The one validation of a spec; no problem: it
  // may be stored.
  std::vector<audit::spec_problem> admit(audit::audit_spec& spec) const;

  // Stores `spec` as a queued job, its predictions registered; a schedule's job with the
  // fire time it is for (one job per fire, whichever daemon fires it). Suspends (db thread).
  // Errors: invalid (every problem, each naming its field), queue_full, storage_full,
  // unavailable, conflict (code already_fired: that fire has its job). Nothing is stored on error.
  // A certify job's conditions, from its claim and the server's shape (audit::expand_certify):
  // what its settings leave out comes from a managed server's settings or the running server's
  // own account. "" when expanded (or already so), else why not.
  net::awaitable<std::string> expand_certify(audit::audit_spec& spec) const;
  // `held`: stored running, for a job that runs it itself (an advise job's certify jobs); the
  // queue never takes it. An advise job is tagged "advise".
  net::awaitable<expected<storage::job_record, api::service_error>> create(audit::audit_spec spec,
                                                                         std::optional<std::int64_t> schedule = std::nullopt,
                                                                         std::optional<std::int64_t> fire_unix = std::nullopt,
                                                                         bool held = false);

  // Runs stored job `id`: the groups not stored yet (a resumed job skips the rest), then its
  // findings from the stored runs, then its end. Suspends until done. Never throws for a
  // failure of the audit: a failed request, a failed write or a spec that does not parse end
  // the job failed with the reason; a shutdown stop leaves it running.
  net::awaitable<job_end> run(std::int64_t id, run_controls controls);

  // Ends the database refused (a full disk, a read-only file): kept here, said by the API in
  // place of the stored "running" (unwritten_end), and written by write_unwritten_ends as soon
  // as the database takes them. Thread-safe.
  std::optional<std::string> unwritten_end(std::int64_t id) const;
  // Suspends (db thread); throws storage_error, naming the audit, while the database refuses.
  net::awaitable<void> write_unwritten_ends();

 private:
  // The steps of run(), each named for what it does.
  // The client configuration of each of the spec's backends, or why the job cannot run.
  expected<std::map<std::string, clients::backend_config>, std::string> client_configs(const audit::audit_spec& spec) const;
  // The runner's options: retries, what is stored already, cancellation, and each group and
  // fingerprint written to the db thread the moment it is measured.
  clients::runner_options runner_of(std::int64_t id, std::shared_ptr<audit::audit_plan> plan, std::set<std::size_t> stored,
                                    const run_controls& controls);
  net::awaitable<void> fail_before_running(std::int64_t id, std::string why);
  // An advise job's second phase (daemon/advice_run.cpp): its configurations ranked from its
  // evaluated findings `f`, then certify jobs of its own from the fastest down until one is
  // certified; what they stored. An earlier run's certify jobs are reused when they ended, and
  // cancelled when they did not.
  // `own_requests`: what the job sent itself (its progress's total before its certify jobs).
  // Suspends (db thread, the certify jobs' runs); a stop ends it before the next certify job.
  net::awaitable<audit::advice_evidence> certify_phase(std::int64_t id, const audit::audit_spec& spec,
                                                       const audit::findings& f, std::int64_t own_requests,
                                                       const run_controls& controls);
  // Stores the end and the findings; returns why that failed (the job is then marked failed),
  // or an empty string.
  net::awaitable<std::string> store_end(std::int64_t id, job_end end, audit::findings f, bool recount,
                                        std::int64_t planned);

  storage::db_worker& db_;
  lifecycle_config config_;
  mutable std::mutex ends_mutex_;
  std::map<std::int64_t, std::string> unwritten_ends_;  // audit -> why it failed
  mutable std::mutex devices_mutex_;
  mutable std::optional<std::pair<std::chrono::steady_clock::time_point, clients::device_catalogue>> devices_;
};

}  // namespace logitaudit::daemon
