// Cron schedules of audit jobs: stored, fired by one coroutine that sleeps until the next
// fire; each fire submits an ordinary job (through the lifecycle) linked to its schedule, at
// most one per fire time across the daemons that share the database. A
// fire missed while the daemon was down runs once at start-up, or is skipped (the schedule's
// missed-fire policy). Not thread-safe: use from the executor it was made with.
#pragma once

#include <boost/asio.hpp>

#include "api/schedule_service.hpp"
#include "job_service.hpp"
#include "loop_health.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

class scheduler final : public api::schedule_service {
 public:
  scheduler(net::any_io_executor ex, storage::db_worker& db, job_service& jobs, const job_lifecycle& lifecycle);

  void start();  // handles missed fires, then fires on time
  void stop();
  void poke() { wake_.cancel(); }  // look at the schedules now (after a clock change in tests)

  net::awaitable<expected<storage::schedule_record, api::service_error>> create(api::schedule_patch patch) override;
  net::awaitable<std::vector<storage::schedule_record>> list() override;
  net::awaitable<std::optional<storage::schedule_record>> get(std::int64_t id) override;
  net::awaitable<expected<storage::schedule_record, api::service_error>> update(std::int64_t id,
                                                                               api::schedule_patch patch) override;
  net::awaitable<bool> remove(std::int64_t id) override;
  net::awaitable<std::optional<std::vector<api::schedule_fire>>> history(std::int64_t id) override;

  // The clock, replaceable in tests (Unix seconds), and the longest the loop sleeps before it
  // looks at the schedules again (short with a test clock, which jumps).
  std::function<std::int64_t()> now;
  std::chrono::seconds max_sleep{60};
  // A fire found more than this past its time is late (loop(): run once and tagged, or skipped).
  std::chrono::seconds late_after{30};
  // Where the loop reports its passes (null: nowhere, as in the offline CLI).
  loop_health* health = nullptr;
  // Told of every fire (schedule id, the audit it submitted or 0), on the scheduler's executor.
  std::function<void(std::int64_t schedule, std::int64_t audit)> on_fire;

 private:
  net::awaitable<void> loop();
  net::awaitable<void> catch_up();
  net::awaitable<std::int64_t> pass();
  // Submits the schedule's job for its fire at `fire_unix`, unless a daemon did already; a late
  // one (late_s > 0) is tagged fired_late:<late_s>s.
  net::awaitable<void> fire(storage::schedule_record r, std::int64_t fire_unix, std::int64_t late_s);
  // Stores `r`'s next and last fire, unless its stored next fire is no longer `from` (another
  // daemon of the fleet moved it on, or an edit changed it): an old record never moves it back.
  net::awaitable<void> advance(const storage::schedule_record& r, std::int64_t from);
  // Checks cron, zone and the spec's backends, fills the next fire time; the problems name
  // their fields.
  std::vector<audit::spec_problem> prepare(storage::schedule_record& r, std::optional<audit::audit_spec> spec);

  net::any_io_executor ex_;
  storage::db_worker& db_;
  job_service& jobs_;
  const job_lifecycle& lifecycle_;
  net::steady_timer wake_;
  bool stopping_ = false;
};

}  // namespace logitaudit::daemon
