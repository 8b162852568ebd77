// Export, parsing and import of evidence bundles, table by table through the SQL connection
// (as copy.cpp moves whole databases), so that every column of every row travels unchanged:
// integers and doubles bit for bit, text byte for byte, blobs as base64.
#include "bundle.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <set>

#include "audit/states.hpp"
#include "audit/stream_encoding.hpp"
#include "copy.hpp"
#include "sql.hpp"

namespace logitaudit::storage {
namespace {

using json = nlohmann::json;

constexpr const char* kFormat = "logitaudit-bundle";

// An audit's rows, parents before children: how each table finds them.
struct bundle_table {
  const char* name;
  const char* where;  // rows of job ?1
  const char* order;
};
constexpr bundle_table kBundleTables[] = {
    {"jobs", "id = ?1", "id"},
    {"job_backends", "job_id = ?1", "backend"},
    {"fingerprints", "job_id = ?1", "backend, phase"},
    {"groups", "job_id = ?1", "group_index"},
    {"bursts", "job_id = ?1", "group_index"},
    {"runs", "job_id = ?1", "id"},
    {"streams", "run_id IN (SELECT id FROM runs WHERE job_id = ?1)", "run_id"},
    {"verdicts", "run_id IN (SELECT id FROM runs WHERE job_id = ?1)", "run_id"},
    {"predictions", "job_id = ?1", "prediction_id"},
};

// The jobs columns that say where an imported audit came from: set on import, never copied.
const std::set<std::string> kProvenance = {"origin", "origin_audit", "origin_version", "imported_at"};

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t v = static_cast<std::uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<std::uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<std::uint8_t>(in[i + 2]);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kBase64[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kBase64[v & 63] : '=';
  }
  return out;
}

std::optional<std::string> unbase64(std::string_view in) {
  if (in.size() % 4) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  for (std::size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    for (int k = 0; k < 4; ++k) {
      v[k] = in[i + k] == '=' && i + 4 == in.size() && k >= 2 ? 0 : value(in[i + k]);
      if (v[k] < 0) return std::nullopt;
    }
    const std::uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += static_cast<char>(n >> 16);
    if (in[i + 2] != '=') out += static_cast<char>((n >> 8) & 255);
    if (in[i + 3] != '=') out += static_cast<char>(n & 255);
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || i + n >= s.size() + (n == 0)) return false;
    for (int k = 1; k <= n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n + 1;
  }
  return true;
}

json value_of(const sql_statement& row, int c) {
  switch (row.column_type(c)) {
    case sql_type::integer: return row.integer(c);
    case sql_type::real: {
      const double d = row.real(c);
      if (std::isfinite(d)) return d;  // nlohmann writes the shortest text that reads back the same bits
      return json{{"real", std::isnan(d) ? "nan" : d > 0 ? "inf" : "-inf"}};
    }
    case sql_type::text: {
      auto t = row.text(c);
      if (valid_utf8(t)) return t;
      return json{{"text_base64", base64(t)}};
    }
    case sql_type::blob: {
      const auto b = row.blob(c);
      return json{{"blob", base64(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()))}};
    }
    case sql_type::unknown: return nullptr;
  }
  return nullptr;
}

json rows_of(sql_connection& db, const bundle_table& t, std::int64_t job) {
  auto& s = db.prepare(std::string("SELECT * FROM ") + t.name + " WHERE " + t.where + " ORDER BY " + t.order);
  s.bind(1, job);
  json rows = json::array();
  while (s.step()) {
    json row = json::object();
    for (int c = 0; c < s.columns(); ++c) row[s.column_name(c)] = value_of(s, c);
    rows.push_back(std::move(row));
  }
  s.reset();
  return rows;
}

// A member's text, "" when it is absent or not a string (a bundle is untrusted input).
std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string origin_label(const bundle_origin& o) { return o.host.empty() ? o.database : o.host + ":" + o.database; }

