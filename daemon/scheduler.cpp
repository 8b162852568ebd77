// Schedule CRUD and the firing loop. Every db lambda is a named local (GCC 12, see db_call.hpp).
#include "scheduler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "cron.hpp"
#include "db_call.hpp"
#include "storage/documents.hpp"

namespace logitaudit::daemon {
namespace {

std::int64_t system_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

scheduler::scheduler(net::any_io_executor ex, storage::db_worker& db, job_service& jobs, const job_lifecycle& lifecycle)
    : now(system_now), ex_(ex), db_(db), jobs_(jobs), lifecycle_(lifecycle), wake_(ex, net::steady_timer::time_point::max()) {}

void scheduler::start() {
  if (health) health->add(loop_names::scheduler, std::chrono::seconds(30));
  auto run = [this] { return loop(); };
  net::co_spawn(ex_, run(), [](std::exception_ptr e) {
    if (e) try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        spdlog::critical("[scheduler] stopped by a bug: {}", x.what());  // loop() catches every pass's errors
      }
  });
}

void scheduler::stop() {
  stopping_ = true;
  wake_.cancel();
}

std::vector<audit::spec_problem> scheduler::prepare(storage::schedule_record& r, std::optional<audit::audit_spec> spec) {
  std::vector<audit::spec_problem> problems;
  auto parsed = parse_cron(r.cron);
  if (!parsed) problems.push_back({"cron", parsed.error()});
  if (!valid_time_zone(r.timezone))
    problems.push_back({"timezone", "unknown time zone '" + r.timezone.substr(0, 64) + "' (UTC or an IANA name such as Europe/Berlin)"});
  if (spec) {
    for (auto& p : lifecycle_.admit(*spec)) problems.push_back({"spec." + p.field, p.message});
    r.spec_json = storage::encode_spec(*spec);
    r.spec = std::move(*spec);
  }
  if (parsed && problems.empty()) r.next_fire_unix = next_fire(*parsed, now(), r.timezone);
  return problems;
}

net::awaitable<expected<storage::schedule_record, api::service_error>> scheduler::create(api::schedule_patch patch) {
  storage::schedule_record r;
  r.cron = patch.cron.value_or("");
  r.timezone = patch.timezone.value_or("UTC");
  r.enabled = patch.enabled.value_or(true);
  r.missed = patch.missed.value_or(audit::missed_fire_policy::run_once);
  r.created_at = storage::now_utc();
  auto problems = prepare(r, patch.spec);
  if (!problems.empty()) co_return unexpected{api::invalid(std::move(problems), "invalid_schedule")};
  auto insert = [r](storage::store& s) {
    auto copy = r;
    copy.id = s.schedules().save(r);
    return copy;
  };
  auto stored = co_await on_db(db_, std::move(insert));
  spdlog::info("schedule {} created: '{}' {} ({})", stored.id, stored.cron, stored.timezone, stored.enabled ? "enabled" : "disabled");
  wake_.cancel();
  co_return stored;
}

net::awaitable<std::vector<storage::schedule_record>> scheduler::list() {
  auto load = [](storage::store& s) { return s.schedules().list(); };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<std::optional<storage::schedule_record>> scheduler::get(std::int64_t id) {
  auto load = [id](storage::store& s) { return s.schedules().get(id); };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<expected<storage::schedule_record, api::service_error>> scheduler::update(std::int64_t id,
                                                                                        api::schedule_patch patch) {
  auto load = [id](storage::store& s) { return s.schedules().get(id); };
  auto r = co_await on_db(db_, std::move(load));
  if (!r) co_return unexpected{api::make_error(api::service_errc::not_found, "not_found", "no schedule with id " + std::to_string(id), "id")};
  if (patch.cron) r->cron = *patch.cron;
  if (patch.timezone) r->timezone = *patch.timezone;
  if (patch.missed) r->missed = *patch.missed;
  if (patch.enabled) r->enabled = *patch.enabled;
  auto problems = prepare(*r, patch.spec);
  if (!problems.empty()) co_return unexpected{api::invalid(std::move(problems), "invalid_schedule")};
  auto save = [rec = *r](storage::store& s) { return s.schedules().save(rec); };
  co_await on_db(db_, std::move(save));
  wake_.cancel();
  co_return *r;
}

net::awaitable<bool> scheduler::remove(std::int64_t id) {
  auto erase = [id](storage::store& s) { return s.schedules().remove(id); };
  co_return co_await on_db(db_, std::move(erase));
}

net::awaitable<std::optional<std::vector<api::schedule_fire>>> scheduler::history(std::int64_t id) {
  auto load = [id](storage::store& s) -> std::optional<std::vector<api::schedule_fire>> {
    if (!s.schedules().get(id)) return std::nullopt;
    std::vector<api::schedule_fire> out;
    for (auto& j : s.jobs().of_schedule(id, 200)) {
      api::schedule_fire f;
      f.valid = j.findings && j.findings->valid;
      f.predictions = s.jobs().predictions(j.id);
      f.job = std::move(j);
      out.push_back(std::move(f));
    }
    return out;
  };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<void> scheduler::fire(storage::schedule_record r, std::int64_t fire_unix, std::int64_t late_s) {
  auto spec = std::move(r.spec);
  if (!spec) {
    spdlog::error("schedule {}: its stored spec does not parse; not fired", r.id);
    co_return;
  }
  spec->tags.push_back("schedule:" + std::to_string(r.id));
  if (late_s > 0) spec->tags.push_back("fired_late:" + std::to_string(late_s) + "s");
  auto job = co_await jobs_.submit_scheduled(std::move(*spec), r.id, fire_unix);
  if (job) spdlog::info("schedule {} fired audit {}", r.id, job->id);
  else if (job.error().code == "already_fired") {
    spdlog::info("schedule {}: the fire at {} was fired by another daemon of the fleet", r.id, fire_unix);
    co_return;
  } else
    spdlog::error("schedule {}: {}: {}", r.id, job.error().field, job.error().message);
  if (on_fire) on_fire(r.id, job ? job->id : 0);
}

net::awaitable<void> scheduler::advance(const storage::schedule_record& r, std::int64_t from) {
  auto move_on = [id = r.id, from, next = r.next_fire_unix, last = r.last_fire_unix](storage::store& s) {
    return s.schedules().advance(id, from, next, last);
  };
  if (!co_await on_db(db_, std::move(move_on)))
    spdlog::debug("schedule {}: moved on from {} already (another daemon, or an edit)", r.id, from);
}

// Fires missed while the daemon was down: once now, or skipped, as each schedule says. The
// clock is read once, before the schedules: a fire that falls due while this pass runs was
// not missed, and is left to the loop below (or, in a fleet, to whichever member looks
// first); the next fire after a later clock would skip it.
net::awaitable<void> scheduler::catch_up() {
  const std::int64_t started = now();
  auto load = [](storage::store& s) { return s.schedules().list(); };
  for (auto r : co_await on_db(db_, std::move(load))) {
    if (!r.enabled || !r.next_fire_unix || *r.next_fire_unix > started) continue;
    switch (r.missed) {
      case audit::missed_fire_policy::run_once:
        spdlog::info("schedule {}: the fire at {} was missed while the daemon was down; running it once now", r.id,
                     *r.next_fire_unix);
        co_await fire(r, *r.next_fire_unix, started - *r.next_fire_unix);
        r.last_fire_unix = started;
        break;
      case audit::missed_fire_policy::skip:
        spdlog::info("schedule {}: the fire at {} was missed while the daemon was down; skipped", r.id, *r.next_fire_unix);
        break;
    }
    const auto due = *r.next_fire_unix;
    if (auto c = parse_cron(r.cron)) r.next_fire_unix = next_fire(*c, started, r.timezone);
    co_await advance(r, due);
  }
}

// One look at every schedule: fires what is due. A fire found more than late_after past its
// time (the database was unreachable, the clock stepped) is late: it follows the schedule's
// missed-fire policy like a fire missed while the daemon was down (run once, tagged with how
// late, or skipped), and the next fire is counted from now, so that an outage of many
// periods never fires a schedule more than once. Returns when to look again.
net::awaitable<std::int64_t> scheduler::pass() {
  auto load_all = [](storage::store& s) { return s.schedules().list(); };
  auto all = co_await on_db(db_, std::move(load_all));
  std::int64_t soonest = now() + max_sleep.count();  // look again at least this often
  for (auto& r : all) {
    if (!r.enabled || !r.next_fire_unix) continue;
    const auto at = now();
    if (*r.next_fire_unix <= at) {
      const auto due = *r.next_fire_unix;
      const auto late = at - due;
      if (late <= late_after.count()) {
        co_await fire(r, due, 0);
      } else if (r.missed == audit::missed_fire_policy::run_once) {
        spdlog::warn("schedule {}: the fire at {} runs {} s late (the scheduler could not fire it on time); once", r.id, due,
                     late);
        co_await fire(r, due, late);
      } else {
        spdlog::warn("schedule {}: the fire at {} is {} s late; skipped (the schedule's missed-fire policy)", r.id, due, late);
      }
      r.last_fire_unix = due;
      const auto from = late > late_after.count() ? at : due;
      if (auto c = parse_cron(r.cron)) r.next_fire_unix = next_fire(*c, from, r.timezone);
      co_await advance(r, due);
    }
    if (r.next_fire_unix) soonest = std::min(soonest, *r.next_fire_unix);
  }
  co_return soonest;
}

// Every error of a pass (the database gone, a fleet member's write refused) is logged with the
// loop's name and waited out with a backoff; the loop itself only ends at stop().
net::awaitable<void> scheduler::loop() {
  bool caught_up = false;
  while (!stopping_) {
    if (health) health->pass_started(loop_names::scheduler);
    std::string error;
    std::int64_t soonest = 0;
    try {
      if (!caught_up) {
        co_await catch_up();
        caught_up = true;
      }
      soonest = co_await pass();
      if (health) health->progress(loop_names::scheduler);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!error.empty()) {
      const auto wait = health ? health->failed(loop_names::scheduler, error) : std::chrono::milliseconds(5000);
      wake_.expires_after(wait);
    } else {
      wake_.expires_after(std::chrono::seconds(std::clamp<std::int64_t>(soonest - now(), 0, max_sleep.count())) +
                          std::chrono::milliseconds(50));
    }
    co_await wake_.async_wait(net::as_tuple(net::use_awaitable));
  }
}

}  // namespace logitaudit::daemon
