// Submissions, reads, cancel and delete. Every db lambda is a named local (GCC 12, see
// db_call.hpp).
#include "job_service.hpp"

#include <spdlog/spdlog.h>

#include "audit/baselines.hpp"
#include "audit/plan.hpp"
#include "clients/repro.hpp"
#include "clients/selftest.hpp"
#include "storage/documents.hpp"
#include "db_call.hpp"

namespace logitaudit::daemon {

job_service::job_service(storage::db_worker& db, job_lifecycle& lifecycle, job_queue& queue, storage::bundle_origin origin,
                         std::size_t max_bundle_bytes)
    : db_(db), lifecycle_(lifecycle), queue_(queue), origin_(std::move(origin)), max_bundle_bytes_(max_bundle_bytes) {}

net::awaitable<expected<storage::job_record, api::service_error>> job_service::submit(audit::audit_spec spec) {
  auto job = co_await lifecycle_.create(std::move(spec));
  if (job) queue_.wake();
  co_return job;
}

net::awaitable<expected<storage::job_record, api::service_error>> job_service::submit_scheduled(audit::audit_spec spec,
                                                                                              std::int64_t schedule,
                                                                                              std::int64_t fire_unix) {
  auto job = co_await lifecycle_.create(std::move(spec), schedule, fire_unix);
  if (job) queue_.wake();
  co_return job;
}

net::awaitable<std::optional<storage::job_record>> job_service::job(std::int64_t id) {
  auto load = [id](storage::store& s) { return s.jobs().get(id); };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<std::optional<storage::job_record>> job_service::wait(std::int64_t id, std::chrono::milliseconds timeout,
                                                                   std::optional<std::int64_t> done_above) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto row = co_await job(id);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (!row || audit::is_final(row->status) || left.count() <= 0) co_return row;
    if (done_above && row->done_requests > *done_above) co_return row;
    co_await queue_.until_change(id, left);
  }
}