// Binds a bundle value; a value of a shape no export writes is refused.
void bind_value(sql_statement& s, int at, const json& v, const std::string& where) {
  if (v.is_null()) s.bind_null(at);
  else if (v.is_number_integer()) s.bind(at, v.get<std::int64_t>());
  else if (v.is_number()) s.bind(at, v.get<double>());
  else if (v.is_string()) s.bind(at, v.get<std::string>());
  else if (v.is_object() && v.size() == 1 && v.contains("blob") && v["blob"].is_string()) {
    auto b = unbase64(v["blob"].get<std::string>());
    if (!b) throw storage_error(storage_error::kind::invalid, where + ": the blob is not base64");
    s.bind_blob(at, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(b->data()), b->size()));
  } else if (v.is_object() && v.size() == 1 && v.contains("text_base64") && v["text_base64"].is_string()) {
    auto t = unbase64(v["text_base64"].get<std::string>());
    if (!t) throw storage_error(storage_error::kind::invalid, where + ": the text is not base64");
    s.bind(at, *t);
  } else if (v.is_object() && v.size() == 1 && v.contains("real") && v["real"].is_string()) {
    const auto r = v["real"].get<std::string>();
    if (r != "nan" && r != "inf" && r != "-inf") throw storage_error(storage_error::kind::invalid, where + ": a real is nan, inf or -inf");
    s.bind(at, r == "nan" ? std::nan("") : r == "inf" ? HUGE_VAL : -HUGE_VAL);
  } else {
    throw storage_error(storage_error::kind::invalid, where + ": a value of no known shape");
  }
}

// The columns `table` has in this database.
std::set<std::string> columns_of(sql_connection& db, const std::string& table) {
  auto& s = db.prepare("SELECT * FROM " + table + " WHERE 1 = 0");
  std::set<std::string> out;
  // A statement with no row still has its shape on both engines once stepped.
  s.step();
  for (int c = 0; c < s.columns(); ++c) out.insert(s.column_name(c));
  s.reset();
  return out;
}

// INSERT of one row (its columns less `skip`, plus `extra`); RETURNING id when `returning`.
std::int64_t insert_row(sql_connection& db, const std::string& table, const json& row, const std::set<std::string>& known,
                        const std::set<std::string>& skip, const std::map<std::string, json>& extra, bool returning,
                        const std::string& where) {
  std::vector<std::pair<std::string, const json*>> cols;
  for (const auto& [name, v] : row.items()) {
    if (skip.count(name) || extra.count(name)) continue;
    if (!known.count(name))
      throw storage_error(storage_error::kind::invalid, where + ": column " + table + "." + name +
                                                            " is not in this database (a newer logitaudit exported it?)");
    cols.emplace_back(name, &v);
  }
  for (const auto& [name, v] : extra) cols.emplace_back(name, &v);
  std::string names, params;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    names += (i ? ", " : "") + cols[i].first;
    params += (i ? ", ?" : "?") + std::to_string(i + 1);
  }
  auto& s = db.prepare("INSERT INTO " + table + " (" + names + ") VALUES (" + params + ")" + (returning ? " RETURNING id" : ""));
  for (std::size_t i = 0; i < cols.size(); ++i)
    bind_value(s, static_cast<int>(i) + 1, *cols[i].second, where + ", " + table + "." + cols[i].first);
  try {
    if (!returning) {
      s.run();
      return 0;
    }
    if (!s.step()) throw storage_error(storage_error::kind::broken, "an INSERT returned no id");
    const auto id = s.integer(0);
    s.reset();
    return id;
  } catch (const storage_error& e) {
    // A row the schema refuses (a missing column, a value out of its CHECK, a duplicate key) is
    // the bundle's fault; an unreachable or full database is not.
    if (e.why == storage_error::kind::unavailable || e.why == storage_error::kind::full) throw;
    s.reset();
    throw storage_error(storage_error::kind::invalid, where + ": a " + table + " row this database refuses: " + e.what());
  }
}

