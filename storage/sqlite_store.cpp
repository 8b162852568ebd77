// Schema, migrations and chores of the SQLite store.
#include "sqlite_store.hpp"

#include <algorithm>

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
    // 2: the evidence that each condition happened. The server's whole account of a stream
    // (prompt_n, predicted_n), each burst's width, the server's slots and its concurrency from
    // the server's timings, the burst's verdict (batched or not, and why), a flag on every
    // verdict whose condition did not happen, and predictions that can be undecided.
    R"sql(
ALTER TABLE streams ADD COLUMN prompt_n INTEGER NOT NULL DEFAULT -1;
ALTER TABLE streams ADD COLUMN predicted_n INTEGER NOT NULL DEFAULT -1;
ALTER TABLE bursts ADD COLUMN width INTEGER NOT NULL DEFAULT 0;
UPDATE bursts SET width = (SELECT count(*) FROM runs r WHERE r.job_id = bursts.job_id AND r.group_index = bursts.group_index);
ALTER TABLE bursts ADD COLUMN server_slots INTEGER NOT NULL DEFAULT -1;
ALTER TABLE bursts ADD COLUMN timed_concurrency REAL;
ALTER TABLE bursts ADD COLUMN batched INTEGER;
ALTER TABLE bursts ADD COLUMN expected REAL;
ALTER TABLE bursts ADD COLUMN needed REAL;
ALTER TABLE bursts ADD COLUMN measured REAL;
ALTER TABLE bursts ADD COLUMN measured_by TEXT;
ALTER TABLE bursts ADD COLUMN needed_overlap REAL;
ALTER TABLE bursts ADD COLUMN verdict_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE verdicts ADD COLUMN flag TEXT NOT NULL DEFAULT 'none' CHECK (flag IN ('none','not_batched','not_reused'));
ALTER TABLE verdicts ADD COLUMN flag_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE predictions ADD COLUMN outcome TEXT NOT NULL DEFAULT 'failed' CHECK (outcome IN ('held','failed','undecided'));
UPDATE predictions SET outcome = CASE WHEN held THEN 'held' WHEN n = 0 THEN 'undecided' ELSE 'failed' END;
ALTER TABLE predictions ADD COLUMN flagged INTEGER NOT NULL DEFAULT 0;
)sql",
    // 3: the history. Each job's backends (its series), filled in for the stored jobs from
    // their specs; the model beyond its path (the server's metadata, the file's sha256) and
    // the canary's digests in every fingerprint.
    R"sql(
CREATE TABLE job_backends (
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  backend TEXT NOT NULL,
  PRIMARY KEY (job_id, backend)
);
CREATE INDEX job_backends_by_backend ON job_backends(backend, job_id);
INSERT OR IGNORE INTO job_backends (job_id, backend)
  SELECT j.id, json_extract(b.value, '$.name') FROM jobs j, json_each(j.spec_json, '$.backends') b
  WHERE json_valid(j.spec_json) AND json_extract(b.value, '$.name') IS NOT NULL;
CREATE INDEX jobs_by_spec ON jobs(spec_hash, id);
ALTER TABLE fingerprints ADD COLUMN model_meta TEXT NOT NULL DEFAULT '';
ALTER TABLE fingerprints ADD COLUMN model_sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE fingerprints ADD COLUMN canary_logit_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE fingerprints ADD COLUMN canary_token_digest TEXT NOT NULL DEFAULT '';
)sql",
    // 4: the delivery log of alerts to webhooks.
    R"sql(
CREATE TABLE alert_deliveries (
  id INTEGER PRIMARY KEY,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending','delivered','failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  last_status INTEGER NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  last_attempt_at TEXT NOT NULL DEFAULT ''
);
CREATE INDEX alert_deliveries_by_status ON alert_deliveries(status, id);
)sql",
    // 5: one job per schedule fire, whoever fires it.
    R"sql(
CREATE TABLE schedule_fires (
  schedule_id INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  fire_unix INTEGER NOT NULL,
  job_id INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
  fired_at TEXT NOT NULL,
  PRIMARY KEY (schedule_id, fire_unix)
);
)sql",
    // 6: the machine in every fingerprint (tab-separated facts, one per line); the provenance
    // of an audit imported from an evidence bundle; when a stream's bytes were pruned (retention).
    R"sql(
