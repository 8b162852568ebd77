// A repro's checks, its run on the measuring thread and its end in the store. Every db lambda
// is a named local (GCC 12, see db_call.hpp).
#include "repro_jobs.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>

#include "audit/plan.hpp"
#include "clients/repro.hpp"
#include "db_call.hpp"

namespace logitaudit::daemon {
namespace {

using api::service_errc;

api::service_error refused(service_errc kind, std::string code, std::string message, std::string field) {
  return api::make_error(kind, std::move(code), std::move(message), std::move(field));
}

// The burst of `run` as the audit's plan sent it: the target first, its neighbours in their
// order. Refused when the audit has not ended or the run did not diverge in a burst.
expected<audit::repro_case, api::service_error> case_of(const storage::job_record& job,
                                                        const std::vector<storage::run_record>& runs, std::int64_t run) {
  if (!audit::is_final(job.status)) return unexpected{refused(service_errc::conflict, "not_ended", "the audit has not ended", "id")};
  const auto target = std::find_if(runs.begin(), runs.end(), [run](const storage::run_record& r) { return r.id == run; });
  if (target == runs.end())
    return unexpected{refused(service_errc::not_found, "not_found",
                              "no run " + std::to_string(run) + " in audit " + std::to_string(job.id), "run")};
  if (!target->verdict || target->verdict->logit_identical)
    return unexpected{refused(service_errc::conflict, "not_divergent",
                              "run " + std::to_string(run) + " is not a compared run that diverged from its solo baseline", "run")};
  if (!job.spec)
    return unexpected{refused(service_errc::conflict, "not_reproducible", "the audit's stored spec cannot be read", "id")};
  const auto plan = audit::make_plan(*job.spec);
  if (target->group >= plan.groups.size() || plan.groups[target->group].mode != audit::group_mode::burst ||
      plan.groups[target->group].requests.size() < 2)
    return unexpected{refused(service_errc::conflict, "not_a_burst",
                              "run " + std::to_string(run) + " was not in a burst: nothing shared its batch", "run")};
  const auto& g = plan.groups[target->group];
  return audit::burst_repro_case(plan, g, target->request);
}

using stored_audit = std::pair<storage::job_record, std::vector<storage::run_record>>;

std::optional<stored_audit> read_audit(storage::store& s, std::int64_t audit) {
  std::optional<stored_audit> out;
  if (auto j = s.jobs().get(audit)) out.emplace(std::move(*j), s.evidence().runs(audit, {}));
  return out;
}

// The audit's fingerprint of the backend (the first taken before it, else any), for the bundle.
audit::backend_fingerprint fingerprint_of(storage::store& s, std::int64_t audit, const std::string& backend) {
  audit::backend_fingerprint f;
  for (const auto& rec : s.evidence().fingerprint_records(audit))
    if (rec.backend == backend && (f.api.empty() || rec.phase == audit::fingerprint_phase::before)) f = rec.fingerprint;
  return f;
}

}  // namespace

repro_jobs::repro_jobs(storage::db_worker& db, job_lifecycle& lifecycle, std::string member)
    : db_(db), lifecycle_(lifecycle), member_(std::move(member)) {}

net::awaitable<expected<storage::repro_record, api::service_error>> repro_jobs::create(std::int64_t audit, std::int64_t run,
                                                                                      api::repro_settings settings) {
  const auto& conf = lifecycle_.config();
  if (!settings.trials) settings.trials = conf.repro_trials;
  if (!settings.max_bursts) settings.max_bursts = std::max(conf.repro_max_bursts, *settings.trials);
  // Fewer than 4 trials against 4 solo repeats can never reach Fisher's p < 0.05: no case
  // could ever be shown to differ.
  if (*settings.trials < 4 || *settings.trials > 20)
    co_return unexpected{refused(service_errc::invalid, "invalid_repro",
                                 "must be between 4 and 20 (fewer can never show a difference at p < 0.05)", "trials")};
  if (*settings.max_bursts < *settings.trials || *settings.max_bursts > conf.repro_max_bursts_limit)
    co_return unexpected{refused(service_errc::invalid, "invalid_repro",
                                 "must be between trials and " + std::to_string(conf.repro_max_bursts_limit) +
                                     " (repro.max_bursts_limit)",
                                 "max_bursts")};
  auto read = [audit](storage::store& s) { return read_audit(s, audit); };
  auto got = co_await on_db(db_, std::move(read));
  if (!got) co_return unexpected{refused(service_errc::not_found, "not_found", "no audit with id " + std::to_string(audit), "id")};
  const auto& [job, runs] = *got;
  auto c = case_of(job, runs, run);
  if (!c) co_return unexpected{c.error()};
  const auto& target = *std::find_if(runs.begin(), runs.end(), [run](const storage::run_record& r) { return r.id == run; });
  if (!conf.backends.count(target.backend))
    co_return unexpected{refused(service_errc::invalid, "unknown_backend",
                                 "backend '" + target.backend + "' is not configured in this daemon", "backend")};
  storage::repro_record r;
  r.audit = audit;
  r.run = run;
  r.backend = target.backend;
  r.member = member_;
  r.trials = *settings.trials;
  r.max_bursts = *settings.max_bursts;
  r.created_at = storage::now_utc();
  r.original = audit::describe(*c);
  auto store = [r](storage::store& s) { return s.repros().create(r); };
  r.id = co_await on_db(db_, std::move(store));
  spdlog::info("repro {} queued: audit {} run {} on {}: {}", r.id, audit, run, r.backend, r.original);
  co_return r;
}

net::awaitable<void> repro_jobs::run(std::int64_t id, std::shared_ptr<repro_live> live) {
  const auto now = storage::now_utc();
  auto start = [id, now](storage::store& s) {
    std::optional<std::pair<storage::repro_record, std::optional<stored_audit>>> out;
    auto r = s.repros().get(id);
    if (!r || !s.repros().move(id, audit::job_status::queued, audit::job_status::running, now)) return out;
    auto a = read_audit(s, r->audit);
    out.emplace(std::move(*r), std::move(a));
    return out;
  };
  auto got = co_await on_db(db_, std::move(start));
  if (!got) co_return;
  auto& end = got->first;
  const auto& stored = got->second;
  spdlog::info("repro {}: audit {} run {} on {}", id, end.audit, end.run, end.backend);
  // The audit's evidence again (the repro may have waited, or resumed after a restart).
  expected<audit::repro_case, api::service_error> c = unexpected{
      refused(service_errc::not_found, "not_found", "audit " + std::to_string(end.audit) + " was deleted", "id")};
  if (stored) c = case_of(stored->first, stored->second, end.run);
  const auto& backends = lifecycle_.config().backends;
  const auto backend = backends.find(end.backend);
  clients::repro_result r;
  if (!c) {
    r.message = c.error().message;
  } else if (backend == backends.end()) {
    r.message = "backend '" + end.backend + "' is no longer configured in this daemon";
  } else {
    clients::backend b(co_await net::this_coro::executor, backend->second);
    clients::repro_options o;
    o.limits.trials = end.trials;
    o.limits.max_bursts = end.max_bursts;
    o.cancel = live->stop;
    o.on_progress = [live](const clients::repro_progress& p) {
      live->bursts = p.bursts;
      std::lock_guard lock(live->m);
      live->phase = p.phase;
    };
    try {
      r = co_await clients::find_minimal_repro(b, *c, o);
    } catch (const std::exception& e) {
      r.outcome = clients::repro_outcome::failed;
      r.message = e.what();
    }
    // Stopped by the daemon's shutdown, not by a user: it stays running in the store, and the
    // next start resumes it (or marks it interrupted). One that ended by itself is stored.
    if (r.outcome == clients::repro_outcome::cancelled && !live->by_user) co_return;
  }
  if (c) {
    clients::repro_context ctx;
    ctx.audit = end.audit;
    ctx.run = end.run;
    ctx.backend = end.backend;
    auto fingerprint = [audit = end.audit, name = end.backend](storage::store& s) { return fingerprint_of(s, audit, name); };
    try {
      ctx.fingerprint = co_await on_db(db_, std::move(fingerprint));
    } catch (const std::exception& e) {
      spdlog::warn("repro {}: the audit's fingerprint could not be read: {}", id, e.what());
    }
    end.files = clients::repro_bundle(r, ctx, end.trials);
    end.minimal = audit::describe(r.minimal);
  }
  end.outcome = std::string(clients::to_string(r.outcome));
  end.status = r.outcome == clients::repro_outcome::cancelled ? audit::job_status::cancelled
               : r.outcome == clients::repro_outcome::failed  ? audit::job_status::failed
                                                              : audit::job_status::done;
  end.message = r.message;
  end.bursts = r.bursts;
  end.finished_at = storage::now_utc();
  auto finish = [end](storage::store& s) {
    s.repros().finish(end);
    return 0;
  };
  co_await on_db(db_, std::move(finish));
  spdlog::info("repro {}: {}: {}", id, end.outcome, end.message);
}

api::repro_view view_of(const storage::repro_record& r, const repro_live* live) {
  api::repro_view v;
  v.id = r.id;
  v.audit = r.audit;
  v.run = r.run;
  v.backend = r.backend;
  v.status = std::string(audit::to_string(r.status));
  v.created_at = r.created_at;
  v.started_at = r.started_at;
  v.finished_at = r.finished_at;
  v.bursts = r.bursts;
  v.max_bursts = r.max_bursts;
  v.trials = r.trials;
  if (live && r.status == audit::job_status::running) {
    v.bursts = live->bursts;
    v.phase = live->phase_now();
  }
  v.outcome = r.outcome;
  v.message = r.message;
  v.original = r.original;
  v.minimal = r.minimal;
  v.files = r.files;
  return v;
}

}  // namespace logitaudit::daemon
