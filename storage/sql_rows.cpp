// The rows' shared forms (sql_rows.hpp).
#include "sql_rows.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace logitaudit::storage::sql_rows {

using json = nlohmann::json;

void insert_rows(sql_connection& db, const std::string& head, int cols, std::size_t n,
                 const std::function<void(sql_statement&, int, std::size_t)>& bind_row, const std::string& returning,
                 const std::function<void(sql_statement&)>& on_returned) {
  std::size_t i = 0;
  for (std::size_t chunk = 64; chunk >= 1; chunk /= 2)
    while (n - i >= chunk) {
      std::string sql = head + " VALUES ";
      for (std::size_t r = 0; r < chunk; ++r) {
        sql += r ? ", (" : "(";
        for (int c = 0; c < cols; ++c) sql += (c ? ", ?" : "?") + std::to_string(static_cast<int>(r) * cols + c + 1);
        sql += ")";
      }
      auto& s = db.prepare(sql + returning);
      for (std::size_t r = 0; r < chunk; ++r) bind_row(s, static_cast<int>(r) * cols + 1, i + r);
      if (on_returned) {
        while (s.step()) on_returned(s);
        s.reset();
      } else {
        s.run();
      }
      i += chunk;
    }
}

std::int64_t returned_id(sql_statement& s) {
  if (!s.step()) throw storage_error(storage_error::kind::broken, "an INSERT returned no id");
  const auto id = s.integer(0);
  s.reset();
  return id;
}

std::string hashes_text(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += k + "\t" + v + "\n";
  return s;
}

std::map<std::string, std::string> hashes_of(const std::string& text) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < text.size();) {
    auto nl = text.find('\n', i);
    if (nl == std::string::npos) nl = text.size();
    auto line = text.substr(i, nl - i);
    if (auto tab = line.rfind('\t'); tab != std::string::npos) out[line.substr(0, tab)] = line.substr(tab + 1);
    i = nl + 1;
  }
  return out;
}

std::string tags_text(const std::vector<std::string>& tags) {
  return json(tags).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<std::string> tags_of(const std::string& text) {
  std::vector<std::string> out;
  const json j = json::parse(text, nullptr, false);
  if (j.is_array())
    for (const auto& t : j)
      if (t.is_string()) out.push_back(t.get<std::string>());
  return out;
}

audit::job_status status_of(const std::string& s) {
  auto st = audit::parse_job_status(s);
  if (!st) throw storage_error(storage_error::kind::broken, "a job has the unknown status '" + s + "'");
  return *st;
}

std::optional<audit::digest128> digest_of(const std::vector<std::uint8_t>& b) {
  if (b.size() != 16) return std::nullopt;
  audit::digest128 d;
  std::copy(b.begin(), b.end(), d.bytes);
  return d;
}

}  // namespace logitaudit::storage::sql_rows
