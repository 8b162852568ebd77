// What the REST routes need from the daemon, as an interface: the routes stay in api/ (the
// wire) and the daemon (queue, storage, clients) implements it. Every call suspends and
// runs on the server's executor; implementations never block it on disk.
#pragma once

#include <boost/asio.hpp>
#include <cstdint>
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
  virtual boost::asio::awaitable<cancel_outcome> cancel(std::int64_t id) = 0;
  // False when there is no such job; a running job is cancelled first.
  virtual boost::asio::awaitable<bool> remove(std::int64_t id) = 0;
  // Configured backends as JSON (name, url, api, last fingerprint).
  virtual boost::asio::awaitable<std::string> backends_json() = 0;
  virtual bool ready() const = 0;
};

}  // namespace logitaudit::api
