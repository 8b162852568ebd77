// The queries of the stores, in the SQL SQLite and PostgreSQL share: numbered parameters,
// INSERT ... RETURNING, ON CONFLICT upserts. Where the two differ (reading a JSON array) the
// connection's dialect picks the clause.
#include "sql_repositories.hpp"

#include <algorithm>
#include <chrono>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "audit/stream_encoding.hpp"
#include "documents.hpp"
#include "stream_documents.hpp"

namespace logitaudit::storage {
namespace {

using json = nlohmann::json;

// Inserts rows [0, n) with multi-row VALUES, in chunks of 64, 32, ... 1 rows, so that a few
// statement texts (each prepared once) serve any count. bind_row(s, p, i) binds row i's
// columns from parameter p on; on_returned reads each row a RETURNING clause gives.
void insert_rows(sql_connection& db, const std::string& head, int cols, std::size_t n,
                 const std::function<void(sql_statement&, int, std::size_t)>& bind_row, const std::string& returning = "",
                 const std::function<void(sql_statement&)>& on_returned = {}) {
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

// Runs an INSERT ... RETURNING id and returns the id.
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

// ---- jobs --------------------------------------------------------------------------------

constexpr const char* kJobColumns =
    "id, status, spec_json, spec_hash, prediction_hash, predictions_registered_at, total_requests, total_groups, "
    "done_requests, failed_requests, error, tags_json, schedule_id, created_at, started_at, finished_at, findings_json, "
    "origin, origin_audit, origin_version, imported_at";

job_record read_job(sql_statement& s) {
  job_record j;
  j.id = s.integer(0);
  j.status = status_of(s.text(1));
  j.spec_json = s.text(2);
  if (auto spec = decode_spec(j.spec_json)) j.spec = std::move(*spec);
  j.spec_hash = s.text(3);
  j.prediction_hash = s.text(4);
  j.predictions_registered_at = s.text(5);
  j.total_requests = s.integer(6);
  j.total_groups = s.integer(7);
  j.done_requests = s.integer(8);
  j.failed_requests = s.integer(9);
  j.error = s.text(10);
  j.tags = tags_of(s.text(11));
  if (!s.is_null(12)) j.schedule_id = s.integer(12);
  j.created_at = s.text(13);
  j.started_at = s.text(14);
  j.finished_at = s.text(15);
  j.findings_json = s.text(16);
  if (!j.findings_json.empty()) j.findings = decode_findings(j.findings_json);
  j.provenance.origin = s.text(17);
  if (!s.is_null(18)) j.provenance.audit = s.integer(18);
  j.provenance.version = s.text(19);
  j.provenance.imported_at = s.text(20);
  return j;
}

// Rows of (id, starts_servers, backend or NULL), by id: one holding per job.
std::vector<job_holding> read_holdings(sql_statement& s) {
  std::vector<job_holding> out;
  while (s.step()) {
    if (out.empty() || out.back().id != s.integer(0)) out.push_back({s.integer(0), {}, s.integer(1) != 0});
    if (!s.is_null(2)) out.back().backends.push_back(s.text(2));
  }
  s.reset();
  return out;
}

constexpr const char* kHoldingQuery =
    "SELECT j.id, j.starts_servers, b.backend FROM jobs j LEFT JOIN job_backends b ON b.job_id = j.id ";

// The one row a query by key read, if any.
template <class T>
std::optional<T> only(std::vector<T> rows) {
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::vector<job_record> read_jobs(sql_statement& s) {
  std::vector<job_record> out;
  while (s.step()) out.push_back(read_job(s));
  s.reset();
  return out;
}

void write_status(sql_connection& db, std::int64_t job, audit::job_status status, const std::string& at, const std::string& error) {
  auto& s = db.prepare(
      "UPDATE jobs SET status = ?2, error = ?3, "
      "started_at = CASE WHEN ?2 = 'running' AND started_at = '' THEN ?4 ELSE started_at END, "
      "finished_at = CASE WHEN ?5 <> 0 THEN ?4 ELSE finished_at END "
      "WHERE id = ?1");
  s.bind(1, job).bind(2, audit::to_string(status)).bind(3, error).bind(4, at).bind(5, audit::is_final(status));
  s.run();
}

class sql_jobs final : public job_repository {
 public:
  sql_jobs(sql_connection& db, write_fence fence) : db_(db), fence_(std::move(fence)) {}

  std::int64_t create(const new_job& j) override {
    auto& s = db_.prepare(
        "INSERT INTO jobs (status, spec_json, spec_hash, prediction_hash, predictions_registered_at, total_requests, "
        "total_groups, tags_json, schedule_id, created_at, starts_servers) VALUES ('queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "RETURNING id");
    s.bind(1, j.spec_json).bind(2, j.spec_hash).bind(3, j.prediction_hash).bind(4, j.predictions_registered_at);
    s.bind(5, j.total_requests).bind(6, j.total_groups).bind(7, tags_text(j.tags)).bind(8, j.schedule_id);
    s.bind(9, j.created_at).bind(10, j.starts_servers);
    transaction t(db_);
    const auto id = returned_id(s);
    auto& b = db_.prepare("INSERT INTO job_backends (job_id, backend) VALUES (?, ?) ON CONFLICT DO NOTHING");
    for (const auto& name : j.backends) {
      b.bind(1, id).bind(2, name);
      b.run();
    }
    if (j.schedule_id && j.fire_unix) {
      // The fire's unique row: a second job for it fails here (kind conflict), with the first.
      auto& f = db_.prepare("INSERT INTO schedule_fires (schedule_id, fire_unix, job_id, fired_at) VALUES (?, ?, ?, ?)");
      f.bind(1, *j.schedule_id).bind(2, *j.fire_unix).bind(3, id).bind(4, j.created_at);
      f.run();
    }
    t.commit();
    return id;
  }

  void set_status(std::int64_t job, audit::job_status status, const std::string& at, const std::string& error) override {
    transaction t(db_);
    fence_(job);
    write_status(db_, job, status, at, error);
    t.commit();
  }

  void set_total_requests(std::int64_t job, std::int64_t total) override {
    transaction t(db_);
    fence_(job);
    auto& s = db_.prepare("UPDATE jobs SET total_requests = ?2 WHERE id = ?1");
    s.bind(1, job).bind(2, total);
    s.run();
    t.commit();
  }

  void finish(std::int64_t job, audit::job_status status, const std::string& error, const audit::findings& f,
              const std::string& findings_json, const std::string& at) override {
    transaction t(db_);
    fence_(job);
    // The job's run ids in one read, then every verdict in a few multi-row upserts.
    std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> run_ids;  // (group, request) -> id
    auto& ids = db_.prepare("SELECT group_index, request_index, id FROM runs WHERE job_id = ?");
    ids.bind(1, job);
    while (ids.step()) run_ids[{ids.integer(0), ids.integer(1)}] = ids.integer(2);
    ids.reset();
    std::vector<std::pair<std::int64_t, const audit::run_verdict*>> verdicts;
    for (const auto& v : f.verdicts) {
      if (v.failed || !v.result) continue;
      auto id = run_ids.find({static_cast<std::int64_t>(v.group), static_cast<std::int64_t>(v.request)});
      if (id != run_ids.end()) verdicts.emplace_back(id->second, &v);
    }
    insert_rows(db_,
                "INSERT INTO verdicts (run_id, logit_identical, token_identical, first_logit_difference, "
                "first_token_difference, max_abs_delta, mean_abs_delta, max_ulp, margin_at_flip, flag, flag_reason, "
                "first_text_difference, width_at_difference, width_before_difference, events_before_difference)",
                15, verdicts.size(),
                [&](sql_statement& s, int p, std::size_t i) {
                  const auto& v = *verdicts[i].second;
                  const auto& c = *v.result;
                  s.bind(p, verdicts[i].first).bind(p + 1, c.logit_identical).bind(p + 2, c.token_identical);
                  s.bind(p + 3, c.first_logit_difference).bind(p + 4, c.first_token_difference).bind(p + 5, c.max_abs_delta);
                  s.bind(p + 6, c.mean_abs_delta);
                  s.bind(p + 7, static_cast<std::int64_t>(std::min<std::uint64_t>(c.max_ulp, INT64_MAX)));
                  s.bind(p + 8, c.baseline_margin_at_flip).bind(p + 9, audit::to_string(v.flag)).bind(p + 10, v.flag_reason);
                  s.bind(p + 11, c.first_text_difference);
                  const auto& d = v.at_difference;
                  s.bind(p + 12, d ? std::optional<std::int64_t>(d->width) : std::nullopt);
                  s.bind(p + 13, d && d->width_before >= 0 ? std::optional<std::int64_t>(d->width_before) : std::nullopt);
                  s.bind(p + 14, d ? audit::describe_events(d->events) : std::string());
                },
                " ON CONFLICT (run_id) DO UPDATE SET "
                "logit_identical = excluded.logit_identical, token_identical = excluded.token_identical, "
                "first_logit_difference = excluded.first_logit_difference, first_token_difference = excluded.first_token_difference, "
                "max_abs_delta = excluded.max_abs_delta, mean_abs_delta = excluded.mean_abs_delta, max_ulp = excluded.max_ulp, "
                "margin_at_flip = excluded.margin_at_flip, flag = excluded.flag, flag_reason = excluded.flag_reason, "
                "first_text_difference = excluded.first_text_difference, width_at_difference = excluded.width_at_difference, "
                "width_before_difference = excluded.width_before_difference, "
                "events_before_difference = excluded.events_before_difference");
    auto& b_upd = db_.prepare(
        "UPDATE bursts SET batched = ?3, expected = ?4, needed = ?5, measured = ?6, measured_by = ?7, "
        "needed_overlap = ?8, verdict_reason = ?9, foreign_load = ?10 WHERE job_id = ?1 AND group_index = ?2");
    for (const auto& [group, b] : f.bursts) {
      b_upd.bind(1, job).bind(2, group).bind(3, b.batched).bind(4, b.expected).bind(5, b.needed).bind(6, b.measured);
      b_upd.bind(7, audit::to_string(b.measured_by)).bind(8, b.needed_overlap).bind(9, b.reason).bind(10, b.foreign_load);
      b_upd.run();
    }
    auto& p_ins = db_.prepare(
        "INSERT INTO predictions (job_id, prediction_id, held, k, n, outcome, flagged) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (job_id, prediction_id) DO UPDATE SET held = excluded.held, k = excluded.k, n = excluded.n, "
        "outcome = excluded.outcome, flagged = excluded.flagged");
    for (const auto& p : audit::section<audit::prediction_section>(f).results) {
      p_ins.bind(1, job).bind(2, p.claim.id).bind(3, p.held()).bind(4, p.k).bind(5, p.n);
      p_ins.bind(6, audit::to_string(p.outcome)).bind(7, p.flagged);
      p_ins.run();
    }
    auto& j = db_.prepare("UPDATE jobs SET findings_json = ? WHERE id = ?");
    j.bind(1, findings_json).bind(2, job);
    j.run();
    write_status(db_, job, status, at, error);
    t.commit();
  }

  std::optional<job_record> get(std::int64_t id) override {
    auto& s = db_.prepare(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?");
    s.bind(1, id);
    std::optional<job_record> j;
    if (s.step()) j = read_job(s);
    s.reset();
    return j;
  }

  std::vector<job_record> with_status(audit::job_status status) override {
    auto& s = db_.prepare(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE status = ? ORDER BY id");
    s.bind(1, audit::to_string(status));
    return read_jobs(s);
  }

  std::vector<job_holding> holdings(audit::job_status status) override {
    auto& s = db_.prepare(std::string(kHoldingQuery) + "WHERE j.status = ? ORDER BY j.id, b.backend");
    s.bind(1, audit::to_string(status));
    return read_holdings(s);
  }

  std::optional<job_holding> holding(std::int64_t job) override {
    auto& s = db_.prepare(std::string(kHoldingQuery) + "WHERE j.id = ? ORDER BY b.backend");
    s.bind(1, job);
    return only(read_holdings(s));
  }

  std::vector<job_record> page(const job_query& q) override {
    // The tags are a JSON array of strings in both engines; each has its own way into one.
    const char* tag_values = db_.dialect() == sql_dialect::postgresql
                                 ? "SELECT 1 FROM jsonb_array_elements_text(jobs.tags_json::jsonb) AS t(value)"
                                 : "SELECT 1 FROM json_each(jobs.tags_json)";
    auto& s = db_.prepare(std::string("SELECT ") + kJobColumns +
                          " FROM jobs WHERE (?1 = '' OR status = ?1) AND (?2 = 0 OR id < ?2) AND "
                          "(?3 = '' OR EXISTS (" + tag_values + " WHERE value = ?3)) "
                          "ORDER BY id DESC LIMIT ?4");
    const std::string status(q.status ? audit::to_string(*q.status) : "");
    s.bind(1, status).bind(2, q.before).bind(3, q.tag).bind(4, q.limit);
    return read_jobs(s);
  }

  std::vector<job_record> of_schedule(std::int64_t schedule, int limit) override {
    auto& s = db_.prepare(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE schedule_id = ? ORDER BY id DESC LIMIT ?");
    s.bind(1, schedule).bind(2, limit);
    return read_jobs(s);
  }

  std::vector<series_summary> series(const series_filter& f) override {
    auto& s = db_.prepare(
        "SELECT g.schedule_id, g.spec, g.backend, g.n, g.first_id, g.last_id, l.spec_hash, l.created_at FROM ("
        " SELECT j.schedule_id, CASE WHEN j.schedule_id IS NULL THEN j.spec_hash ELSE '' END AS spec, b.backend,"
        "  count(*) AS n, min(j.id) AS first_id, max(j.id) AS last_id"
        " FROM jobs j JOIN job_backends b ON b.job_id = j.id"
        " WHERE (?1 = '' OR b.backend = ?1) AND (?2 = '' OR j.spec_hash = ?2) AND (?3 IS NULL OR j.schedule_id = ?3)"
        " GROUP BY j.schedule_id, spec, b.backend) g JOIN jobs l ON l.id = g.last_id ORDER BY g.last_id DESC");
    s.bind(1, f.backend).bind(2, f.spec_hash).bind(3, f.schedule);
    std::vector<series_summary> out;
    while (s.step()) {
      series_summary x;
      if (!s.is_null(0)) x.key.schedule = s.integer(0);
      x.key.spec_hash = s.text(1);
      x.key.backend = s.text(2);
      x.audits = s.integer(3);
      x.first_job = s.integer(4);
      x.last_job = s.integer(5);
      x.last_spec_hash = s.text(6);
      x.last_time = s.text(7);
      out.push_back(std::move(x));
    }
    s.reset();
    return out;
  }

  std::vector<job_record> series_jobs(const series_key& k, int limit) override {
    auto& s = db_.prepare(std::string("SELECT ") + kJobColumns +
                          " FROM jobs WHERE id IN (SELECT job_id FROM job_backends WHERE backend = ?1) AND"
                          " ((?2 IS NOT NULL AND schedule_id = ?2) OR (?2 IS NULL AND schedule_id IS NULL AND spec_hash = ?3))"
                          " ORDER BY id DESC LIMIT ?4");
    s.bind(1, k.backend).bind(2, k.schedule).bind(3, k.spec_hash).bind(4, limit);
    auto jobs = read_jobs(s);
    std::reverse(jobs.begin(), jobs.end());
    return jobs;
  }

  std::map<audit::job_status, std::int64_t> counts() override {
    auto& s = db_.prepare("SELECT status, count(*) FROM jobs GROUP BY status");
    std::map<audit::job_status, std::int64_t> out;
    while (s.step()) out[status_of(s.text(0))] = s.integer(1);
    s.reset();
    return out;
  }

  std::vector<std::int64_t> ids() override {
    auto& s = db_.prepare("SELECT id FROM jobs ORDER BY id");
    std::vector<std::int64_t> out;
    while (s.step()) out.push_back(s.integer(0));
    s.reset();
    return out;
  }

  std::vector<prediction_record> predictions(std::int64_t job) override {
    auto& s = db_.prepare("SELECT prediction_id, outcome, k, n, flagged FROM predictions WHERE job_id = ? ORDER BY prediction_id");
    s.bind(1, job);
    std::vector<prediction_record> out;
    while (s.step())
      out.push_back({s.text(0), audit::parse_prediction_outcome(s.text(1)).value_or(audit::prediction_outcome::failed),
                     static_cast<int>(s.integer(2)), static_cast<int>(s.integer(3)), static_cast<int>(s.integer(4))});
    s.reset();
    return out;
  }

  bool remove(std::int64_t job) override {
    transaction t(db_);
    // Verdicts and streams hang off runs, runs and bursts off groups: cascades remove them all.
    auto& s = db_.prepare("DELETE FROM jobs WHERE id = ?");
    s.bind(1, job);
    s.run();
    const bool any = db_.changes() > 0;
    t.commit();
    return any;
  }

 private:
  sql_connection& db_;
  write_fence fence_;
};

// ---- evidence ----------------------------------------------------------------------------

constexpr const char* kRunColumns =
    "r.id, r.group_index, r.request_index, r.backend, r.condition, r.replicate, r.prompt, r.temperature, r.seed, "
    "r.cache_prompt, r.id_slot, r.compared, r.baseline_group, r.status, r.error, r.write_ns, r.first_byte_ns, "
    "r.last_byte_ns, s.token_digest, s.logit_digest, s.token_count, s.stop_reason, s.prompt_tokens, s.cached_tokens, "
    "s.slot, s.prompt_n, s.prompt_ms, s.predicted_n, s.predicted_ms, s.cache_n, v.run_id, v.logit_identical, "
    "v.token_identical, v.first_logit_difference, v.first_token_difference, v.max_abs_delta, v.mean_abs_delta, "
    "v.max_ulp, v.margin_at_flip, v.flag, v.flag_reason, r.company, s.token_texts, v.first_text_difference, "
    "s.token_times, s.decode_steps, v.width_at_difference, v.width_before_difference, v.events_before_difference";
constexpr int kRunColumnCount = 49;
constexpr const char* kRunJoins =
    " FROM runs r LEFT JOIN streams s ON s.run_id = r.id LEFT JOIN verdicts v ON v.run_id = r.id ";

run_record read_run(sql_statement& s) {
  run_record r;
  r.id = s.integer(0);
  r.group = static_cast<std::size_t>(s.integer(1));
  r.request = static_cast<std::size_t>(s.integer(2));
  r.backend = s.text(3);
  r.condition = s.text(4);
  r.replicate = static_cast<int>(s.integer(5));
  r.prompt = s.text(6);
  r.temperature = s.real(7);
  if (!s.is_null(8)) r.seed = s.integer(8);
  r.cache_prompt = s.integer(9) != 0;
  if (!s.is_null(10)) r.id_slot = s.integer(10);
  r.compared = s.integer(11) != 0;
  if (!s.is_null(12)) r.baseline_group = s.integer(12);
  r.ok = s.text(13) == "ok";
  r.error = s.text(14);
  r.write_ns = s.integer(15);
  r.first_byte_ns = s.integer(16);
  r.last_byte_ns = s.integer(17);
  if (!s.is_null(18)) {
    auto token = digest_of(s.blob(18)), logit = digest_of(s.blob(19));
    if (token && logit) r.digests = audit::stream_digests{*token, *logit};
    r.token_count = s.integer(20);
    r.stop_reason = s.text(21);
    r.prompt_tokens = s.integer(22);
    r.cached_tokens = s.integer(23);
    r.slot = s.integer(24);
    r.server.prompt_n = s.integer(25);
    r.server.prompt_ms = s.real(26);
    r.server.predicted_n = s.integer(27);
    r.server.predicted_ms = s.real(28);
    r.server.cache_n = s.integer(29);
  }
  if (!s.is_null(30)) {
    verdict_record v;
    v.logit_identical = s.integer(31) != 0;
    v.token_identical = s.integer(32) != 0;
    v.first_logit_difference = static_cast<int>(s.integer(33));
    v.first_token_difference = static_cast<int>(s.integer(34));
    v.max_abs_delta = s.real(35);
    v.mean_abs_delta = s.real(36);
    v.max_ulp = static_cast<std::uint64_t>(s.integer(37));
    if (!s.is_null(38)) v.margin_at_flip = s.real(38);
    v.flag = audit::parse_evidence_flag(s.text(39)).value_or(audit::evidence_flag::none);
    v.flag_reason = s.text(40);
    v.first_text_difference = static_cast<int>(s.integer(43));
    if (!s.is_null(46)) v.width_at_difference = static_cast<int>(s.integer(46));
    if (!s.is_null(47)) v.width_before_difference = static_cast<int>(s.integer(47));
    v.events_before_difference = s.text(48);
    r.verdict = v;
  }
  if (!s.is_null(41)) r.company = s.real(41);
  if (!s.is_null(42)) r.token_texts = s.text(42);
  if (!s.is_null(44)) r.token_times = s.text(44);
  if (!s.is_null(45)) r.decode_steps = decode_steps(s.text(45));
  return r;
}

// The stream as the runner saw it: decoded bytes plus what the row keeps beside them.
std::optional<audit::logit_stream> stream_of(const run_record& r, const std::vector<std::uint8_t>& encoding, std::string content) {
  auto st = audit::decode_canonical(encoding);
  if (!st) return std::nullopt;
  st->content = std::move(content);
  st->stop_reason = r.stop_reason;
  st->prompt_tokens = r.prompt_tokens;
  st->cached_tokens = r.cached_tokens;
  st->slot = r.slot;
  st->server = r.server;
  set_token_texts(*st, r.token_texts);
  st->client.write_ns = r.write_ns;
  st->client.first_byte_ns = r.first_byte_ns;
  st->client.last_byte_ns = r.last_byte_ns;
  set_token_times(*st, r.token_times);
  return st;
}

audit::backend_fingerprint read_fingerprint(sql_statement& s, int at) {
  audit::backend_fingerprint f;
  f.api = s.text(at);
  f.build_info = s.text(at + 1);
  f.model = s.text(at + 2);
  f.model_ftype = s.text(at + 3);
  f.total_slots = s.integer(at + 4);
  f.n_ctx = s.integer(at + 5);
  f.chat_template_hash = s.text(at + 6);
  f.generation_settings_hash = s.text(at + 7);
  f.prompt_token_hashes = hashes_of(s.text(at + 8));
  f.model_meta = hashes_of(s.text(at + 9));
  f.model_sha256 = s.text(at + 10);
  f.canary_logit_digest = s.text(at + 11);
  f.canary_token_digest = s.text(at + 12);
  f.machine = hashes_of(s.text(at + 13));
  f.observed = hashes_of(s.text(at + 14));
  return f;
}

class sql_evidence final : public evidence_repository {
 public:
  sql_evidence(sql_connection& db, write_fence fence) : db_(db), fence_(std::move(fence)) {}

  void record_groups(std::int64_t job, const std::vector<group_write>& groups) override {
    transaction t(db_);
    fence_(job);
    // Every table's rows of the whole batch in a few multi-row INSERTs: a database server
    // across a network (or a slow loopback) costs a round trip per statement, not per row.
    const std::string at = now_utc();
    insert_rows(db_,
                "INSERT INTO groups (job_id, group_index, backend, condition, replicate, mode, attempts, stored_at, load_level)", 9,
                groups.size(), [&](sql_statement& s, int p, std::size_t i) {
                  const auto& g = *groups[i].group;
                  s.bind(p, job).bind(p + 1, g.index).bind(p + 2, g.backend).bind(p + 3, g.condition).bind(p + 4, g.replicate);
                  // A load level's requests are concurrent: stored as a burst group, its figures beside it.
                  s.bind(p + 5, g.mode == audit::group_mode::serial ? "serial" : "burst").bind(p + 6, groups[i].attempts);
                  s.bind(p + 7, at).bind(p + 8, groups[i].load ? encode_load_measurement(*groups[i].load) : std::string());
                });
    std::vector<const group_write*> with_burst;
    for (const auto& gw : groups)
      if (gw.burst) with_burst.push_back(&gw);
    insert_rows(db_,
                "INSERT INTO bursts (job_id, group_index, launch_spread_ns, wall_ns, overlap, busy_slots_per_decode, warnings, "
                "width, server_slots, timed_concurrency)",
                10, with_burst.size(), [&](sql_statement& s, int p, std::size_t i) {
                  const auto& b = *with_burst[i]->burst;
                  std::string warnings;
                  for (const auto& w : b.warnings) warnings += w + "\n";
                  s.bind(p, job).bind(p + 1, with_burst[i]->group->index).bind(p + 2, b.launch_spread_ns).bind(p + 3, b.wall_ns);
                  s.bind(p + 4, b.overlap).bind(p + 5, b.busy_slots_per_decode).bind(p + 6, warnings).bind(p + 7, b.width);
                  s.bind(p + 8, b.server_slots).bind(p + 9, b.timed_concurrency);
                });
    struct run_ref {
      const group_write* gw;
      const audit::observed_run* run;
    };
    std::vector<run_ref> runs;
    std::int64_t failed = 0;
    for (const auto& gw : groups)
      for (const auto& r : gw.runs) {
        runs.push_back({&gw, &r});
        failed += !r.stream;
      }
    std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> run_ids;  // (group, request) -> id
    insert_rows(
        db_,
        "INSERT INTO runs (job_id, group_index, request_index, backend, condition, replicate, prompt, temperature, seed, "
        "cache_prompt, id_slot, compared, baseline_group, status, error, write_ns, first_byte_ns, last_byte_ns, company)",
        19, runs.size(),
        [&](sql_statement& s, int p, std::size_t i) {
          const auto& gw = *runs[i].gw;
          const auto& g = *gw.group;
          const auto& r = *runs[i].run;
          const auto& req = g.requests.at(r.request);
          std::optional<std::int64_t> baseline_group;
          if (req.compared && req.baseline >= 0)
            baseline_group = static_cast<std::int64_t>(gw.plan->baselines.at(static_cast<std::size_t>(req.baseline)).group);
          s.bind(p, job).bind(p + 1, g.index).bind(p + 2, r.request).bind(p + 3, g.backend).bind(p + 4, g.condition);
          s.bind(p + 5, g.replicate).bind(p + 6, req.prompt).bind(p + 7, req.params.temperature);
          s.bind(p + 8, req.params.seed ? std::optional<std::int64_t>(static_cast<std::int64_t>(*req.params.seed)) : std::nullopt);
          s.bind(p + 9, req.cache_prompt).bind(p + 10, req.id_slot ? std::optional<std::int64_t>(*req.id_slot) : std::nullopt);
          s.bind(p + 11, req.compared).bind(p + 12, baseline_group).bind(p + 13, r.stream ? "ok" : "failed").bind(p + 14, r.error);
          s.bind(p + 15, r.stream ? r.stream->client.write_ns : 0).bind(p + 16, r.stream ? r.stream->client.first_byte_ns : 0);
          s.bind(p + 17, r.stream ? r.stream->client.last_byte_ns : 0).bind(p + 18, r.company);
        },
        " RETURNING group_index, request_index, id",
        [&](sql_statement& s) { run_ids[{s.integer(0), s.integer(1)}] = s.integer(2); });
    // A burst's decode steps, reconstructed from its members' token times (audit/decode_steps).
    std::map<const audit::observed_run*, std::string> steps;
    for (const auto& gw : groups) {
      if (gw.group->mode != audit::group_mode::burst) continue;
      std::vector<const audit::logit_stream*> members;
      for (const auto& r : gw.runs) members.push_back(r.stream ? &*r.stream : nullptr);
      const auto rec = audit::reconstruct_steps(members, gw.burst ? gw.burst->server_slots : -1);
      for (std::size_t i = 0; i < gw.runs.size(); ++i) steps[&gw.runs[i]] = encode_steps(audit::steps_of(rec, i));
    }
    std::vector<run_ref> ok;
    for (const auto& r : runs)
      if (r.run->stream) ok.push_back(r);
    insert_rows(db_,
                "INSERT INTO streams (run_id, token_digest, logit_digest, token_count, encoding, content, stop_reason, "
                "prompt_tokens, cached_tokens, slot, prompt_ms, predicted_ms, cache_n, prompt_n, predicted_n, token_texts, "
                "token_times, decode_steps)",
                18, ok.size(), [&](sql_statement& s, int p, std::size_t i) {
                  const auto& st = *ok[i].run->stream;
                  const auto enc = audit::encode_canonical(st);
                  const auto d = audit::digest(st);
                  const auto id = run_ids.at({static_cast<std::int64_t>(ok[i].gw->group->index),
                                              static_cast<std::int64_t>(ok[i].run->request)});
                  s.bind(p, id).bind_blob(p + 1, d.token.bytes).bind_blob(p + 2, d.logit.bytes).bind(p + 3, st.tokens.size());
                  s.bind_blob(p + 4, enc).bind(p + 5, st.content).bind(p + 6, st.stop_reason).bind(p + 7, st.prompt_tokens);
                  s.bind(p + 8, st.cached_tokens).bind(p + 9, st.slot).bind(p + 10, st.server.prompt_ms);
                  s.bind(p + 11, st.server.predicted_ms).bind(p + 12, st.server.cache_n).bind(p + 13, st.server.prompt_n);
                  s.bind(p + 14, st.server.predicted_n).bind(p + 15, encode_token_texts(st));
                  const auto step = steps.find(ok[i].run);
                  s.bind(p + 16, encode_token_times(st)).bind(p + 17, step == steps.end() ? std::string() : step->second);
                });
    auto& progress =
        db_.prepare("UPDATE jobs SET done_requests = done_requests + ?2, failed_requests = failed_requests + ?3 WHERE id = ?1");
    progress.bind(1, job).bind(2, static_cast<std::int64_t>(runs.size())).bind(3, failed);
    progress.run();
    t.commit();
  }

  void record_fingerprint(std::int64_t job, const std::string& backend, audit::fingerprint_phase phase,
                          const audit::backend_fingerprint& f, const std::string& taken_at) override {
    transaction t(db_);
    fence_(job);
    // A resumed job keeps the fingerprint taken when it first began; the end is the last one.
    auto& s = db_.prepare(std::string(
                              "INSERT INTO fingerprints (job_id, backend, phase, api, build_info, model, model_ftype, total_slots, "
                              "n_ctx, chat_template_hash, generation_settings_hash, prompt_token_hashes, model_meta, "
                              "model_sha256, canary_logit_digest, canary_token_digest, taken_at, machine, observed) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT ") +
                          (phase == audit::fingerprint_phase::before
                               ? "DO NOTHING"
                               : "(job_id, backend, phase) DO UPDATE SET api = excluded.api, build_info = excluded.build_info, "
                                 "model = excluded.model, model_ftype = excluded.model_ftype, total_slots = excluded.total_slots, "
                                 "n_ctx = excluded.n_ctx, chat_template_hash = excluded.chat_template_hash, "
                                 "generation_settings_hash = excluded.generation_settings_hash, "
                                 "prompt_token_hashes = excluded.prompt_token_hashes, model_meta = excluded.model_meta, "
                                 "model_sha256 = excluded.model_sha256, canary_logit_digest = excluded.canary_logit_digest, "
                                 "canary_token_digest = excluded.canary_token_digest, taken_at = excluded.taken_at, "
                                 "machine = excluded.machine, observed = excluded.observed"));
    s.bind(1, job).bind(2, backend).bind(3, audit::to_string(phase)).bind(4, f.api).bind(5, f.build_info).bind(6, f.model);
    s.bind(7, f.model_ftype).bind(8, f.total_slots).bind(9, f.n_ctx).bind(10, f.chat_template_hash);
    s.bind(11, f.generation_settings_hash).bind(12, hashes_text(f.prompt_token_hashes)).bind(13, hashes_text(f.model_meta));
    s.bind(14, f.model_sha256).bind(15, f.canary_logit_digest).bind(16, f.canary_token_digest).bind(17, taken_at);
    s.bind(18, hashes_text(f.machine)).bind(19, hashes_text(f.observed));
    s.run();
    t.commit();
  }

  std::set<std::size_t> stored_groups(std::int64_t job) override {
    auto& s = db_.prepare("SELECT group_index FROM groups WHERE job_id = ?");
    s.bind(1, job);
    std::set<std::size_t> out;
    while (s.step()) out.insert(static_cast<std::size_t>(s.integer(0)));
    s.reset();
    return out;
  }

  std::vector<run_record> runs(std::int64_t job, const run_filter& filter) override {
    auto& s = db_.prepare(std::string("SELECT ") + kRunColumns + kRunJoins +
                          "WHERE r.job_id = ?1 AND (?2 = '' OR r.condition = ?2) AND (?3 = '' OR r.backend = ?3) "
                          "ORDER BY r.group_index, r.request_index");
    s.bind(1, job).bind(2, filter.condition).bind(3, filter.backend);
    std::vector<run_record> out;
    while (s.step()) out.push_back(read_run(s));
    s.reset();
    return out;
  }

  std::optional<run_record> run(std::int64_t job, std::int64_t run) override {
    auto& s = db_.prepare(std::string("SELECT ") + kRunColumns + kRunJoins + "WHERE r.id = ?2 AND r.job_id = ?1");
    s.bind(1, job).bind(2, run);
    std::optional<run_record> out;
    if (s.step()) out = read_run(s);
    s.reset();
    return out;
  }

  std::optional<stream_record> stream(std::int64_t job, std::int64_t run) override {
    auto& s = db_.prepare(std::string("SELECT ") + kRunColumns + ", s.encoding, s.content" + kRunJoins +
                          "WHERE r.id = ?2 AND r.job_id = ?1");
    s.bind(1, job).bind(2, run);
    std::optional<stream_record> out;
    if (s.step()) {
      stream_record rec;
      rec.run = read_run(s);
      if (rec.run.ok)
        if (auto st = stream_of(rec.run, s.blob(kRunColumnCount), s.text(kRunColumnCount + 1))) rec.stream = std::move(*st);
      out = std::move(rec);
    }
    s.reset();
    return out;
  }

  std::vector<audit::observed_run> observations(std::int64_t job) override {
    std::vector<audit::observed_run> out;
    for (auto& [r, stream] : decoded_runs(job, "")) {
      audit::observed_run o{r.group, r.request, std::move(stream), r.error, r.company};
      if (r.ok && !o.stream) o.error = "the stored encoding does not decode";
      out.push_back(std::move(o));
    }
    return out;
  }

  std::map<std::size_t, audit::load_measurement> load_levels(std::int64_t job) override {
    auto& s = db_.prepare("SELECT group_index, load_level FROM groups WHERE job_id = ? AND load_level <> '' ORDER BY group_index");
    s.bind(1, job);
    std::map<std::size_t, audit::load_measurement> out;
    while (s.step())
      if (auto m = decode_load_measurement(s.text(1))) out[static_cast<std::size_t>(s.integer(0))] = std::move(*m);
    s.reset();
    return out;
  }

  std::vector<burst_record> bursts(std::int64_t job) override {
    auto& s = db_.prepare(
        "SELECT b.group_index, g.backend, g.condition, g.replicate, b.width, b.server_slots, b.launch_spread_ns, "
        "b.wall_ns, b.overlap, b.busy_slots_per_decode, b.timed_concurrency, b.warnings, b.batched, b.expected, "
        "b.needed, b.measured, b.measured_by, b.needed_overlap, b.verdict_reason, b.foreign_load "
        "FROM bursts b JOIN groups g ON g.job_id = b.job_id AND g.group_index = b.group_index "
        "WHERE b.job_id = ? ORDER BY b.group_index");
    s.bind(1, job);
    std::vector<burst_record> out;
    while (s.step()) {
      burst_record b;
      b.group = static_cast<std::size_t>(s.integer(0));
      b.backend = s.text(1);
      b.condition = s.text(2);
      b.replicate = static_cast<int>(s.integer(3));
      auto& m = b.measurement;
      m.width = static_cast<int>(s.integer(4));
      m.server_slots = s.integer(5);
      m.launch_spread_ns = s.integer(6);
      m.wall_ns = s.integer(7);
      m.overlap = s.real(8);
      if (!s.is_null(9)) m.busy_slots_per_decode = s.real(9);
      if (!s.is_null(10)) m.timed_concurrency = s.real(10);
      const std::string warnings = s.text(11);
      for (std::size_t i = 0; i < warnings.size();) {
        auto nl = warnings.find('\n', i);
        if (nl == std::string::npos) nl = warnings.size();
        if (nl > i) m.warnings.push_back(warnings.substr(i, nl - i));
        i = nl + 1;
      }
      if (!s.is_null(12)) {
        audit::burst_verdict v;
        v.batched = s.integer(12) != 0;
        v.expected = s.real(13);
        v.needed = s.real(14);
        if (!s.is_null(15)) v.measured = s.real(15);
        v.measured_by = audit::parse_concurrency_measure(s.text(16)).value_or(audit::concurrency_measure::none);
        v.needed_overlap = s.real(17);
        v.reason = s.text(18);
        v.foreign_load = s.text(19);
        b.verdict = v;
      }
      out.push_back(std::move(b));
    }
    s.reset();
    return out;
  }

  std::vector<fingerprint_record> fingerprint_records(std::int64_t job) override {
    auto& s = db_.prepare(
        "SELECT backend, phase, api, build_info, model, model_ftype, total_slots, n_ctx, chat_template_hash, "
        "generation_settings_hash, prompt_token_hashes, model_meta, model_sha256, canary_logit_digest, "
        "canary_token_digest, machine, observed, taken_at FROM fingerprints WHERE job_id = ? ORDER BY backend, phase DESC");
    s.bind(1, job);
    std::vector<fingerprint_record> out;
    while (s.step())
      out.push_back({s.text(0), audit::parse_fingerprint_phase(s.text(1)).value_or(audit::fingerprint_phase::before),
                     read_fingerprint(s, 2), s.text(17)});
    s.reset();
    return out;
  }

  std::map<std::string, audit::backend_fingerprints> fingerprints(std::int64_t job) override {
    std::map<std::string, audit::backend_fingerprints> out;
    for (auto& r : fingerprint_records(job))
      (r.phase == audit::fingerprint_phase::before ? out[r.backend].before : out[r.backend].after) = std::move(r.fingerprint);
    return out;
  }

  std::vector<audit::baseline_stream> baselines(std::int64_t job) override {
    std::vector<audit::baseline_stream> out;
    for (auto& [r, stream] : decoded_runs(job, audit::kBaselineCondition))
      if (stream) out.push_back({{r.backend, r.prompt, r.temperature, r.seed}, std::move(*stream), r.company});
    return out;
  }

  std::vector<selftest_record> read_selftests(const std::string& where, const std::string& a, const std::string* b, int limit) {
    auto& s = db_.prepare(
        "SELECT id, backend, url, api, taken_at, caught, faults, equivalents_flagged, equivalents, summary, cases "
        "FROM selftests " + where + " ORDER BY id DESC LIMIT " + std::to_string(std::max(1, limit)));
    s.bind(1, a);
    if (b) s.bind(2, *b);
    std::vector<selftest_record> out;
    while (s.step()) {
      selftest_record r;
      r.id = s.integer(0);
      r.backend = s.text(1);
      r.url = s.text(2);
      r.api = s.text(3);
      r.taken_at = s.text(4);
      r.power.caught = static_cast<int>(s.integer(5));
      r.power.faults = static_cast<int>(s.integer(6));
      r.power.equivalents_flagged = static_cast<int>(s.integer(7));
      r.power.equivalents = static_cast<int>(s.integer(8));
      auto cases = nlohmann::json::parse(s.text(10), nullptr, false);
      std::vector<std::string> paths;
      if (cases.is_array())
        for (const auto& j : cases) {
          audit::fault_case c;
          c.path = j.value("path", "");
          c.fault = audit::parse_fault_kind(j.value("fault", "")).value_or(audit::fault_kind::logprob_ulp);
          c.position = j.value("position", -1);
          c.applicable = j.value("applicable", true);
          c.caught = j.value("caught", false);
          c.detail = j.value("detail", "");
          c.error = j.value("error", "");
          r.power.cases.push_back(std::move(c));
          if (std::find(paths.begin(), paths.end(), j.value("path", "")) == paths.end()) paths.push_back(j.value("path", ""));
        }
      for (std::size_t i = 0; i < paths.size(); ++i) r.paths += (i ? ", " : "") + paths[i];
      out.push_back(std::move(r));
    }
    s.reset();
    return out;
  }

  // The job's runs (of one condition, or all for ""), in plan order, each with its stream
  // decoded (nullopt for failed runs and bytes that do not decode).
  std::vector<std::pair<run_record, std::optional<audit::logit_stream>>> decoded_runs(std::int64_t job,
                                                                                      const std::string& condition) {
    auto& s = db_.prepare(std::string("SELECT ") + kRunColumns + ", s.encoding, s.content" + kRunJoins +
                          "WHERE r.job_id = ?1 AND (?2 = '' OR r.condition = ?2) ORDER BY r.group_index, r.request_index");
    s.bind(1, job).bind(2, condition);
    std::vector<std::pair<run_record, std::optional<audit::logit_stream>>> out;
    while (s.step()) {
      auto r = read_run(s);
      auto stream = r.ok ? stream_of(r, s.blob(kRunColumnCount), s.text(kRunColumnCount + 1)) : std::nullopt;
      out.emplace_back(std::move(r), std::move(stream));
    }
    s.reset();
    return out;
  }

  std::int64_t record_selftest(const selftest_record& r) override {
    transaction t(db_);
    auto cases = nlohmann::json::array();
    for (const auto& c : r.power.cases) {
      nlohmann::json j = {{"path", c.path},
                          {"fault", std::string(audit::to_string(c.fault))},
                          {"position", c.position},
                          {"expected_level", std::string(audit::to_string(c.expected.level))},
                          {"expected_position", c.expected.position},
                          {"applicable", c.applicable},
                          {"caught", c.caught},
                          {"detail", c.detail},
                          {"error", c.error}};
      if (c.expected.max_ulp) j["expected_max_ulp"] = *c.expected.max_ulp;
      if (c.got)
        j["reported"] = {{"logit_identical", c.got->logit_identical},
                         {"token_identical", c.got->token_identical},
                         {"first_logit_difference", c.got->first_logit_difference},
                         {"first_token_difference", c.got->first_token_difference},
                         {"first_text_difference", c.got->first_text_difference},
                         {"max_ulp", c.got->max_ulp},
                         {"max_abs_delta", c.got->max_abs_delta}};
      cases.push_back(std::move(j));
    }
    auto& s = db_.prepare(
        "INSERT INTO selftests (backend, url, api, taken_at, caught, faults, equivalents_flagged, equivalents, passed, "
        "summary, cases) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
    s.bind(1, r.backend).bind(2, r.url).bind(3, r.api).bind(4, r.taken_at.empty() ? now_utc() : r.taken_at);
    s.bind(5, r.power.caught).bind(6, r.power.faults).bind(7, r.power.equivalents_flagged).bind(8, r.power.equivalents);
    s.bind(9, r.power.passed()).bind(10, r.paths);
    s.bind(11, cases.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    std::int64_t id = 0;
    if (s.step()) id = s.integer(0);
    s.reset();
    t.commit();
    return id;
  }

  std::optional<selftest_record> latest_selftest(const std::string& backend, const std::string& url) override {
    auto rows = read_selftests("WHERE backend = ?1 AND url = ?2", backend, &url, 1);
    if (rows.empty()) return std::nullopt;
    return rows.front();
  }

  std::vector<selftest_record> selftests(const std::string& backend, int limit) override {
    return read_selftests("WHERE ?1 = '' OR backend = ?1", backend, nullptr, limit);
  }

  std::vector<stored_stream> stored_streams(std::int64_t job) override {
    auto& s = db_.prepare(
        "SELECT r.id, s.token_digest, s.logit_digest, s.encoding, s.pruned_at FROM runs r JOIN streams s ON s.run_id = r.id "
        "WHERE r.job_id = ? ORDER BY r.group_index, r.request_index");
    s.bind(1, job);
    std::vector<stored_stream> out;
    while (s.step()) out.push_back({s.integer(0), s.blob(1), s.blob(2), s.blob(3), s.text(4)});
    s.reset();
    return out;
  }

 private:
  sql_connection& db_;
  write_fence fence_;
};

// ---- schedules ---------------------------------------------------------------------------

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

class sql_repros final : public repro_repository {
 public:
  explicit sql_repros(sql_connection& db) : db_(db) {}

  std::int64_t create(const repro_record& r) override {
    auto& s = db_.prepare(
        "INSERT INTO repros (job_id, run_id, backend, member, status, trials, max_bursts, created_at, original) "
        "VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?) RETURNING id");
    s.bind(1, r.audit).bind(2, r.run).bind(3, r.backend).bind(4, r.member).bind(5, r.trials).bind(6, r.max_bursts);
    s.bind(7, r.created_at).bind(8, r.original);
    return returned_id(s);
  }

  std::optional<repro_record> get(std::int64_t id) override {
    auto& s = db_.prepare(std::string(kColumns) + " WHERE id = ?");
    s.bind(1, id);
    return only(read(s));
  }

  std::vector<repro_record> with_status(audit::job_status status, const std::string& member) override {
    auto& s = db_.prepare(std::string(kColumns) + " WHERE status = ? AND member = ? ORDER BY id");
    s.bind(1, audit::to_string(status)).bind(2, member);
    return read(s);
  }

  bool move(std::int64_t id, audit::job_status from, audit::job_status to, const std::string& at) override {
    auto& s = db_.prepare(
        "UPDATE repros SET status = ?3, started_at = CASE WHEN ?3 = 'running' THEN ?4 ELSE started_at END, "
        "finished_at = CASE WHEN ?3 IN ('queued', 'running') THEN '' ELSE ?4 END, "
        "bursts = CASE WHEN ?3 = 'queued' THEN 0 ELSE bursts END WHERE id = ?1 AND status = ?2 RETURNING id");
    s.bind(1, id).bind(2, audit::to_string(from)).bind(3, audit::to_string(to)).bind(4, at);
    const bool moved = s.step();
    s.reset();
    return moved;
  }

  std::vector<repro_record> unfinished() override {
    return read(db_.prepare(std::string(kColumns) + " WHERE status IN ('queued', 'running') ORDER BY id"));
  }

  bool adopt(std::int64_t id, const std::string& from, const std::string& to) override {
    auto& s = db_.prepare(
        "UPDATE repros SET member = ?3 WHERE id = ?1 AND member = ?2 AND status IN ('queued', 'running') RETURNING id");
    s.bind(1, id).bind(2, from).bind(3, to);
    const bool adopted = s.step();
    s.reset();
    return adopted;
  }

  void finish(const repro_record& r) override {
    auto& s = db_.prepare(
        "UPDATE repros SET status = ?, bursts = ?, outcome = ?, message = ?, original = ?, minimal = ?, files = ?, "
        "finished_at = ? WHERE id = ?");
    s.bind(1, audit::to_string(r.status)).bind(2, r.bursts).bind(3, r.outcome).bind(4, r.message).bind(5, r.original);
    s.bind(6, r.minimal).bind(7, encode_repro_files(r.files)).bind(8, r.finished_at).bind(9, r.id);
    s.run();
  }

 private:
  static constexpr const char* kColumns =
      "SELECT id, job_id, run_id, backend, member, status, trials, max_bursts, bursts, created_at, started_at, finished_at, "
      "outcome, message, original, minimal, files FROM repros";

  static std::vector<repro_record> read(sql_statement& s) {
    std::vector<repro_record> out;
    while (s.step()) {
      repro_record r;
      r.id = s.integer(0);
      r.audit = s.integer(1);
      r.run = s.integer(2);
      r.backend = s.text(3);
      r.member = s.text(4);
      r.status = status_of(s.text(5));
      r.trials = static_cast<int>(s.integer(6));
      r.max_bursts = static_cast<int>(s.integer(7));
      r.bursts = static_cast<int>(s.integer(8));
      r.created_at = s.text(9);
      r.started_at = s.text(10);
      r.finished_at = s.text(11);
      r.outcome = s.text(12);
      r.message = s.text(13);
      r.original = s.text(14);
      r.minimal = s.text(15);
      r.files = decode_repro_files(s.text(16));
      out.push_back(std::move(r));
    }
    s.reset();
    return out;
  }
  sql_connection& db_;
};

}  // namespace

sql_repositories make_sql_repositories(sql_connection& c, write_fence fence) {
  if (!fence) fence = [](std::int64_t) {};
  return {std::make_unique<sql_jobs>(c, fence), std::make_unique<sql_evidence>(c, fence), std::make_unique<sql_schedules>(c),
          std::make_unique<sql_alerts>(c), std::make_unique<sql_repros>(c)};
}

namespace {

std::string utc_text(std::chrono::system_clock::time_point now) {
  using namespace std::chrono;
  const auto t = system_clock::to_time_t(now);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[96];
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ms));
  return b;
}

}  // namespace

std::string now_utc() { return utc_text(std::chrono::system_clock::now()); }

std::string utc_days_ago(int days) { return utc_text(std::chrono::system_clock::now() - std::chrono::hours(24) * days); }

}  // namespace logitaudit::storage
