// The alerts repository over SQL (repositories.hpp): deliveries waiting to be sent, and what became of them.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "sql_rows.hpp"

namespace logitaudit::storage {
namespace {

using json = nlohmann::json;
using namespace sql_rows;

class sql_alerts final : public alert_repository {
 public:
  explicit sql_alerts(sql_connection& db) : db_(db) {}

  std::int64_t enqueue(const std::string& url, const std::string& payload, const std::string& at) override {
    auto& s = db_.prepare("INSERT INTO alert_deliveries (url, payload, created_at, status) VALUES (?, ?, ?, 'pending') RETURNING id");
    s.bind(1, url).bind(2, payload).bind(3, at);
    return returned_id(s);
  }

  void record_attempt(std::int64_t id, audit::delivery_status status, int attempts, unsigned http_status,
                      const std::string& error, const std::string& at) override {
    auto& s = db_.prepare(
        "UPDATE alert_deliveries SET status = ?, attempts = ?, last_status = ?, last_error = ?, last_attempt_at = ? "
        "WHERE id = ?");
    s.bind(1, audit::to_string(status)).bind(2, attempts).bind(3, static_cast<std::int64_t>(http_status));
    s.bind(4, error).bind(5, at).bind(6, id);
    s.run();
  }

  std::vector<alert_delivery> pending() override {
    return read(db_.prepare(std::string(kColumns) + " WHERE status = 'pending' ORDER BY id"));
  }

  std::vector<alert_delivery> recent(int limit) override {
    auto& s = db_.prepare(std::string(kColumns) + " ORDER BY id DESC LIMIT ?");
    s.bind(1, limit);
    return read(s);
  }

 private:
  static constexpr const char* kColumns =
      "SELECT id, url, payload, created_at, status, attempts, last_status, last_error, last_attempt_at FROM alert_deliveries";
  static std::vector<alert_delivery> read(sql_statement& s) {
    std::vector<alert_delivery> out;
    while (s.step()) {
      alert_delivery d;
      d.id = s.integer(0);
      d.url = s.text(1);
      d.payload = s.text(2);
      d.created_at = s.text(3);
      d.status = audit::parse_delivery_status(s.text(4)).value_or(audit::delivery_status::failed);
      d.attempts = static_cast<int>(s.integer(5));
      d.last_status = static_cast<unsigned>(s.integer(6));
      d.last_error = s.text(7);
      d.last_attempt_at = s.text(8);
      out.push_back(std::move(d));
    }
    s.reset();
    return out;
  }
  sql_connection& db_;
};

}  // namespace

std::unique_ptr<alert_repository> sql_rows::make_alerts(sql_connection& c) { return std::make_unique<sql_alerts>(c); }

}  // namespace logitaudit::storage