ALTER TABLE fingerprints ADD COLUMN machine TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN origin TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN origin_audit INTEGER;
ALTER TABLE jobs ADD COLUMN origin_version TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN imported_at TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX jobs_by_origin ON jobs(origin, origin_audit) WHERE origin <> '';
ALTER TABLE streams ADD COLUMN pruned_at TEXT NOT NULL DEFAULT '';
)sql",
    // 7: harness power. What the audit observed of a server (how it writes its logprobs, the
    // canary's company, restarts); the company each solo request had; each token's text, for
    // a difference in the text alone; a burst that had neighbours the audit did not send; and
    // every selftest of a backend's path against seeded faults.
    R"sql(
ALTER TABLE fingerprints ADD COLUMN observed TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN company REAL;
ALTER TABLE streams ADD COLUMN token_texts TEXT NOT NULL DEFAULT '';
CREATE TABLE verdicts_v7 (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  logit_identical INTEGER NOT NULL,
  token_identical INTEGER NOT NULL,
  first_logit_difference INTEGER NOT NULL,
  first_token_difference INTEGER NOT NULL,
  max_abs_delta REAL NOT NULL,
  mean_abs_delta REAL NOT NULL,
  max_ulp INTEGER NOT NULL,
  margin_at_flip REAL,
  flag TEXT NOT NULL DEFAULT 'none'
    CHECK (flag IN ('none','not_batched','not_reused','not_solo','control_ineffective')),
  flag_reason TEXT NOT NULL DEFAULT '',
  first_text_difference INTEGER NOT NULL DEFAULT -1
);
INSERT INTO verdicts_v7 (run_id, logit_identical, token_identical, first_logit_difference, first_token_difference,
                         max_abs_delta, mean_abs_delta, max_ulp, margin_at_flip, flag, flag_reason)
  SELECT run_id, logit_identical, token_identical, first_logit_difference, first_token_difference,
         max_abs_delta, mean_abs_delta, max_ulp, margin_at_flip, flag, flag_reason FROM verdicts;
DROP TABLE verdicts;
ALTER TABLE verdicts_v7 RENAME TO verdicts;
ALTER TABLE bursts ADD COLUMN foreign_load TEXT NOT NULL DEFAULT '';
CREATE TABLE selftests (
  id INTEGER PRIMARY KEY,
  backend TEXT NOT NULL,
  url TEXT NOT NULL,
  api TEXT NOT NULL,
  taken_at TEXT NOT NULL,
  caught INTEGER NOT NULL,
  faults INTEGER NOT NULL,
  equivalents_flagged INTEGER NOT NULL,
  equivalents INTEGER NOT NULL,
  passed INTEGER NOT NULL,
  summary TEXT NOT NULL,
  cases TEXT NOT NULL
);
CREATE INDEX selftests_by_backend ON selftests(backend, id);
)sql",
    // 8: explaining a divergence. Each streamed token's times (its arrival, the server's own
    // time), the decode steps reconstructed from a burst's streams, and the batch at a divergent
    // run's first difference.
    R"sql(
ALTER TABLE streams ADD COLUMN token_times TEXT NOT NULL DEFAULT '';
ALTER TABLE streams ADD COLUMN decode_steps TEXT NOT NULL DEFAULT '';
ALTER TABLE verdicts ADD COLUMN width_at_difference INTEGER;
ALTER TABLE verdicts ADD COLUMN width_before_difference INTEGER;
ALTER TABLE verdicts ADD COLUMN events_before_difference TEXT NOT NULL DEFAULT '';
)sql",
    // 9: audits under load. A load level's figures (its background is never stored as
    // streams: docs/load.md), and the flag of a probe whose level was not reached.
    R"sql(
