// Schedule CRUD and the firing loop. Every db lambda is a named local (GCC 12, see db_call.hpp).
#include "scheduler.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "api/spec_json.hpp"
#include "cron.hpp"
#include "db_call.hpp"

namespace logitaudit::daemon {
namespace {

api::schedule_view view_of(const storage::schedule_record& r) {
  return {r.id, r.cron, r.timezone, r.missed, r.created_at, r.enabled, r.spec_json, r.next_fire_unix, r.last_fire_unix};
}

std::int64_t system_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

scheduler::scheduler(net::any_io_executor ex, storage::db_worker& db, job_service& jobs, audit::spec_limits limits)
    : now(system_now), ex_(ex), db_(db), jobs_(jobs), limits_(limits), wake_(ex, net::steady_timer::time_point::max()) {}

void scheduler::start() {
  auto run = [this] { return loop(); };
  net::co_spawn(ex_, run(), [](std::exception_ptr e) {
    if (e) try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        spdlog::critical("the scheduler stopped: {}", x.what());
      }
  });
}

void scheduler::stop() {
  stopping_ = true;
  wake_.cancel();
}

net::awaitable<expected<api::schedule_view, std::vector<audit::spec_problem>>> scheduler::create(
    std::string cron, std::string timezone, bool enabled, std::string missed, audit::audit_spec spec) {
  std::vector<audit::spec_problem> problems;
  auto parsed = parse_cron(cron);
  if (!parsed) problems.push_back({"cron", parsed.error()});
  if (!valid_time_zone(timezone)) problems.push_back({"timezone", "unknown time zone '" + timezone.substr(0, 64) + "' (UTC or an IANA name such as Europe/Berlin)"});
  for (auto& p : jobs_.resolve_backends(spec)) problems.push_back({"spec." + p.field, p.message});
  if (!problems.empty()) co_return unexpected{std::move(problems)};
  storage::schedule_record r;
  r.cron = cron;
  r.timezone = timezone;
  r.enabled = enabled;
  r.missed = missed;
  r.spec_json = api::spec_to_json(spec);
  r.created_at = storage::now_utc();
  r.next_fire_unix = next_fire(*parsed, now(), timezone);
  auto insert = [r](storage::audit_store& s) {
    auto copy = r;
    copy.id = s.save_schedule(r);
    return copy;
  };
  auto stored = co_await on_db(db_, std::move(insert));
  spdlog::info("schedule {} created: '{}' {} ({})", stored.id, cron, timezone, enabled ? "enabled" : "disabled");
  wake_.cancel();
  co_return view_of(stored);
}

net::awaitable<std::vector<api::schedule_view>> scheduler::list() {
  auto load = [](storage::audit_store& s) { return s.schedules(); };
  auto rows = co_await on_db(db_, std::move(load));
  std::vector<api::schedule_view> out;
  for (const auto& r : rows) out.push_back(view_of(r));
  co_return out;
}

net::awaitable<std::optional<api::schedule_view>> scheduler::get(std::int64_t id) {
  auto load = [id](storage::audit_store& s) { return s.schedule(id); };
  auto r = co_await on_db(db_, std::move(load));
  if (!r) co_return std::nullopt;
  co_return view_of(*r);
}

net::awaitable<std::optional<expected<api::schedule_view, std::vector<audit::spec_problem>>>> scheduler::update(
    std::int64_t id, api::schedule_patch patch) {
  auto load = [id](storage::audit_store& s) { return s.schedule(id); };
  auto r = co_await on_db(db_, std::move(load));
  if (!r) co_return std::nullopt;
  std::vector<audit::spec_problem> problems;
  if (patch.cron) r->cron = *patch.cron;
  if (patch.timezone) r->timezone = *patch.timezone;
  if (patch.missed) r->missed = *patch.missed;
  if (patch.enabled) r->enabled = *patch.enabled;
  if (patch.spec) {
    for (auto& p : jobs_.resolve_backends(*patch.spec)) problems.push_back({"spec." + p.field, p.message});
    r->spec_json = api::spec_to_json(*patch.spec);
  }
  auto parsed = parse_cron(r->cron);
  if (!parsed) problems.push_back({"cron", parsed.error()});
  if (!valid_time_zone(r->timezone)) problems.push_back({"timezone", "unknown time zone '" + r->timezone.substr(0, 64) + "'"});
  if (!problems.empty()) co_return expected<api::schedule_view, std::vector<audit::spec_problem>>(unexpected{problems});
  r->next_fire_unix = next_fire(*parsed, now(), r->timezone);
  auto save = [rec = *r](storage::audit_store& s) { return s.save_schedule(rec); };
  co_await on_db(db_, std::move(save));
  wake_.cancel();
  co_return expected<api::schedule_view, std::vector<audit::spec_problem>>(view_of(*r));
}

net::awaitable<bool> scheduler::remove(std::int64_t id) {
  auto erase = [id](storage::audit_store& s) { return s.delete_schedule(id); };
  co_return co_await on_db(db_, std::move(erase));
}

net::awaitable<std::optional<std::vector<api::schedule_fire>>> scheduler::history(std::int64_t id) {
  auto load = [id](storage::audit_store& s) -> std::optional<std::vector<api::schedule_fire>> {
    if (!s.schedule(id)) return std::nullopt;
    std::vector<api::schedule_fire> out;
    for (const auto& j : s.schedule_jobs(id, 200)) {
      api::schedule_fire f;
      f.job.id = j.id;
      f.job.status = j.status;
      f.job.created_at = j.created_at;
      f.job.finished_at = j.finished_at;
      auto findings = nlohmann::json::parse(j.findings_json, nullptr, false);
      f.valid = findings.is_object() && findings.value("valid", false);
      for (const auto& p : s.predictions(j.id)) f.held.emplace_back(p.id, p.held);
      out.push_back(std::move(f));
    }
    return out;
  };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<void> scheduler::fire(storage::schedule_record r) {
  auto spec = api::read_spec(r.spec_json);
  if (!spec) {
    spdlog::error("schedule {}: its stored spec does not parse; not fired", r.id);
    co_return;
  }
  spec->tags.push_back("schedule:" + std::to_string(r.id));
  auto job = co_await jobs_.submit_scheduled(std::move(*spec), r.id);
  if (job) spdlog::info("schedule {} fired audit {}", r.id, job->id);
  else spdlog::error("schedule {}: {}: {}", r.id, job.error().front().field, job.error().front().message);
}

net::awaitable<void> scheduler::loop() {
  // Fires missed while the daemon was down: once now, or skipped, as each schedule says.
  auto load = [](storage::audit_store& s) { return s.schedules(); };
  for (auto r : co_await on_db(db_, std::move(load))) {
    if (!r.enabled || !r.next_fire_unix || *r.next_fire_unix > now()) continue;
    if (r.missed == "run_once") {
      spdlog::info("schedule {}: a fire was missed while the daemon was down; running it once now", r.id);
      co_await fire(r);
      r.last_fire_unix = now();
    } else {
      spdlog::info("schedule {}: a fire was missed while the daemon was down; skipped", r.id);
    }
    if (auto c = parse_cron(r.cron)) r.next_fire_unix = next_fire(*c, now(), r.timezone);
    auto save = [r](storage::audit_store& s) { return s.save_schedule(r); };
    co_await on_db(db_, std::move(save));
  }
  while (!stopping_) {
    auto load_all = [](storage::audit_store& s) { return s.schedules(); };
    auto all = co_await on_db(db_, std::move(load_all));
    std::int64_t soonest = now() + 60;  // look again at least once a minute
    for (auto& r : all) {
      if (!r.enabled || !r.next_fire_unix) continue;
      if (*r.next_fire_unix <= now()) {
        co_await fire(r);
        r.last_fire_unix = *r.next_fire_unix;
        if (auto c = parse_cron(r.cron)) r.next_fire_unix = next_fire(*c, *r.next_fire_unix, r.timezone);
        auto save = [r](storage::audit_store& s) { return s.save_schedule(r); };
        co_await on_db(db_, std::move(save));
      }
      if (r.next_fire_unix) soonest = std::min(soonest, *r.next_fire_unix);
    }
    wake_.expires_after(std::chrono::seconds(std::max<std::int64_t>(0, soonest - now())) + std::chrono::milliseconds(50));
    co_await wake_.async_wait(net::as_tuple(net::use_awaitable));
  }
}

}  // namespace logitaudit::daemon