expected<bundle, std::string> parse(const std::string& text, std::string* digest_problem) {
  const auto nl = text.find('\n');
  if (nl == std::string::npos) return unexpected{std::string("not a logitaudit bundle: no header line (truncated?)")};
  const json head = json::parse(std::string_view(text).substr(0, nl), nullptr, false);
  if (!head.is_object() || text_of(head, "format") != kFormat)
    return unexpected{std::string("not a logitaudit bundle: the first line is not its header")};
  if (!head.contains("version") || !head["version"].is_number_integer())
    return unexpected{std::string("the bundle's header has no version")};
  bundle b;
  b.version = head["version"].get<int>();
  if (b.version > kBundleVersion)
    return unexpected{"the bundle has version " + std::to_string(b.version) + ", newer than this logitaudit's " +
                      std::to_string(kBundleVersion) + ": upgrade logitaudit to read it"};
  if (b.version < 1) return unexpected{std::string("the bundle's version must be 1 or more")};
  if (!head.contains("content_digest") || !head["content_digest"].is_string() || !head.contains("origin") ||
      !head["origin"].is_object())
    return unexpected{std::string("the bundle's header lacks its content_digest or origin")};
  b.content_digest = head["content_digest"].get<std::string>();
  const auto& o = head["origin"];
  b.origin = {text_of(o, "version"), text_of(o, "database"), text_of(o, "host"), text_of(o, "exported_at")};
  b.body = text.substr(nl + 1);
  if (!b.body.empty() && b.body.back() == '\n') b.body.pop_back();
  const auto actual = audit::xxh128(b.body).hex();
  if (actual != b.content_digest) {
    const std::string why = "the content digest does not match: the body hashes to " + actual + ", the header says " +
                            b.content_digest + " (changed or truncated after export)";
    if (!digest_problem) return unexpected{why};
    *digest_problem = why;
  }
  const json body = json::parse(b.body, nullptr, false);
  if (!body.is_object() || !body.contains("audits") || !body["audits"].is_array() || body["audits"].empty())
    return unexpected{std::string("the bundle's body is not a JSON object with a non-empty audits array (truncated?)")};
  for (std::size_t i = 0; i < body["audits"].size(); ++i) {
    const auto& a = body["audits"][i];
    const std::string at = "audits[" + std::to_string(i) + "]";
    if (!a.is_object() || !a.contains("tables") || !a["tables"].is_object())
      return unexpected{at + " has no tables"};
    const json jobs = a["tables"].contains("jobs") ? a["tables"]["jobs"] : json::array();
    if (!jobs.is_array() || jobs.size() != 1 || !jobs[0].is_object() || !jobs[0].contains("id"))
      return unexpected{at + ".tables.jobs must hold exactly the audit's row"};
    for (const auto& item : a["tables"].items()) {
      const std::string name = item.key();
      const auto& rows = item.value();
      const bool known = std::any_of(std::begin(kBundleTables), std::end(kBundleTables),
                                     [&name](const bundle_table& t) { return t.name == name; });
      if (!known) return unexpected{at + ".tables." + name + " is not a table of an audit"};
      if (!rows.is_array()) return unexpected{at + ".tables." + name + " must be an array of rows"};
      for (const auto& r : rows)
        if (!r.is_object()) return unexpected{at + ".tables." + name + " holds a row that is not an object"};
    }
    bundle_audit_summary sum;
    const auto& job = jobs[0];
    sum.id = job["id"].is_number_integer() ? job["id"].get<std::int64_t>() : 0;
    sum.status = text_of(job, "status");
    sum.spec_hash = text_of(job, "spec_hash");
    sum.runs = a["tables"].contains("runs") ? static_cast<std::int64_t>(a["tables"]["runs"].size()) : 0;
    sum.streams = a["tables"].contains("streams") ? static_cast<std::int64_t>(a["tables"]["streams"].size()) : 0;
    b.audits.push_back(sum);
  }
  return b;
}

}  // namespace

expected<std::string, export_refusal> export_bundle(store& s, const std::vector<std::int64_t>& jobs,
                                                    const bundle_origin& origin) {
  auto& db = connection_of(s);
  json audits = json::array();
  for (const auto job : jobs) {
    auto row = s.jobs().get(job);
    if (!row) return unexpected{export_refusal{true, job, "no audit " + std::to_string(job) + " is stored"}};
    if (!audit::is_final(row->status))
      return unexpected{export_refusal{false, job, "audit " + std::to_string(job) + " is " +
                                                       std::string(audit::to_string(row->status)) +
                                                       ": it is exported once it has ended"}};
    json tables = json::object();
    for (const auto& t : kBundleTables) tables[t.name] = rows_of(db, t, job);
    audits.push_back({{"id", job}, {"tables", std::move(tables)}});
  }
  const std::string body = json{{"audits", std::move(audits)}}.dump();
  // The header's members in this order (format first), so that a glance at a file's start
  // tells a bundle.
  const nlohmann::ordered_json head = {{"format", kFormat},
                     {"version", kBundleVersion},
                     {"origin",
                      {{"version", origin.version},
                       {"database", origin.database},
                       {"host", origin.host},
                       {"exported_at", origin.exported_at}}},
                     {"content_digest", audit::xxh128(body).hex()}};
  return head.dump() + "\n" + body + "\n";
}