ALTER TABLE groups ADD COLUMN load_level TEXT NOT NULL DEFAULT '';
CREATE TABLE verdicts_v9 (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  logit_identical INTEGER NOT NULL,
  token_identical INTEGER NOT NULL,
  first_logit_difference INTEGER NOT NULL,
  first_token_difference INTEGER NOT NULL,
  max_abs_delta REAL NOT NULL,
  mean_abs_delta REAL NOT NULL,
  max_ulp INTEGER NOT NULL,
  margin_at_flip REAL,
  flag TEXT NOT NULL DEFAULT 'none'
    CHECK (flag IN ('none','not_batched','not_reused','not_solo','control_ineffective','level_not_reached')),
  flag_reason TEXT NOT NULL DEFAULT '',
  first_text_difference INTEGER NOT NULL DEFAULT -1,
  width_at_difference INTEGER,
  width_before_difference INTEGER,
  events_before_difference TEXT NOT NULL DEFAULT ''
);
INSERT INTO verdicts_v9 (run_id, logit_identical, token_identical, first_logit_difference, first_token_difference,
                         max_abs_delta, mean_abs_delta, max_ulp, margin_at_flip, flag, flag_reason,
                         first_text_difference, width_at_difference, width_before_difference, events_before_difference)
  SELECT run_id, logit_identical, token_identical, first_logit_difference, first_token_difference,
         max_abs_delta, mean_abs_delta, max_ulp, margin_at_flip, flag, flag_reason,
         first_text_difference, width_at_difference, width_before_difference, events_before_difference FROM verdicts;
DROP TABLE verdicts;
ALTER TABLE verdicts_v9 RENAME TO verdicts;
)sql",
    // 10: typed job rows. Whether a job starts its backends' servers is a column, so that the
    // queue reads what a job holds from columns (with job_backends) and never decodes a spec;
    // filled in for the stored jobs from their specs.
    R"sql(
ALTER TABLE jobs ADD COLUMN starts_servers INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET starts_servers = 1 WHERE json_valid(spec_json) AND EXISTS (
  SELECT 1 FROM json_each(jobs.spec_json, '$.backends') b WHERE json_type(b.value, '$.managed') IS NOT NULL);
)sql",
    // 11: repros, a job of their own (docs/explain.md): queued, holding their backend, kept with
    // their outcome and bundle across restarts.
    R"sql(
CREATE TABLE repros (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  run_id INTEGER NOT NULL,
  backend TEXT NOT NULL,
  member TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK (status IN ('queued','running','done','failed','cancelled','interrupted')),
  trials INTEGER NOT NULL,
  max_bursts INTEGER NOT NULL,
  bursts INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT NOT NULL DEFAULT '',
  finished_at TEXT NOT NULL DEFAULT '',
  outcome TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  original TEXT NOT NULL DEFAULT '',
  minimal TEXT NOT NULL DEFAULT '',
  files TEXT NOT NULL DEFAULT ''
);
CREATE INDEX repros_by_status ON repros(status, member, id);
)sql",
    // 12: how a burst's barrier wrote its requests (last-byte sync or whole), chosen per width,
    // and whether its answers streamed (every burst did before plain bursts).
    R"sql(
ALTER TABLE bursts ADD COLUMN write_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE bursts ADD COLUMN streamed INTEGER NOT NULL DEFAULT 1;
)sql",
};

constexpr int kMigrationCount = sizeof(kMigrations) / sizeof(kMigrations[0]);
static_assert(kMigrationCount == kSchemaVersion);

}  // namespace

std::span<const char* const> sqlite_migrations() { return kMigrations; }

sqlite_store::sqlite_store(const std::string& path)
    : db_(path),
      repos_(make_sql_repositories(db_)) {
  migrate();
}

sqlite_store::~sqlite_store() = default;

int sqlite_store::schema_version() {
  auto& s = db_.prepare("PRAGMA user_version");
  s.step();
  const int v = static_cast<int>(s.integer(0));
  s.reset();
  return v;
}

void sqlite_store::migrate() {
  const int version = schema_version();
  if (version > kSchemaVersion)
    throw storage_error(storage_error::kind::newer_schema,
                        "database " + db_.path() + " has schema version " + std::to_string(version) +
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

void sqlite_store::limit_size(std::int64_t max_bytes) {
  auto& s = db_.prepare("PRAGMA page_size");
  s.step();
  const std::int64_t page = s.integer(0);
  s.reset();
  // SQLite never shrinks the limit below the pages already in use.
  db_.exec("PRAGMA max_page_count = " + std::to_string(std::max<std::int64_t>(1, max_bytes / page)));
}

void sqlite_store::vacuum() { db_.exec("VACUUM"); }

void sqlite_store::backup(const std::string& destination) {
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

std::string sqlite_store::integrity_check() {
  auto& s = db_.prepare("PRAGMA integrity_check");
  std::string r = s.step() ? s.text(0) : "no answer";
  s.reset();
  return r;
}

void sqlite_store::checkpoint() { db_.exec("PRAGMA wal_checkpoint(TRUNCATE)"); }

}  // namespace logitaudit::storage
