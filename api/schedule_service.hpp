// What the /v1/schedules routes need from the daemon (cron schedules of audit jobs).
#pragma once

#include <boost/asio.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/expected.hpp"
#include "audit/spec.hpp"
#include "audit/states.hpp"
#include "service_error.hpp"
#include "storage/records.hpp"

namespace logitaudit::api {

// A new schedule, or a change to one (absent members stay as they are).
struct schedule_patch {
  std::optional<std::string> cron, timezone;
  std::optional<audit::missed_fire_policy> missed;
  std::optional<bool> enabled;
  std::optional<audit::audit_spec> spec;
};

struct schedule_fire {
  storage::job_record job;
  bool valid = false;  // findings valid (controls diverged)
  std::vector<storage::prediction_record> predictions;
};

class schedule_service {
 public:
  virtual ~schedule_service() = default;
  // `patch` must carry cron and spec. Errors: invalid (each problem naming its field).
  virtual boost::asio::awaitable<expected<storage::schedule_record, service_error>> create(schedule_patch patch) = 0;
  virtual boost::asio::awaitable<std::vector<storage::schedule_record>> list() = 0;
  virtual boost::asio::awaitable<std::optional<storage::schedule_record>> get(std::int64_t id) = 0;
  // Errors: not_found, invalid.
  virtual boost::asio::awaitable<expected<storage::schedule_record, service_error>> update(std::int64_t id,
                                                                                          schedule_patch patch) = 0;
  virtual boost::asio::awaitable<bool> remove(std::int64_t id) = 0;
  // The jobs it fired, newest first; nullopt: no such schedule.
  virtual boost::asio::awaitable<std::optional<std::vector<schedule_fire>>> history(std::int64_t id) = 0;
};

}  // namespace logitaudit::api
