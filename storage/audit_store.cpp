// Schema, migrations and the queries of the audit store.
#include "audit_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>

#include "audit/stream_encoding.hpp"

namespace logitaudit::storage {
namespace {

// Migration N brings the schema from version N-1 to N. Never edit one that has shipped.
const char* const kMigrations[] = {
    // 1: the first schema.
    R"sql(
CREATE TABLE schema_migrations (
  version INTEGER PRIMARY KEY,
  applied_at TEXT NOT NULL
);

CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  status TEXT NOT NULL CHECK (status IN ('queued','running','done','failed','cancelled','interrupted')),
  spec_json TEXT NOT NULL,
  spec_hash TEXT NOT NULL,
  prediction_hash TEXT NOT NULL,
  predictions_registered_at TEXT NOT NULL,
  total_requests INTEGER NOT NULL,
  total_groups INTEGER NOT NULL,
  done_requests INTEGER NOT NULL DEFAULT 0,
  failed_requests INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  tags_json TEXT NOT NULL DEFAULT '[]',
  schedule_id INTEGER REFERENCES schedules(id) ON DELETE SET NULL,
  created_at TEXT NOT NULL,
  started_at TEXT NOT NULL DEFAULT '',
  finished_at TEXT NOT NULL DEFAULT '',
  findings_json TEXT NOT NULL DEFAULT ''
);
CREATE INDEX jobs_by_status ON jobs(status, id);

CREATE TABLE fingerprints (
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  backend TEXT NOT NULL,
  phase TEXT NOT NULL CHECK (phase IN ('before','after')),
  api TEXT NOT NULL, build_info TEXT NOT NULL, model TEXT NOT NULL, model_ftype TEXT NOT NULL,
  total_slots INTEGER NOT NULL, n_ctx INTEGER NOT NULL,
  chat_template_hash TEXT NOT NULL, generation_settings_hash TEXT NOT NULL,
  prompt_token_hashes TEXT NOT NULL,
  taken_at TEXT NOT NULL,
  PRIMARY KEY (job_id, backend, phase)
);

CREATE TABLE groups (
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  group_index INTEGER NOT NULL,
  backend TEXT NOT NULL,
  condition TEXT NOT NULL,
  replicate INTEGER NOT NULL,
  mode TEXT NOT NULL CHECK (mode IN ('serial','burst')),
  attempts INTEGER NOT NULL,
  stored_at TEXT NOT NULL,
  PRIMARY KEY (job_id, group_index)
);

CREATE TABLE bursts (
  job_id INTEGER NOT NULL,
  group_index INTEGER NOT NULL,
  launch_spread_ns INTEGER NOT NULL,
  wall_ns INTEGER NOT NULL,
  overlap REAL NOT NULL,
  busy_slots_per_decode REAL,
  warnings TEXT NOT NULL,
  PRIMARY KEY (job_id, group_index),
  FOREIGN KEY (job_id, group_index) REFERENCES groups(job_id, group_index) ON DELETE CASCADE
);

CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL,
  group_index INTEGER NOT NULL,
  request_index INTEGER NOT NULL,
  backend TEXT NOT NULL,
  condition TEXT NOT NULL,
  replicate INTEGER NOT NULL,
  prompt TEXT NOT NULL,
  temperature REAL NOT NULL,
  seed INTEGER,
  cache_prompt INTEGER NOT NULL,
  id_slot INTEGER,
  compared INTEGER NOT NULL,
  baseline_group INTEGER,
  status TEXT NOT NULL CHECK (status IN ('ok','failed')),
  error TEXT NOT NULL DEFAULT '',
  write_ns INTEGER NOT NULL DEFAULT 0,
  first_byte_ns INTEGER NOT NULL DEFAULT 0,
  last_byte_ns INTEGER NOT NULL DEFAULT 0,
  UNIQUE (job_id, group_index, request_index),
  FOREIGN KEY (job_id, group_index) REFERENCES groups(job_id, group_index) ON DELETE CASCADE
);
CREATE INDEX runs_by_condition ON runs(job_id, condition, backend);

CREATE TABLE streams (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  token_digest BLOB NOT NULL CHECK (length(token_digest) = 16),
  logit_digest BLOB NOT NULL CHECK (length(logit_digest) = 16),
  token_count INTEGER NOT NULL,
  encoding BLOB NOT NULL,
  content TEXT NOT NULL,
  stop_reason TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  slot INTEGER NOT NULL,
  prompt_ms REAL NOT NULL, predicted_ms REAL NOT NULL, cache_n INTEGER NOT NULL
);
CREATE INDEX streams_by_logit_digest ON streams(logit_digest);

CREATE TABLE verdicts (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  logit_identical INTEGER NOT NULL,
  token_identical INTEGER NOT NULL,
  first_logit_difference INTEGER NOT NULL,
  first_token_difference INTEGER NOT NULL,
  max_abs_delta REAL NOT NULL,
  mean_abs_delta REAL NOT NULL,
  max_ulp INTEGER NOT NULL,
  margin_at_flip REAL
);

CREATE TABLE predictions (
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  prediction_id TEXT NOT NULL,
  held INTEGER NOT NULL,
  k INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (job_id, prediction_id)
);

CREATE TABLE schedules (
  id INTEGER PRIMARY KEY,
  cron TEXT NOT NULL,
  timezone TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  missed TEXT NOT NULL CHECK (missed IN ('run_once','skip')),
  created_at TEXT NOT NULL,
  next_fire_unix INTEGER,
  last_fire_unix INTEGER
);
CREATE INDEX jobs_by_schedule ON jobs(schedule_id, id);
)sql",
};