expected<bundle, std::string> read_bundle(const std::string& text, std::size_t max_bytes) {
  if (max_bytes > 0 && text.size() > max_bytes)
    return unexpected{"the bundle is " + std::to_string(text.size()) + " bytes, more than the " + std::to_string(max_bytes) +
                      " this daemon takes (limits.max_bundle_bytes)"};
  return parse(text, nullptr);
}

expected<bundle, std::string> read_bundle_unchecked(const std::string& text, std::string& digest_problem) {
  return parse(text, &digest_problem);
}

import_result import_bundle(store& s, const bundle& b, const std::string& imported_at) {
  auto& db = connection_of(s);
  const json body = json::parse(b.body);
  import_result out;
  std::map<std::string, std::set<std::string>> known;
  for (const auto& t : kBundleTables) known[t.name] = columns_of(db, t.name);
  transaction tx(db);
  for (std::size_t i = 0; i < body["audits"].size(); ++i) {
    const auto& tables = body["audits"][i]["tables"];
    const auto& job = tables["jobs"][0];
    const std::string where = "audits[" + std::to_string(i) + "]";
    // An audit imported before keeps the provenance it came with: a bundle of a bundle names
    // the first origin.
    const bool reimported = job.contains("origin") && job["origin"].is_string() && !job["origin"].get<std::string>().empty();
    const json origin = reimported ? job["origin"] : json(origin_label(b.origin));
    const json origin_audit = reimported && job.contains("origin_audit") ? job["origin_audit"] : job["id"];
    const json origin_version = reimported && job.contains("origin_version") ? job["origin_version"] : json(b.origin.version);
    auto& seen = db.prepare("SELECT id FROM jobs WHERE origin = ?1 AND origin_audit = ?2");
    bind_value(seen, 1, origin, where);
    bind_value(seen, 2, origin_audit, where);
    if (seen.step()) {
      out.jobs.push_back(seen.integer(0));
      out.already.push_back(true);
      seen.reset();
      continue;
    }
    seen.reset();
    std::set<std::string> skip = {"id", "schedule_id"};
    skip.insert(kProvenance.begin(), kProvenance.end());
    const auto id = insert_row(db, "jobs", job, known["jobs"], skip,
                               {{"origin", origin}, {"origin_audit", origin_audit}, {"origin_version", origin_version},
                                {"imported_at", imported_at}},
                               true, where);
    std::map<std::int64_t, std::int64_t> run_ids;  // the bundle's run id -> this database's
    for (const auto& t : kBundleTables) {
      const std::string name = t.name;
      if (name == "jobs" || !tables.contains(name)) continue;
      for (const auto& row : tables[name]) {
        const std::string at = where + "." + name;
        if (name == "runs") {
          if (!row.contains("id") || !row["id"].is_number_integer()) throw storage_error(storage_error::kind::invalid, at + ": a run without its id");
          run_ids[row["id"].get<std::int64_t>()] = insert_row(db, name, row, known[name], {"id"}, {{"job_id", id}}, true, at);
        } else if (name == "streams" || name == "verdicts") {
          const auto it = row.contains("run_id") && row["run_id"].is_number_integer()
                              ? run_ids.find(row["run_id"].get<std::int64_t>())
                              : run_ids.end();
          if (it == run_ids.end()) throw storage_error(storage_error::kind::invalid, at + ": a row of no run of this audit");
          insert_row(db, name, row, known[name], {}, {{"run_id", it->second}}, false, at);
        } else {
          insert_row(db, name, row, known[name], {}, {{"job_id", id}}, false, at);
        }
      }
    }
    out.jobs.push_back(id);
    out.already.push_back(false);
  }
  tx.commit();
  return out;
}

}  // namespace logitaudit::storage