net::awaitable<std::vector<storage::job_record>> job_service::jobs(storage::job_query query) {
  auto load = [query](storage::store& s) { return s.jobs().page(query); };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<std::optional<std::vector<storage::run_record>>> job_service::runs(std::int64_t id, storage::run_filter filter) {
  auto load = [id, filter](storage::store& s) -> std::optional<std::vector<storage::run_record>> {
    if (!s.jobs().get(id)) return std::nullopt;
    return s.evidence().runs(id, filter);
  };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<std::optional<storage::stream_record>> job_service::stream(std::int64_t id, std::int64_t run) {
  auto load = [id, run](storage::store& s) { return s.evidence().stream(id, run); };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<std::optional<std::vector<storage::burst_record>>> job_service::bursts(std::int64_t id) {
  auto load = [id](storage::store& s) -> std::optional<std::vector<storage::burst_record>> {
    if (!s.jobs().get(id)) return std::nullopt;
    return s.evidence().bursts(id);
  };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<std::optional<std::vector<storage::fingerprint_record>>> job_service::fingerprints(std::int64_t id) {
  auto load = [id](storage::store& s) -> std::optional<std::vector<storage::fingerprint_record>> {
    if (!s.jobs().get(id)) return std::nullopt;
    return s.evidence().fingerprint_records(id);
  };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<expected<storage::job_record, api::service_error>> job_service::cancel(std::int64_t id) {
  const bool was_running = queue_.cancel(id);
  // A queued job is cancelled where it is stored; a running one stops at its next group.
  // In a fleet another daemon may lease the queued job between the read and the write: the
  // write is then refused (lease_lost), and the cancel goes to that daemon like a running one's.
  bool leased_elsewhere = false;
  auto cancel_queued = [id, &leased_elsewhere](storage::store& s) -> std::optional<std::pair<storage::job_record, bool>> {
    auto r = s.jobs().get(id);
    if (!r) return std::nullopt;
    if (r->status != audit::job_status::queued) return std::pair{*r, false};
    try {
      s.jobs().set_status(id, audit::job_status::cancelled, storage::now_utc());
    } catch (const storage::storage_error& e) {
      if (e.why != storage::storage_error::kind::lease_lost) throw;
      leased_elsewhere = true;
      return std::pair{*s.jobs().get(id), false};
    }
    return std::pair{*s.jobs().get(id), true};
  };
  auto row = co_await on_db(db_, std::move(cancel_queued));
  if (row && !was_running && (row->first.status == audit::job_status::running || leased_elsewhere)) {
    // Leased by another daemon of the fleet: its holder stops it at its next heartbeat.
    auto ask = [id](storage::store& s) { return s.fleet() && s.fleet()->request_cancel(id); };
    co_await on_db(db_, std::move(ask));
  }
  if (!row)
    co_return unexpected{api::make_error(api::service_errc::not_found, "not_found", "no audit with id '" + std::to_string(id) + "'", "id")};
  auto& [job, cancelled_here] = *row;
  if (cancelled_here) queue_.notify(id);
  else if (!was_running && audit::is_final(job.status))
    co_return unexpected{api::make_error(api::service_errc::conflict, "already_finished",
                                         "audit " + std::to_string(id) + " has already ended (" +
                                             std::string(audit::to_string(job.status)) + ")")};
  co_return job;
}

net::awaitable<expected<audit::baseline_comparison, api::service_error>> job_service::compare(std::int64_t a, std::int64_t b) {
  struct side {
    bool exists = false;
    std::vector<audit::baseline_stream> baselines;
    std::map<std::string, audit::backend_fingerprints> fingerprints;
  };
  auto load = [a, b](storage::store& s) {
    std::pair<side, side> out;
    for (auto [id, dst] : {std::pair{a, &out.first}, std::pair{b, &out.second}}) {
      dst->exists = s.jobs().get(id).has_value();
      if (!dst->exists) continue;
      dst->baselines = s.evidence().baselines(id);
      dst->fingerprints = s.evidence().fingerprints(id);
    }
    return out;
  };
  auto [x, y] = co_await on_db(db_, std::move(load));
  for (auto [exists, name, id] : {std::tuple{x.exists, "a", a}, std::tuple{y.exists, "b", b}})
    if (!exists)
      co_return unexpected{api::make_error(api::service_errc::not_found, "not_found", "no audit with id " + std::to_string(id), name)};
  co_return audit::compare_baselines(x.baselines, y.baselines, x.fingerprints, y.fingerprints, lifecycle_.config().evidence);
}

net::awaitable<expected<std::int64_t, api::service_error>> job_service::remove(std::int64_t id) {
  // A running job stops at its group boundary before its rows go.
  if (queue_.cancel(id)) co_await queue_.until_stopped(id);
  auto erase = [id](storage::store& s) { return s.jobs().remove(id); };
  const bool removed = co_await on_db(db_, std::move(erase));
  queue_.notify(id);
  if (!removed) co_return unexpected{api::make_error(api::service_errc::not_found, "not_found", "no audit with id '" + std::to_string(id) + "'", "id")};
  co_return id;
}

net::awaitable<expected<std::string, api::service_error>> job_service::export_bundle(std::vector<std::int64_t> ids) {
  auto origin = origin_;
  origin.exported_at = storage::now_utc();
  auto write = [ids, origin](storage::store& s) { return storage::export_bundle(s, ids, origin); };
  auto text = co_await on_db(db_, std::move(write));
  if (!text)
    co_return unexpected{text.error().not_found
                             ? api::make_error(api::service_errc::not_found, "not_found", text.error().message, "id")
                             : api::make_error(api::service_errc::conflict, "not_finished", text.error().message, "id")};
  co_return std::move(*text);
}

net::awaitable<expected<storage::import_result, api::service_error>> job_service::import_bundle(std::string text) {
  auto b = storage::read_bundle(text, max_bundle_bytes_);
  if (!b) co_return unexpected{api::make_error(api::service_errc::invalid, "invalid_bundle", b.error(), "bundle")};
  auto add = [b = std::move(*b)](storage::store& s) { return storage::import_bundle(s, b, storage::now_utc()); };
  try {
    co_return co_await on_db(db_, std::move(add));
  } catch (const storage::storage_error& e) {
    if (e.why != storage::storage_error::kind::invalid) throw;
    co_return unexpected{api::make_error(api::service_errc::invalid, "invalid_bundle", e.what(), "bundle")};
  }
}

net::awaitable<expected<storage::selftest_record, api::service_error>> job_service::selftest(std::string name) {
  auto it = lifecycle_.config().backends.find(name);
  if (it == lifecycle_.config().backends.end())
    co_return unexpected{api::make_error(api::service_errc::not_found, "not_found", "no configured backend named '" + name + "'", "backend")};
  // Its answers would be an audit's neighbours, and the audit's would be the selftest's: it holds
  // the backend through the queue for its whole length (an audit submitted meanwhile waits), and
  // sends on the measuring thread, as an audit does.
  if (!queue_.hold(name))
    co_return unexpected{api::make_error(api::service_errc::conflict, "backend_busy",
                                         "an audit or a repro holds backend '" + name + "'; try again when it ends", "backend")};
  clients::selftest_result result;
  try {
    const clients::selftest_options options;  // named: GCC 12 mis-destroys a braced temporary in a co_await
    result = co_await net::co_spawn(queue_.audits(), clients::run_selftest(it->second, options), net::use_awaitable);
  } catch (...) {
    queue_.release(name);
    throw;
  }
  queue_.release(name);
  int ran = 0;
  for (const auto& c : result.power.cases) ran += c.got.has_value();
  if (ran == 0)
    co_return unexpected{api::make_error(api::service_errc::unavailable, "backend_unreachable",
                                         "no request to " + it->second.url + " came back" +
                                             (result.power.cases.empty() ? "" : ": " + result.power.cases.front().error),
                                         "backend")};
  storage::selftest_record r;
  r.backend = name;
  r.url = it->second.url;
  r.api = std::string(it->second.api.name());
  r.taken_at = storage::now_utc();
  r.paths = result.paths_text();
  r.power = std::move(result.power);
  auto store = [r](storage::store& s) { return s.evidence().record_selftest(r); };
  r.id = co_await on_db(db_, std::move(store));
  spdlog::info("selftest {} of {}: {}", r.id, name, r.power.summary());
  co_return r;
}

net::awaitable<api::backend_list> job_service::backends() {
  api::backend_list out;
  out.allow_adhoc = lifecycle_.config().allow_adhoc_backends;
  for (const auto& [name, c] : lifecycle_.config().backends)
    out.backends.push_back({name, c.url, std::string(c.api.name()), queue_.busy(name)});
  co_return out;
}

net::awaitable<std::map<audit::job_status, std::int64_t>> job_service::job_counts() {
  auto count = [](storage::store& s) { return s.jobs().counts(); };
  co_return co_await on_db(db_, std::move(count));
}

namespace {

api::service_error repro_refused(api::service_errc kind, std::string code, std::string message, std::string field) {
  return api::make_error(kind, std::move(code), std::move(message), std::move(field));
}

}  // namespace

net::awaitable<expected<api::repro_view, api::service_error>> job_service::start_repro(std::int64_t audit, std::int64_t run,
                                                                                       api::repro_settings settings) {
  using api::service_errc;
  const auto& conf = lifecycle_.config();
  if (!settings.trials) settings.trials = conf.repro_trials;
  if (!settings.max_bursts) settings.max_bursts = std::max(conf.repro_max_bursts, *settings.trials);
  // Fewer than 4 trials against 4 solo repeats can never reach Fisher's p < 0.05: no case
  // could ever be shown to differ.
  if (*settings.trials < 4 || *settings.trials > 20)
    co_return unexpected{repro_refused(service_errc::invalid, "invalid_repro",
                                       "must be between 4 and 20 (fewer can never show a difference at p < 0.05)", "trials")};
  if (*settings.max_bursts < *settings.trials || *settings.max_bursts > conf.repro_max_bursts_limit)
    co_return unexpected{repro_refused(service_errc::invalid, "invalid_repro",
                                       "must be between trials and " + std::to_string(conf.repro_max_bursts_limit) +
                                           " (repro.max_bursts_limit)",
                                       "max_bursts")};
  auto read = [audit](storage::store& s) {
    std::optional<std::pair<storage::job_record, std::vector<storage::run_record>>> out;
    if (auto j = s.jobs().get(audit)) out.emplace(*j, s.evidence().runs(audit, {}));
    return out;
  };
  auto got = co_await on_db(db_, std::move(read));
  if (!got) co_return unexpected{repro_refused(service_errc::not_found, "not_found", "no audit with id " + std::to_string(audit), "id")};
  const auto& [job, runs] = *got;
  if (!audit::is_final(job.status))
    co_return unexpected{repro_refused(service_errc::conflict, "not_ended", "the audit has not ended", "id")};
  const storage::run_record* target = nullptr;
  for (const auto& r : runs)
    if (r.id == run) target = &r;
  if (!target) co_return unexpected{repro_refused(service_errc::not_found, "not_found", "no run " + std::to_string(run) + " in audit " + std::to_string(audit), "run")};
  if (!target->verdict || target->verdict->logit_identical)
    co_return unexpected{repro_refused(service_errc::conflict, "not_divergent",
                                       "run " + std::to_string(run) + " is not a compared run that diverged from its solo baseline", "run")};
  const auto& spec = job.spec;
  if (!spec) co_return unexpected{repro_refused(service_errc::conflict, "not_reproducible", "the audit's stored spec cannot be read", "id")};
  const auto plan = audit::make_plan(*spec);
  if (target->group >= plan.groups.size() || plan.groups[target->group].mode != audit::group_mode::burst ||
      plan.groups[target->group].requests.size() < 2)
    co_return unexpected{repro_refused(service_errc::conflict, "not_a_burst", "run " + std::to_string(run) + " was not in a burst: nothing shared its batch", "run")};
  auto backend_it = lifecycle_.config().backends.find(target->backend);
  if (backend_it == lifecycle_.config().backends.end())
    co_return unexpected{repro_refused(service_errc::invalid, "unknown_backend",
                                       "backend '" + target->backend + "' is not configured in this daemon", "backend")};
  if (!queue_.hold(target->backend))
    co_return unexpected{repro_refused(service_errc::conflict, "backend_busy",
                                       "an audit or a repro holds backend '" + target->backend + "'; try again when it ends", "backend")};

  // The burst as the plan sent it: the target first, its neighbours in their order.
  const auto& g = plan.groups[target->group];
  clients::repro_case c;
  c.top_k = plan.top_k;
  auto as_request = [&](const audit::planned_request& p) {
    clients::repro_request q;
    q.prompt = p.prompt;
    q.temperature = p.params.temperature;
    q.seed = p.params.seed;
    q.n_predict = p.n_predict.value_or(plan.n_predict);
    q.join_after = p.join_after_tokens;
    return q;
  };
  c.target = as_request(g.requests.at(target->request));
  c.target.join_after = 0;
  for (std::size_t i = 0; i < g.requests.size(); ++i)
    if (i != target->request) c.neighbours.push_back(as_request(g.requests[i]));

  auto task = std::make_shared<repro_task>();
  task->view.id = next_repro_++;
  task->view.audit = audit;
  task->view.run = run;
  task->view.backend = target->backend;
  task->view.started_at = storage::now_utc();
  task->view.max_bursts = *settings.max_bursts;
  task->view.trials = *settings.trials;
  task->view.original = clients::describe(c);
  repros_[task->view.id] = task;
  spdlog::info("repro {}: audit {} run {} on {}: {}", task->view.id, audit, run, target->backend, task->view.original);

  net::co_spawn(co_await net::this_coro::executor, run_repro(task, c, settings, backend_it->second), net::detached);
  co_return task->view;
}

// A coroutine of its own (its arguments live in its frame): the search, then the bundle, then
// the backend released.
net::awaitable<void> job_service::run_repro(std::shared_ptr<repro_task> task, clients::repro_case c,
                                             api::repro_settings settings, clients::backend_config config) {
  auto ex = co_await net::this_coro::executor;
  clients::backend b(ex, config);
  clients::repro_options o;
  o.limits.trials = *settings.trials;
  o.limits.max_bursts = *settings.max_bursts;
  o.cancel = task->cancel;
  o.on_progress = [task](const clients::repro_progress& p) {
    task->view.bursts = p.bursts;
    task->view.phase = p.phase;
  };
  clients::repro_result r;
  try {
    r = co_await clients::find_minimal_repro(b, c, o);
  } catch (const std::exception& e) {
    r.outcome = clients::repro_outcome::failed;
    r.message = e.what();
  }
  const auto id = task->view.audit;
  const auto name = task->view.backend;
  auto fingerprints = [id, name](storage::store& s) {
    audit::backend_fingerprint f;
    for (const auto& rec : s.evidence().fingerprint_records(id))
      if (rec.backend == name && (f.api.empty() || rec.phase == audit::fingerprint_phase::before)) f = rec.fingerprint;
    return f;
  };
  clients::repro_context ctx;
  ctx.audit = task->view.audit;
  ctx.run = task->view.run;
  ctx.backend = name;
  try {
    ctx.fingerprint = co_await on_db(db_, std::move(fingerprints));
  } catch (const std::exception& e) {
    spdlog::warn("repro {}: the audit's fingerprint could not be read: {}", task->view.id, e.what());
  }
  task->view.files = clients::repro_bundle(r, ctx, *settings.trials);
  task->view.outcome = std::string(clients::to_string(r.outcome));
  task->view.message = r.message;
  task->view.minimal = clients::describe(r.minimal);
  task->view.bursts = r.bursts;
  task->view.status = r.outcome == clients::repro_outcome::cancelled ? "cancelled" : "done";
  task->view.finished_at = storage::now_utc();
  queue_.release(name);
  spdlog::info("repro {}: {}: {}", task->view.id, task->view.outcome, r.message);
}

net::awaitable<std::optional<api::repro_view>> job_service::repro(std::int64_t id) {
  auto it = repros_.find(id);
  if (it == repros_.end()) co_return std::nullopt;
  co_return it->second->view;
}

net::awaitable<expected<api::repro_view, api::service_error>> job_service::cancel_repro(std::int64_t id) {
  auto it = repros_.find(id);
  if (it == repros_.end())
    co_return unexpected{api::make_error(api::service_errc::not_found, "not_found", "no repro with id " + std::to_string(id), "id")};
  if (it->second->view.status != "running")
    co_return unexpected{api::make_error(api::service_errc::conflict, "not_running", "the repro has ended", "id")};
  it->second->cancel->store(true);
  co_return it->second->view;
}

}  // namespace logitaudit::daemon