constexpr int kMigrationCount = sizeof(kMigrations) / sizeof(kMigrations[0]);
static_assert(kMigrationCount == kSchemaVersion);

std::string settings_text(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += k + "\t" + v + "\n";
  return s;
}

}  // namespace

std::string now_utc() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto t = system_clock::to_time_t(now);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[96];
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ms));
  return b;
}

audit_store::audit_store(const std::string& path) : db_(path) { migrate(); }

void audit_store::limit_size(std::int64_t max_bytes) {
  auto& s = db_.prepare("PRAGMA page_size");
  s.step();
  const std::int64_t page = s.integer(0);
  s.reset();
  // SQLite never shrinks the limit below the pages already in use.
  db_.exec("PRAGMA max_page_count = " + std::to_string(std::max<std::int64_t>(1, max_bytes / page)));
}

int audit_store::schema_version() {
  auto& s = db_.prepare("PRAGMA user_version");
  s.step();
  const int v = static_cast<int>(s.integer(0));
  s.reset();
  return v;
}

void audit_store::migrate() {
  const int version = schema_version();
  if (version > kSchemaVersion)
    throw storage_error(SQLITE_ERROR, "database " + db_.path() + " has schema version " + std::to_string(version) +
                                          ", newer than this logitaudit's " + std::to_string(kSchemaVersion) +
                                          ": upgrade logitaudit, or open a copy made for this version");
  for (int v = version; v < kSchemaVersion; ++v) {
    transaction t(db_);
    db_.exec(kMigrations[v]);
    auto& record = db_.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)");
    record.bind(1, v + 1).bind(2, now_utc());
    record.run();
    db_.exec("PRAGMA user_version = " + std::to_string(v + 1));
    t.commit();
  }
}

