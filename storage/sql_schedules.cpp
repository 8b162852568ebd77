// The schedules repository over SQL (repositories.hpp): schedules and their fires.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "documents.hpp"
#include "sql_rows.hpp"

namespace logitaudit::storage {
namespace {

using json = nlohmann::json;
using namespace sql_rows;

constexpr const char* kScheduleColumns =
    "id, cron, timezone, spec_json, enabled, missed, created_at, next_fire_unix, last_fire_unix";

schedule_record read_schedule(sql_statement& s) {
  schedule_record r;
  r.id = s.integer(0);
  r.cron = s.text(1);
  r.timezone = s.text(2);
  r.spec_json = s.text(3);
  if (auto spec = decode_spec(r.spec_json)) r.spec = std::move(*spec);
  r.enabled = s.integer(4) != 0;
  r.missed = audit::parse_missed_fire_policy(s.text(5)).value_or(audit::missed_fire_policy::run_once);
  r.created_at = s.text(6);
  if (!s.is_null(7)) r.next_fire_unix = s.integer(7);
  if (!s.is_null(8)) r.last_fire_unix = s.integer(8);
  return r;
}

class sql_schedules final : public schedule_repository {
 public:
  explicit sql_schedules(sql_connection& db) : db_(db) {}

  std::int64_t save(const schedule_record& r) override {
    if (r.id == 0) {
      auto& s = db_.prepare(
          "INSERT INTO schedules (cron, timezone, spec_json, enabled, missed, created_at, next_fire_unix, last_fire_unix) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
      s.bind(1, r.cron).bind(2, r.timezone).bind(3, r.spec_json).bind(4, r.enabled).bind(5, audit::to_string(r.missed));
      s.bind(6, r.created_at).bind(7, r.next_fire_unix).bind(8, r.last_fire_unix);
      return returned_id(s);
    }
    auto& s = db_.prepare(
        "UPDATE schedules SET cron = ?, timezone = ?, spec_json = ?, enabled = ?, missed = ?, next_fire_unix = ?, "
        "last_fire_unix = ? WHERE id = ?");
    s.bind(1, r.cron).bind(2, r.timezone).bind(3, r.spec_json).bind(4, r.enabled).bind(5, audit::to_string(r.missed));
    s.bind(6, r.next_fire_unix).bind(7, r.last_fire_unix).bind(8, r.id);
    s.run();
    return r.id;
  }

  bool advance(std::int64_t id, std::int64_t from, std::optional<std::int64_t> next,
               std::optional<std::int64_t> last_fire) override {
    auto& s = db_.prepare("UPDATE schedules SET next_fire_unix = ?, last_fire_unix = ? WHERE id = ? AND next_fire_unix = ?");
    s.bind(1, next).bind(2, last_fire).bind(3, id).bind(4, from);
    s.run();
    return db_.changes() > 0;
  }

  std::optional<schedule_record> get(std::int64_t id) override {
    auto& s = db_.prepare(std::string("SELECT ") + kScheduleColumns + " FROM schedules WHERE id = ?");
    s.bind(1, id);
    std::optional<schedule_record> r;
    if (s.step()) r = read_schedule(s);
    s.reset();
    return r;
  }

  std::vector<schedule_record> list() override {
    auto& s = db_.prepare(std::string("SELECT ") + kScheduleColumns + " FROM schedules ORDER BY id");
    std::vector<schedule_record> out;
    while (s.step()) out.push_back(read_schedule(s));
    s.reset();
    return out;
  }

  bool remove(std::int64_t id) override {
    auto& s = db_.prepare("DELETE FROM schedules WHERE id = ?");
    s.bind(1, id);
    s.run();
    return db_.changes() > 0;
  }

 private:
  sql_connection& db_;
};

}  // namespace

std::unique_ptr<schedule_repository> sql_rows::make_schedules(sql_connection& c) { return std::make_unique<sql_schedules>(c); }

}  // namespace logitaudit::storage
