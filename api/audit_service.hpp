// What the REST routes need from the daemon, as an interface: the routes stay in api/ (the
// wire) and the daemon (queue, storage, clients) implements it. Every call suspends and
// runs on the server's executor; implementations never block it on disk.
#pragma once

#include <boost/asio.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit/expected.hpp"
#include "audit/findings.hpp"
#include "audit/spec.hpp"

namespace logitaudit::api {

struct job_summary {
  std::int64_t id = 0;
  std::string status;
  std::int64_t total = 0, done = 0, failed = 0;
  std::string created_at, started_at, finished_at, error;
  std::string prediction_hash, predictions_registered_at;
  std::vector<std::string> tags;
  std::vector<std::string> backends;
};

enum class cancel_outcome { cancelled, already_finished, not_found };

struct run_view {
  std::int64_t id = 0;
  std::size_t group = 0, request = 0;
  std::string backend, condition, prompt;
  int replicate = 0;
  double temperature = 0;
  std::optional<std::int64_t> seed;
  bool cache_prompt = false, compared = false, ok = false;
  std::string error;
  std::int64_t write_ns = 0, first_byte_ns = 0, last_byte_ns = 0;
  std::string token_digest, logit_digest;  // hex, empty for failed runs
  std::int64_t token_count = 0;
  std::optional<bool> logit_identical, token_identical;  // for judged runs of finished jobs
};

struct stream_view {
  run_view run;
  audit::logit_stream stream;  // decoded from the stored canonical encoding (ids, logprobs, top-k)
  std::string content;
};

struct baseline_pair {
  std::string backend, prompt;
  double temperature = 0;
  std::optional<std::int64_t> seed;
  std::optional<audit::comparison> result;  // absent: the baseline is in only one job
  bool in_a = false, in_b = false;
};

struct job_comparison {
  std::int64_t a = 0, b = 0;
  std::vector<baseline_pair> baselines;
  std::map<std::string, std::vector<std::string>> fingerprint_differences;  // by backend
};

class audit_service {
 public:
  virtual ~audit_service() = default;
  // Validates against the daemon's backends and limits, stores the job (queued), registers
  // its predictions. Errors: the problems, each naming its field. Nothing is stored then.
  virtual boost::asio::awaitable<expected<job_summary, std::vector<audit::spec_problem>>> submit(audit::audit_spec spec) = 0;
  virtual boost::asio::awaitable<std::optional<job_summary>> job(std::int64_t id) = 0;
  // Newest first; `before` is an exclusive id cursor (0: from the newest).
  virtual boost::asio::awaitable<std::vector<job_summary>> jobs(std::string status, std::string tag,
                                                                std::int64_t before, int limit) = 0;
  // The findings of a finished (or cancelled) job, recomputed from its stored streams.
  virtual boost::asio::awaitable<std::optional<audit::findings>> findings(std::int64_t id) = 0;
  // The job's runs, optionally one condition and/or one backend; nullopt: no such job.
  virtual boost::asio::awaitable<std::optional<std::vector<run_view>>> runs(std::int64_t id, std::string condition,
                                                                            std::string backend) = 0;
  virtual boost::asio::awaitable<std::optional<stream_view>> stream(std::int64_t id, std::int64_t run) = 0;
  virtual boost::asio::awaitable<cancel_outcome> cancel(std::int64_t id) = 0;
  // Baseline streams of two jobs, matched by backend, prompt and sampling; nullopt when a
  // job does not exist (the error says which).
  virtual boost::asio::awaitable<expected<job_comparison, std::string>> compare(std::int64_t a, std::int64_t b) = 0;
  // False when there is no such job; a running job is cancelled first.
  virtual boost::asio::awaitable<bool> remove(std::int64_t id) = 0;
  // Configured backends as JSON (name, url, api, last fingerprint).
  virtual boost::asio::awaitable<std::string> backends_json() = 0;
  // Jobs by status, for /metrics.
  virtual boost::asio::awaitable<std::map<std::string, std::int64_t>> job_counts() = 0;
  virtual bool ready() const = 0;
  // The report of an ended audit never changes until it is deleted: an implementation may
  // keep its rendered bodies (per format) and hand them back; the default keeps nothing.
  virtual const std::string* rendered_report(std::int64_t /*id*/, const std::string& /*format*/) { return nullptr; }
  virtual void keep_rendered_report(std::int64_t /*id*/, const std::string& /*format*/, std::string /*body*/) {}
};

}  // namespace logitaudit::api
