// The jobs repository over SQL (repositories.hpp): a job's row, its status, its end with its findings,
// its predictions, and the fleet's holds.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "documents.hpp"
#include "sql_rows.hpp"

namespace logitaudit::storage {
namespace {

using json = nlohmann::json;
using namespace sql_rows;

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
        "INSERT INTO jobs (spec_json, spec_hash, prediction_hash, predictions_registered_at, total_requests, "
        "total_groups, tags_json, schedule_id, created_at, starts_servers, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "RETURNING id");
    s.bind(1, j.spec_json).bind(2, j.spec_hash).bind(3, j.prediction_hash).bind(4, j.predictions_registered_at);
    s.bind(5, j.total_requests).bind(6, j.total_groups).bind(7, tags_text(j.tags)).bind(8, j.schedule_id);
    s.bind(9, j.created_at).bind(10, j.starts_servers).bind(11, j.held ? "running" : "queued");
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

  void add_done_requests(std::int64_t job, std::int64_t n) override {
    auto& s = db_.prepare("UPDATE jobs SET done_requests = done_requests + ?2 WHERE id = ?1");
    s.bind(1, job).bind(2, n);
    s.run();
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

}  // namespace

std::unique_ptr<job_repository> sql_rows::make_jobs(sql_connection& c, write_fence fence) {
  return std::make_unique<sql_jobs>(c, std::move(fence));
}

}  // namespace logitaudit::storage
