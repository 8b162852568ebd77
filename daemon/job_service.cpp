// Submissions, reads, cancel and delete. Every db lambda is a named local (GCC 12, see
// db_call.hpp).
#include "job_service.hpp"

#include <spdlog/spdlog.h>

#include "audit/baselines.hpp"
#include "audit/plan.hpp"
#include "clients/selftest.hpp"
#include "storage/documents.hpp"
#include "db_call.hpp"

namespace logitaudit::daemon {

job_service::job_service(storage::db_worker& db, job_lifecycle& lifecycle, job_queue& queue, repro_jobs& repros,
                         storage::bundle_origin origin, std::size_t max_bundle_bytes)
    : db_(db),
      lifecycle_(lifecycle),
      queue_(queue),
      origin_(std::move(origin)),
      max_bundle_bytes_(max_bundle_bytes),
      repros_(repros) {}

net::awaitable<expected<storage::job_record, api::service_error>> job_service::submit(audit::audit_spec spec) {
  auto job = co_await lifecycle_.create(std::move(spec));
  if (job) queue_.wake();
  co_return job;
}

std::vector<std::string> job_service::not_ready() const {
  std::vector<std::string> out;
  if (!queue_.started()) out.push_back("the queue has not started");
  if (queue_.stopping()) out.push_back("the daemon is stopping");
  if (loops)
    for (auto& p : loops->problems()) out.push_back(std::move(p));
  return out;
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
  auto row = co_await on_db(db_, std::move(load));
  // An end the database refused is this daemon's to say until it is stored.
  if (row && !audit::is_final(row->status) && !queue_.is_running(id))
    if (auto why = lifecycle_.unwritten_end(id)) {
      row->status = audit::job_status::failed;
      row->error = *why + " (not stored yet: the database refuses writes; it is written when it takes them)";
    }
  co_return row;
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
  auto held = co_await queue_.hold(name, "selftest");
  if (!held)
    co_return unexpected{api::make_error(api::service_errc::conflict, "backend_busy",
                                         "an audit, a repro or a selftest holds backend '" + name +
                                             "' (in this daemon or another of its fleet); try again when it ends",
                                         "backend")};
  clients::selftest_result result;
  {
    const clients::selftest_options options;  // named: GCC 12 mis-destroys a braced temporary in a co_await
    result = co_await net::co_spawn(queue_.audits(), clients::run_selftest(it->second, options), net::use_awaitable);
  }
  // `held` goes with this call, after the record is stored: an audit that waited for the
  // backend starts after the selftest's taken_at.
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
  const auto devices = lifecycle_.devices();  // read at most once a minute
  out.devices = devices.values;
  out.device_words = devices.words();
  co_return out;
}

net::awaitable<std::map<audit::job_status, std::int64_t>> job_service::job_counts() {
  auto count = [](storage::store& s) { return s.jobs().counts(); };
  co_return co_await on_db(db_, std::move(count));
}

net::awaitable<expected<api::repro_view, api::service_error>> job_service::start_repro(std::int64_t audit, std::int64_t run,
                                                                                       api::repro_settings settings) {
  auto r = co_await repros_.create(audit, run, settings);
  if (!r) co_return unexpected{r.error()};
  queue_.wake();
  co_return view_of(*r, nullptr);
}

net::awaitable<std::optional<api::repro_view>> job_service::repro(std::int64_t id, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto read = [id](storage::store& s) { return s.repros().get(id); };
    auto r = co_await on_db(db_, std::move(read));
    if (!r) co_return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (audit::is_final(r->status) || left.count() <= 0) co_return view_of(*r, queue_.repro_progress(id));
    // Woken when it ends here or is cancelled while queued; a repro another daemon runs is
    // read again every second.
    co_await queue_.until_change(job_queue::waiter_key(id), std::min(left, std::chrono::milliseconds(1000)));
  }
}

net::awaitable<expected<api::repro_view, api::service_error>> job_service::cancel_repro(std::int64_t id) {
  const bool running_here = queue_.cancel_repro(id);
  // A queued one ends here and now; a running one at its next probe.
  auto cancel = [id, running_here](storage::store& s) {
    const bool moved =
        !running_here && s.repros().move(id, audit::job_status::queued, audit::job_status::cancelled, storage::now_utc());
    return std::make_pair(moved, s.repros().get(id));
  };
  const auto [moved, r] = co_await on_db(db_, std::move(cancel));
  if (moved) queue_.notify(job_queue::waiter_key(id));
  if (!r) co_return unexpected{api::make_error(api::service_errc::not_found, "not_found", "no repro with id " + std::to_string(id), "id")};
  if (!running_here && !moved)
    co_return unexpected{api::make_error(api::service_errc::conflict, "not_running",
                                         r->status == audit::job_status::running ? "the repro runs on another daemon"
                                                                                 : "the repro has ended",
                                         "id")};
  co_return view_of(*r, queue_.repro_progress(id));
}

}  // namespace logitaudit::daemon
