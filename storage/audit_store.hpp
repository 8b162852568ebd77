// The evidence on disk: jobs, their request groups, runs and logit streams (canonical
// encoding + both digests), burst measurements, fingerprints, verdicts and predictions.
// Each group is written in one transaction with its streams, so a group is either stored
// whole or not at all. Not thread-safe: one store lives on one thread (see db_worker).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "audit/burst_measurement.hpp"
#include "audit/findings.hpp"
#include "audit/fingerprint.hpp"
#include "audit/logit_stream.hpp"
#include "audit/plan.hpp"
#include "sqlite.hpp"

namespace logitaudit::storage {

inline constexpr int kSchemaVersion = 1;

struct new_job {
  std::string spec_json;
  std::string spec_hash;
  std::string prediction_hash;
  std::string predictions_registered_at;  // RFC 3339 UTC
  std::size_t total_requests = 0;
  std::size_t total_groups = 0;
  std::string tags_json = "[]";
  std::optional<std::int64_t> schedule_id;
  std::string created_at;
};

struct job_record {
  std::int64_t id = 0;
  std::string status;  // queued, running, done, failed, cancelled, interrupted
  std::string spec_json, spec_hash, prediction_hash, predictions_registered_at;
  std::int64_t total_requests = 0, done_requests = 0, failed_requests = 0, total_groups = 0;
  std::string error;
  std::string tags_json;
  std::optional<std::int64_t> schedule_id;
  std::string created_at, started_at, finished_at;
  std::string findings_json;
};

// One finished group, as the runner saw it.
struct group_write {
  const audit::audit_plan* plan = nullptr;        // the job's plan
  const audit::request_group* group = nullptr;    // one of its groups
  std::vector<audit::observed_run> runs;          // one per planned request
  std::optional<audit::burst_measurement> burst;
  int attempts = 1;
};

struct schedule_record {
  std::int64_t id = 0;  // 0: not stored yet
  std::string cron;
  std::string timezone = "UTC";
  std::string spec_json;
  bool enabled = true;
  std::string missed = "run_once";  // run_once | skip: a fire missed while the daemon was down
  std::string created_at;
  std::optional<std::int64_t> next_fire_unix;
  std::optional<std::int64_t> last_fire_unix;
};

struct stored_run {
  std::int64_t id = 0;
  std::size_t group = 0, request = 0;
  std::string backend, condition;
  int replicate = 0;
  std::string prompt;
  double temperature = 0;
  std::optional<std::int64_t> seed;
  bool cache_prompt = false;
  bool compared = false;
  std::optional<std::int64_t> baseline_group;
  bool ok = false;
  std::string error;
  std::int64_t write_ns = 0, first_byte_ns = 0, last_byte_ns = 0;
  // Stream (ok runs only).
  std::vector<std::uint8_t> token_digest, logit_digest, encoding;
  std::int64_t token_count = 0;
  std::string content;
};

struct stored_verdict {
  std::int64_t run_id = 0;
  bool logit_identical = false, token_identical = false;
};

struct stored_prediction {
  std::string id;
  bool held = false;
  int k = 0, n = 0;
};

class audit_store {
 public:
  // Opens or creates the database and applies the numbered migrations. Refuses (throws
  // storage_error) a database whose schema is newer than this program's.
  explicit audit_store(const std::string& path);

  database& db() { return db_; }
  int schema_version();
  // Caps the file at about `max_bytes` (SQLite's max_page_count): writes beyond it fail with
  // "database or disk is full", as on a full disk, and nothing stored is touched.
  void limit_size(std::int64_t max_bytes);

  std::int64_t create_job(const new_job& j);
  void set_status(std::int64_t job, const std::string& status, const std::string& at, const std::string& error = {});
  // Writes several groups, each whole, in one transaction (writes are batched).
  void record_groups(std::int64_t job, const std::vector<group_write>& groups);
  void record_fingerprint(std::int64_t job, const std::string& backend, const std::string& phase,
                          const audit::backend_fingerprint& f, const std::string& at);
  // The job's end: status, verdicts, predictions and the findings as JSON, in one transaction.
  void finish_job(std::int64_t job, const std::string& status, const std::string& error, const audit::findings& f,
                  const std::string& findings_json, const std::string& at);

  std::optional<job_record> job(std::int64_t id);
  std::vector<job_record> jobs_with_status(const std::string& status);
  std::set<std::size_t> stored_groups(std::int64_t job);
  std::vector<stored_run> runs(std::int64_t job);
  std::vector<stored_verdict> verdicts(std::int64_t job);
  std::vector<stored_prediction> predictions(std::int64_t job);
  std::vector<std::int64_t> job_ids();
  std::map<std::string, std::int64_t> job_counts();

  // Schedules: insert (id 0) or update; the id.
  std::int64_t save_schedule(const schedule_record& r);
  std::optional<schedule_record> schedule(std::int64_t id);
  std::vector<schedule_record> schedules();
  bool delete_schedule(std::int64_t id);  // its jobs stay, unlinked
  std::vector<job_record> schedule_jobs(std::int64_t schedule, int limit);
  // Newest first, ids below `before` (0: no bound), optionally one status and one tag.
  std::vector<job_record> jobs_page(const std::string& status, const std::string& tag, std::int64_t before, int limit);
  // The stored runs as observations (streams decoded from their canonical encoding).
  std::vector<audit::observed_run> observations(std::int64_t job);
  std::map<std::string, audit::backend_fingerprints> fingerprints(std::int64_t job);

  // Deletes the job and every row that belongs to it; false when there was none.
  bool delete_job(std::int64_t job);
  void vacuum();
  // A consistent copy through SQLite's online backup API, while the store stays usable.
  void backup(const std::string& destination);
  // PRAGMA integrity_check: "ok" or the first problem.
  std::string integrity_check();

 private:
  void migrate();
  database db_;
};

// The current time as RFC 3339 UTC with milliseconds.
std::string now_utc();

}  // namespace logitaudit::storage