std::int64_t audit_store::create_job(const new_job& j) {
  auto& s = db_.prepare(
      "INSERT INTO jobs (status, spec_json, spec_hash, prediction_hash, predictions_registered_at, total_requests, "
      "total_groups, tags_json, schedule_id, created_at) VALUES ('queued', ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, j.spec_json).bind(2, j.spec_hash).bind(3, j.prediction_hash).bind(4, j.predictions_registered_at);
  s.bind(5, j.total_requests).bind(6, j.total_groups).bind(7, j.tags_json).bind(8, j.schedule_id).bind(9, j.created_at);
  s.run();
  return db_.last_insert_id();
}

void audit_store::set_status(std::int64_t job, const std::string& status, const std::string& at,
                             const std::string& error) {
  auto& s = db_.prepare(
      "UPDATE jobs SET status = ?2, error = ?3, "
      "started_at = CASE WHEN ?2 = 'running' AND started_at = '' THEN ?4 ELSE started_at END, "
      "finished_at = CASE WHEN ?2 IN ('done','failed','cancelled','interrupted') THEN ?4 ELSE finished_at END "
      "WHERE id = ?1");
  s.bind(1, job).bind(2, status).bind(3, error).bind(4, at);
  s.run();
}

void audit_store::record_groups(std::int64_t job, const std::vector<group_write>& groups) {
  transaction t(db_);
  auto& g_ins = db_.prepare(
      "INSERT INTO groups (job_id, group_index, backend, condition, replicate, mode, attempts, stored_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  auto& b_ins = db_.prepare(
      "INSERT INTO bursts (job_id, group_index, launch_spread_ns, wall_ns, overlap, busy_slots_per_decode, warnings) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  auto& r_ins = db_.prepare(
      "INSERT INTO runs (job_id, group_index, request_index, backend, condition, replicate, prompt, temperature, seed, "
      "cache_prompt, id_slot, compared, baseline_group, status, error, write_ns, first_byte_ns, last_byte_ns) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  auto& s_ins = db_.prepare(
      "INSERT INTO streams (run_id, token_digest, logit_digest, token_count, encoding, content, stop_reason, "
      "prompt_tokens, cached_tokens, slot, prompt_ms, predicted_ms, cache_n) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  auto& progress = db_.prepare("UPDATE jobs SET done_requests = done_requests + ?2, failed_requests = failed_requests + ?3 WHERE id = ?1");
  const std::string at = now_utc();
  for (const auto& gw : groups) {
    const auto& g = *gw.group;
    g_ins.bind(1, job).bind(2, g.index).bind(3, g.backend).bind(4, g.condition).bind(5, g.replicate);
    g_ins.bind(6, g.mode == audit::group_mode::burst ? "burst" : "serial").bind(7, gw.attempts).bind(8, at);
    g_ins.run();
    if (gw.burst) {
      b_ins.bind(1, job).bind(2, g.index).bind(3, gw.burst->launch_spread_ns).bind(4, gw.burst->wall_ns);
      std::string warnings;
      for (const auto& w : gw.burst->warnings) warnings += w + "\n";
      b_ins.bind(5, gw.burst->overlap).bind(6, gw.burst->busy_slots_per_decode).bind(7, warnings);
      b_ins.run();
    }
    int failed = 0;
    for (const auto& r : gw.runs) {
      const auto& req = g.requests.at(r.request);
      std::optional<std::int64_t> baseline_group;
      if (req.compared && req.baseline >= 0)
        baseline_group = static_cast<std::int64_t>(gw.plan->baselines.at(static_cast<std::size_t>(req.baseline)).group);
      r_ins.bind(1, job).bind(2, g.index).bind(3, r.request).bind(4, g.backend).bind(5, g.condition);
      r_ins.bind(6, g.replicate).bind(7, req.prompt).bind(8, req.params.temperature);
      r_ins.bind(9, req.params.seed ? std::optional<std::int64_t>(static_cast<std::int64_t>(*req.params.seed)) : std::nullopt);
      r_ins.bind(10, req.cache_prompt).bind(11, req.id_slot ? std::optional<std::int64_t>(*req.id_slot) : std::nullopt);
      r_ins.bind(12, req.compared).bind(13, baseline_group).bind(14, r.stream ? "ok" : "failed").bind(15, r.error);
      r_ins.bind(16, r.stream ? r.stream->client.write_ns : 0).bind(17, r.stream ? r.stream->client.first_byte_ns : 0);
      r_ins.bind(18, r.stream ? r.stream->client.last_byte_ns : 0);
      r_ins.run();
      failed += !r.stream;
      if (!r.stream) continue;
      const auto run_id = db_.last_insert_id();
      const auto& st = *r.stream;
      const auto enc = audit::encode_canonical(st);
      const auto d = audit::digest(st);
      s_ins.bind(1, run_id).bind_blob(2, d.token.bytes).bind_blob(3, d.logit.bytes).bind(4, st.tokens.size());
      s_ins.bind_blob(5, enc).bind(6, st.content).bind(7, st.stop_reason).bind(8, st.prompt_tokens);
      s_ins.bind(9, st.cached_tokens).bind(10, st.slot).bind(11, st.server.prompt_ms).bind(12, st.server.predicted_ms);
      s_ins.bind(13, st.server.cache_n);
      s_ins.run();
    }
    progress.bind(1, job).bind(2, gw.runs.size()).bind(3, failed);
    progress.run();
  }
  t.commit();
}

void audit_store::record_fingerprint(std::int64_t job, const std::string& backend, const std::string& phase,
                                     const audit::backend_fingerprint& f, const std::string& at) {
  auto& s = db_.prepare(
      "INSERT OR REPLACE INTO fingerprints (job_id, backend, phase, api, build_info, model, model_ftype, total_slots, "
      "n_ctx, chat_template_hash, generation_settings_hash, prompt_token_hashes, taken_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, job).bind(2, backend).bind(3, phase).bind(4, f.api).bind(5, f.build_info).bind(6, f.model);
  s.bind(7, f.model_ftype).bind(8, f.total_slots).bind(9, f.n_ctx).bind(10, f.chat_template_hash);
  s.bind(11, f.generation_settings_hash).bind(12, settings_text(f.prompt_token_hashes)).bind(13, at);
  s.run();
}

void audit_store::finish_job(std::int64_t job, const std::string& status, const std::string& error,
                             const audit::findings& f, const std::string& findings_json, const std::string& at) {
  transaction t(db_);
  auto& run_id = db_.prepare("SELECT id FROM runs WHERE job_id = ? AND group_index = ? AND request_index = ?");
  auto& v_ins = db_.prepare(
      "INSERT OR REPLACE INTO verdicts (run_id, logit_identical, token_identical, first_logit_difference, "
      "first_token_difference, max_abs_delta, mean_abs_delta, max_ulp, margin_at_flip) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const auto& v : f.verdicts) {
    if (v.failed || !v.result) continue;
    run_id.bind(1, job).bind(2, v.group).bind(3, v.request);
    if (!run_id.step()) {
      run_id.reset();
      continue;
    }
    const auto id = run_id.integer(0);
    run_id.reset();
    const auto& c = *v.result;
    v_ins.bind(1, id).bind(2, c.logit_identical).bind(3, c.token_identical).bind(4, c.first_logit_difference);
    v_ins.bind(5, c.first_token_difference).bind(6, c.max_abs_delta).bind(7, c.mean_abs_delta);
    v_ins.bind(8, static_cast<std::int64_t>(std::min<std::uint64_t>(c.max_ulp, INT64_MAX))).bind(9, c.baseline_margin_at_flip);
    v_ins.run();
  }
  auto& p_ins = db_.prepare("INSERT OR REPLACE INTO predictions (job_id, prediction_id, held, k, n) VALUES (?, ?, ?, ?, ?)");
  for (const auto& p : f.predictions) {
    p_ins.bind(1, job).bind(2, p.claim.id).bind(3, p.held).bind(4, p.k).bind(5, p.n);
    p_ins.run();
  }
  auto& j = db_.prepare("UPDATE jobs SET findings_json = ? WHERE id = ?");
  j.bind(1, findings_json).bind(2, job);
  j.run();
  set_status(job, status, at, error);
  t.commit();
}

namespace {

job_record read_job(statement& s) {
  job_record j;
  j.id = s.integer(0);
  j.status = s.text(1);
  j.spec_json = s.text(2);
  j.spec_hash = s.text(3);
  j.prediction_hash = s.text(4);
  j.predictions_registered_at = s.text(5);
  j.total_requests = s.integer(6);
  j.total_groups = s.integer(7);
  j.done_requests = s.integer(8);
  j.failed_requests = s.integer(9);
  j.error = s.text(10);
  j.tags_json = s.text(11);
  if (!s.is_null(12)) j.schedule_id = s.integer(12);
  j.created_at = s.text(13);
  j.started_at = s.text(14);
  j.finished_at = s.text(15);
  j.findings_json = s.text(16);
  return j;
}

constexpr const char* kJobColumns =
    "id, status, spec_json, spec_hash, prediction_hash, predictions_registered_at, total_requests, total_groups, "
    "done_requests, failed_requests, error, tags_json, schedule_id, created_at, started_at, finished_at, findings_json";

}  // namespace

std::optional<job_record> audit_store::job(std::int64_t id) {
  auto& s = db_.prepare(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?");
  s.bind(1, id);
  std::optional<job_record> j;
  if (s.step()) j = read_job(s);
  s.reset();
  return j;
}

std::vector<job_record> audit_store::jobs_with_status(const std::string& status) {
  auto& s = db_.prepare(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE status = ? ORDER BY id");
  s.bind(1, status);
  std::vector<job_record> out;
  while (s.step()) out.push_back(read_job(s));
  s.reset();
  return out;
}

std::vector<std::int64_t> audit_store::job_ids() {
  auto& s = db_.prepare("SELECT id FROM jobs ORDER BY id");
  std::vector<std::int64_t> out;
  while (s.step()) out.push_back(s.integer(0));
  s.reset();
  return out;
}

std::set<std::size_t> audit_store::stored_groups(std::int64_t job) {
  auto& s = db_.prepare("SELECT group_index FROM groups WHERE job_id = ?");
  s.bind(1, job);
  std::set<std::size_t> out;
  while (s.step()) out.insert(static_cast<std::size_t>(s.integer(0)));
  s.reset();
  return out;
}

std::vector<stored_run> audit_store::runs(std::int64_t job) {
  auto& s = db_.prepare(
      "SELECT r.id, r.group_index, r.request_index, r.backend, r.condition, r.replicate, r.prompt, r.temperature, "
      "r.seed, r.cache_prompt, r.compared, r.baseline_group, r.status, r.error, r.write_ns, r.first_byte_ns, "
      "r.last_byte_ns, s.token_digest, s.logit_digest, s.encoding, s.token_count, s.content "
      "FROM runs r LEFT JOIN streams s ON s.run_id = r.id WHERE r.job_id = ? ORDER BY r.group_index, r.request_index");
  s.bind(1, job);
  std::vector<stored_run> out;
  while (s.step()) {
    stored_run r;
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
    r.compared = s.integer(10) != 0;
    if (!s.is_null(11)) r.baseline_group = s.integer(11);
    r.ok = s.text(12) == "ok";
    r.error = s.text(13);
    r.write_ns = s.integer(14);
    r.first_byte_ns = s.integer(15);
    r.last_byte_ns = s.integer(16);
    if (!s.is_null(17)) {
      r.token_digest = s.blob(17);
      r.logit_digest = s.blob(18);
      r.encoding = s.blob(19);
      r.token_count = s.integer(20);
      r.content = s.text(21);
    }
    out.push_back(std::move(r));
  }
  s.reset();
  return out;
}

std::vector<stored_verdict> audit_store::verdicts(std::int64_t job) {
  auto& s = db_.prepare(
      "SELECT v.run_id, v.logit_identical, v.token_identical FROM verdicts v JOIN runs r ON r.id = v.run_id "
      "WHERE r.job_id = ? ORDER BY v.run_id");
  s.bind(1, job);
  std::vector<stored_verdict> out;
  while (s.step()) out.push_back({s.integer(0), s.integer(1) != 0, s.integer(2) != 0});
  s.reset();
  return out;
}

std::vector<stored_prediction> audit_store::predictions(std::int64_t job) {
  auto& s = db_.prepare("SELECT prediction_id, held, k, n FROM predictions WHERE job_id = ? ORDER BY prediction_id");
  s.bind(1, job);
  std::vector<stored_prediction> out;
  while (s.step())
    out.push_back({s.text(0), s.integer(1) != 0, static_cast<int>(s.integer(2)), static_cast<int>(s.integer(3))});
  s.reset();
  return out;
}

namespace {

schedule_record read_schedule(statement& s) {
  schedule_record r;
  r.id = s.integer(0);
  r.cron = s.text(1);
  r.timezone = s.text(2);
  r.spec_json = s.text(3);
  r.enabled = s.integer(4) != 0;
  r.missed = s.text(5);
  r.created_at = s.text(6);
  if (!s.is_null(7)) r.next_fire_unix = s.integer(7);
  if (!s.is_null(8)) r.last_fire_unix = s.integer(8);
  return r;
}

constexpr const char* kScheduleColumns =
    "id, cron, timezone, spec_json, enabled, missed, created_at, next_fire_unix, last_fire_unix";

}  // namespace

std::int64_t audit_store::save_schedule(const schedule_record& r) {
  if (r.id == 0) {
    auto& s = db_.prepare(
        "INSERT INTO schedules (cron, timezone, spec_json, enabled, missed, created_at, next_fire_unix, last_fire_unix) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    s.bind(1, r.cron).bind(2, r.timezone).bind(3, r.spec_json).bind(4, r.enabled).bind(5, r.missed).bind(6, r.created_at);
    s.bind(7, r.next_fire_unix).bind(8, r.last_fire_unix);
    s.run();
    return db_.last_insert_id();
  }
  auto& s = db_.prepare(
      "UPDATE schedules SET cron = ?, timezone = ?, spec_json = ?, enabled = ?, missed = ?, next_fire_unix = ?, "
      "last_fire_unix = ? WHERE id = ?");
  s.bind(1, r.cron).bind(2, r.timezone).bind(3, r.spec_json).bind(4, r.enabled).bind(5, r.missed);
  s.bind(6, r.next_fire_unix).bind(7, r.last_fire_unix).bind(8, r.id);
  s.run();
  return r.id;
}

std::optional<schedule_record> audit_store::schedule(std::int64_t id) {
  auto& s = db_.prepare(std::string("SELECT ") + kScheduleColumns + " FROM schedules WHERE id = ?");
  s.bind(1, id);
  std::optional<schedule_record> r;
  if (s.step()) r = read_schedule(s);
  s.reset();
  return r;
}

std::vector<schedule_record> audit_store::schedules() {
  auto& s = db_.prepare(std::string("SELECT ") + kScheduleColumns + " FROM schedules ORDER BY id");
  std::vector<schedule_record> out;
  while (s.step()) out.push_back(read_schedule(s));
  s.reset();
  return out;
}

bool audit_store::delete_schedule(std::int64_t id) {
  auto& s = db_.prepare("DELETE FROM schedules WHERE id = ?");
  s.bind(1, id);
  s.run();
  return db_.changes() > 0;
}

std::vector<job_record> audit_store::schedule_jobs(std::int64_t schedule, int limit) {
  auto& s = db_.prepare(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE schedule_id = ? ORDER BY id DESC LIMIT ?");
  s.bind(1, schedule).bind(2, limit);
  std::vector<job_record> out;
  while (s.step()) out.push_back(read_job(s));
  s.reset();
  return out;
}

std::map<std::string, std::int64_t> audit_store::job_counts() {
  auto& s = db_.prepare("SELECT status, count(*) FROM jobs GROUP BY status");
  std::map<std::string, std::int64_t> out;
  while (s.step()) out[s.text(0)] = s.integer(1);
  s.reset();
  return out;
}

std::vector<job_record> audit_store::jobs_page(const std::string& status, const std::string& tag, std::int64_t before,
                                               int limit) {
  auto& s = db_.prepare(std::string("SELECT ") + kJobColumns +
                        " FROM jobs WHERE (?1 = '' OR status = ?1) AND (?2 = 0 OR id < ?2) AND "
                        "(?3 = '' OR EXISTS (SELECT 1 FROM json_each(jobs.tags_json) WHERE value = ?3)) "
                        "ORDER BY id DESC LIMIT ?4");
  s.bind(1, status).bind(2, before).bind(3, tag).bind(4, limit);
  std::vector<job_record> out;
  while (s.step()) out.push_back(read_job(s));
  s.reset();
  return out;
}

std::vector<audit::observed_run> audit_store::observations(std::int64_t job) {
  std::vector<audit::observed_run> out;
  for (const auto& r : runs(job)) {
    audit::observed_run o{r.group, r.request, std::nullopt, r.error};
    if (r.ok) {
      if (auto st = audit::decode_canonical(r.encoding)) o.stream = std::move(*st);
      else o.error = "the stored encoding does not decode";
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::map<std::string, audit::backend_fingerprints> audit_store::fingerprints(std::int64_t job) {
  auto& s = db_.prepare(
      "SELECT backend, phase, api, build_info, model, model_ftype, total_slots, n_ctx, chat_template_hash, "
      "generation_settings_hash, prompt_token_hashes FROM fingerprints WHERE job_id = ?");
  s.bind(1, job);
  std::map<std::string, audit::backend_fingerprints> out;
  while (s.step()) {
    audit::backend_fingerprint f;
    f.api = s.text(2);
    f.build_info = s.text(3);
    f.model = s.text(4);
    f.model_ftype = s.text(5);
    f.total_slots = s.integer(6);
    f.n_ctx = s.integer(7);
    f.chat_template_hash = s.text(8);
    f.generation_settings_hash = s.text(9);
    const std::string hashes = s.text(10);
    for (std::size_t i = 0; i < hashes.size();) {
      auto nl = hashes.find('\n', i);
      if (nl == std::string::npos) nl = hashes.size();
      auto line = hashes.substr(i, nl - i);
      if (auto tab = line.rfind('\t'); tab != std::string::npos) f.prompt_token_hashes[line.substr(0, tab)] = line.substr(tab + 1);
      i = nl + 1;
    }
    (s.text(1) == "before" ? out[s.text(0)].before : out[s.text(0)].after) = std::move(f);
  }
  s.reset();
  return out;
}

bool audit_store::delete_job(std::int64_t job) {
  transaction t(db_);
  // Verdicts and streams hang off runs, runs and bursts off groups: cascades remove them all.
  auto& s = db_.prepare("DELETE FROM jobs WHERE id = ?");
  s.bind(1, job);
  s.run();
  const bool any = db_.changes() > 0;
  t.commit();
  return any;
}

void audit_store::vacuum() { db_.exec("VACUUM"); }

void audit_store::backup(const std::string& destination) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(destination.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  std::unique_ptr<sqlite3, db_closer> dest(raw);
  if (rc != SQLITE_OK) throw_sqlite(raw, rc, "cannot open backup target " + destination);
  sqlite3_backup* b = sqlite3_backup_init(dest.get(), "main", db_.handle(), "main");
  if (!b) throw_sqlite(dest.get(), sqlite3_errcode(dest.get()), "backup");
  // Copy in steps so that a long backup never holds the source for long.
  do {
    rc = sqlite3_backup_step(b, 256);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) sqlite3_sleep(10);
  } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) throw_sqlite(dest.get(), rc, "backup to " + destination);
}

std::string audit_store::integrity_check() {
  auto& s = db_.prepare("PRAGMA integrity_check");
  std::string r = s.step() ? s.text(0) : "no answer";
  s.reset();
  return r;
}

}  // namespace logitaudit::storage
