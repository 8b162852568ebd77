// Cron schedules of audit jobs: stored in SQLite, fired by one coroutine that sleeps until
// the next fire; each fire submits an ordinary job linked to its schedule. A fire missed
// while the daemon was down runs once at start-up, or is skipped (the schedule's `missed`).
// Not thread-safe: use from the executor it was made with.
#pragma once

#include <boost/asio.hpp>

#include "api/schedule_service.hpp"
#include "job_service.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

class scheduler final : public api::schedule_service {
 public:
  scheduler(net::any_io_executor ex, storage::db_worker& db, job_service& jobs, audit::spec_limits limits);

  void start();  // handles missed fires, then fires on time
  void stop();
  void poke() { wake_.cancel(); }  // look at the schedules now (after a clock change in tests)

  net::awaitable<expected<api::schedule_view, std::vector<audit::spec_problem>>> create(std::string cron,
                                                                                        std::string timezone,
                                                                                        bool enabled, std::string missed,
                                                                                        audit::audit_spec spec) override;
  net::awaitable<std::vector<api::schedule_view>> list() override;
  net::awaitable<std::optional<api::schedule_view>> get(std::int64_t id) override;
  net::awaitable<std::optional<expected<api::schedule_view, std::vector<audit::spec_problem>>>> update(
      std::int64_t id, api::schedule_patch patch) override;
  net::awaitable<bool> remove(std::int64_t id) override;
  net::awaitable<std::optional<std::vector<api::schedule_fire>>> history(std::int64_t id) override;

  // The clock, replaceable in tests (Unix seconds).
  std::function<std::int64_t()> now;

 private:
  net::awaitable<void> loop();
  net::awaitable<void> fire(storage::schedule_record r);

  net::any_io_executor ex_;
  storage::db_worker& db_;
  job_service& jobs_;
  audit::spec_limits limits_;
  net::steady_timer wake_;
  bool stopping_ = false;
};

}  // namespace logitaudit::daemon
