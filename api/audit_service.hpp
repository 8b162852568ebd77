// What the REST routes need from the daemon, as an interface: the routes stay in api/ (the
// wire) and the daemon (lifecycle, queue, storage) implements it. Answers are the stored
// records themselves (storage/records.hpp: plain values, no engine), so nothing maps rows to
// views twice. Every call suspends and resumes on the caller's executor; implementations
// never block it on disk.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit/baselines.hpp"
#include "audit/expected.hpp"
#include "audit/spec.hpp"
#include "service_error.hpp"
#include "storage/bundle.hpp"
#include "storage/records.hpp"

namespace logitaudit::api {

struct backend_view {
  std::string name, url, api;
  bool busy = false;  // an audit is running on it now
};

// A repro: a divergent run's burst shrunk against the live server (daemon/repro_jobs.hpp), a
// job of its own: queued, run on the measuring thread, stored with its outcome and bundle.
struct repro_settings {
  std::optional<int> trials;      // bursts per candidate; nullopt: the daemon's repro.trials
  std::optional<int> max_bursts;  // in all; nullopt: the daemon's repro.max_bursts
};
struct repro_view {
  std::int64_t id = 0, audit = 0, run = 0;
  std::string backend;
  std::string status = "queued";  // queued, running, done, failed, cancelled, interrupted (audit::job_status)
  std::string created_at, started_at, finished_at;
  int bursts = 0, max_bursts = 0, trials = 0;
  std::string phase;              // solo, full, requests, lengths
  std::string outcome, message;   // once done (clients::repro_outcome)
  std::string original, minimal;  // the cases, described
  std::map<std::string, std::string> files;  // the bundle, once done
};

struct backend_list {
  std::vector<backend_view> backends;  // configured
  bool allow_adhoc = false;            // specs may name other URLs
  // The devices a managed server may be given here (clients::host_devices): the values, and
  // each in words with what its llama-server lists.
  std::vector<std::string> devices;
  std::string device_words;
};

class audit_service {
 public:
  virtual ~audit_service() = default;
  // Validates against the daemon's backends and limits, registers the predictions and stores
  // the job queued. Errors: invalid (every problem, each naming its field), queue_full,
  // storage_full, unavailable. Nothing is stored on error.
  virtual boost::asio::awaitable<expected<storage::job_record, service_error>> submit(audit::audit_spec spec) = 0;
  virtual boost::asio::awaitable<std::optional<storage::job_record>> job(std::int64_t id) = 0;
  // The job once it is final (or, with `done_above`, once more than that many of its requests
  // are stored), or as it is when `timeout` passes first; nullopt: no such job.
  virtual boost::asio::awaitable<std::optional<storage::job_record>> wait(std::int64_t id, std::chrono::milliseconds timeout,
                                                                         std::optional<std::int64_t> done_above) = 0;
  virtual boost::asio::awaitable<std::vector<storage::job_record>> jobs(storage::job_query query) = 0;
  // nullopt: no such job.
  virtual boost::asio::awaitable<std::optional<std::vector<storage::run_record>>> runs(std::int64_t id,
                                                                                       storage::run_filter filter) = 0;
  // nullopt: no such run in this job.
  virtual boost::asio::awaitable<std::optional<storage::stream_record>> stream(std::int64_t id, std::int64_t run) = 0;
  virtual boost::asio::awaitable<std::optional<std::vector<storage::burst_record>>> bursts(std::int64_t id) = 0;
  virtual boost::asio::awaitable<std::optional<std::vector<storage::fingerprint_record>>> fingerprints(std::int64_t id) = 0;
  // Errors: not_found, conflict (the audit has already ended).
  virtual boost::asio::awaitable<expected<storage::job_record, service_error>> cancel(std::int64_t id) = 0;
  // Errors: not_found (the field says which of "a" and "b").
  virtual boost::asio::awaitable<expected<audit::baseline_comparison, service_error>> compare(std::int64_t a,
                                                                                            std::int64_t b) = 0;
  // A running job is cancelled first. Errors: not_found.
  virtual boost::asio::awaitable<expected<std::int64_t, service_error>> remove(std::int64_t id) = 0;
  // Ended audits as one evidence bundle's text (storage/bundle.hpp). Errors: not_found (the
  // field says which id), conflict (one has not ended).
  virtual boost::asio::awaitable<expected<std::string, service_error>> export_bundle(std::vector<std::int64_t> ids) = 0;
  // Adds a bundle's audits, read-only, with their provenance; one imported before is not
  // stored again. Errors: invalid (malformed, truncated, oversized, a content digest that does
  // not match, rows that do not fit: nothing is stored), storage_full, unavailable.
  virtual boost::asio::awaitable<expected<storage::import_result, service_error>> import_bundle(std::string text) = 0;
  virtual boost::asio::awaitable<backend_list> backends() = 0;
  // Seeded faults against a configured backend's server (clients/selftest.hpp), stored so that
  // its later audits cite it. Errors: not_found (no such backend), conflict (an audit holds it),
  // unavailable (no request came back).
  virtual boost::asio::awaitable<expected<storage::selftest_record, service_error>> selftest(std::string backend) = 0;
  // Starts the minimal reproduction of a divergent burst run. Errors: not_found (audit, run),
  // conflict (the audit has not ended, the run did not diverge or was not in a burst, an audit
  // holds its backend), invalid (settings, a backend not configured).
  virtual boost::asio::awaitable<expected<repro_view, service_error>> start_repro(std::int64_t audit, std::int64_t run,
                                                                               repro_settings settings) = 0;
  // A repro; with `wait`, as soon as it has ended or after `wait` (a long poll).
  virtual boost::asio::awaitable<std::optional<repro_view>> repro(std::int64_t id,
                                                                  std::chrono::milliseconds wait = std::chrono::milliseconds(0)) = 0;
  // Errors: not_found, conflict (it has ended).
  virtual boost::asio::awaitable<expected<repro_view, service_error>> cancel_repro(std::int64_t id) = 0;
  virtual boost::asio::awaitable<std::map<audit::job_status, std::int64_t>> job_counts() = 0;
  // Why the daemon is not ready, one entry per cause (a background loop that makes no progress
  // names itself); empty when it is.
  virtual std::vector<std::string> not_ready() const = 0;
};

}  // namespace logitaudit::api
