// What the /v1/schedules routes need from the daemon (cron schedules of audit jobs).
#pragma once

#include <boost/asio.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/expected.hpp"
#include "audit/spec.hpp"
#include "audit_service.hpp"

namespace logitaudit::api {

struct schedule_view {
  std::int64_t id = 0;
  std::string cron, timezone, missed, created_at;
  bool enabled = true;
  std::string spec_json;  // canonical spec JSON
  std::optional<std::int64_t> next_fire_unix, last_fire_unix;
};

// A change to a schedule; absent members stay as they are.
struct schedule_patch {
  std::optional<std::string> cron, timezone, missed;
  std::optional<bool> enabled;
  std::optional<audit::audit_spec> spec;
};

struct schedule_fire {
  job_summary job;
  bool valid = false;                                  // findings valid (controls diverged)
  std::vector<std::pair<std::string, bool>> held;      // prediction id -> held
};

class schedule_service {
 public:
  virtual ~schedule_service() = default;
  // Creates (id 0 in the result's absence) or fails with problems that name their fields.
  virtual boost::asio::awaitable<expected<schedule_view, std::vector<audit::spec_problem>>> create(
      std::string cron, std::string timezone, bool enabled, std::string missed, audit::audit_spec spec) = 0;
  virtual boost::asio::awaitable<std::vector<schedule_view>> list() = 0;
  virtual boost::asio::awaitable<std::optional<schedule_view>> get(std::int64_t id) = 0;
  // nullopt: no such schedule.
  virtual boost::asio::awaitable<std::optional<expected<schedule_view, std::vector<audit::spec_problem>>>> update(
      std::int64_t id, schedule_patch patch) = 0;
  virtual boost::asio::awaitable<bool> remove(std::int64_t id) = 0;
  // The jobs it fired, newest first; nullopt: no such schedule.
  virtual boost::asio::awaitable<std::optional<std::vector<schedule_fire>>> history(std::int64_t id) = 0;
};

}  // namespace logitaudit::api
