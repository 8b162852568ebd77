// Prometheus metrics of the daemon: counters and histograms kept on the server's executor
// (not thread-safe: touch them only there) and rendered in the text exposition format.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "audit/history.hpp"
#include "audit/states.hpp"

namespace logitaudit::api {

class read_model;

class histogram {
 public:
  explicit histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double v);
  // `name` with its _bucket, _sum and _count series; `labels` like `route="/v1/audits"` or "".
  std::string render(const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

// The latest state of one series, for the gauges Alertmanager rules read.
struct series_gauge {
  std::string series, backend;  // the series' name ("schedule 3 / tiny"), its backend
  audit::series_state state = audit::series_state::no_history;
  bool valid = false;           // its latest ended audit's findings are valid
  std::int64_t audit = 0;       // that audit
  struct rate {
    std::string condition, level;  // level: logit | token
    double ratio = 0;
  };
  std::vector<rate> rates;  // the latest audit's identical ratio per counted condition
};

// One background loop of the daemon as /metrics shows it (daemon/loop_health.hpp judges it).
struct loop_gauge {
  std::string loop;
  bool healthy = true;
  std::int64_t last_progress_unix = 0;
  int failures = 0;  // passes failed in a row
};

struct daemon_metrics {
  std::map<std::string, std::uint64_t> requests_sent;     // completion requests, by backend
  std::map<std::string, std::uint64_t> request_failures;  // of those, failed after retries
  std::map<std::string, std::uint64_t> group_retries;     // request groups sent again (each logged as a warning)
  std::vector<series_gauge> series;  // refreshed when an audit ends
  std::uint64_t bursts_not_batched = 0;  // bursts the server did not batch (judged at each audit's end)
  std::uint64_t api_requests = 0;
  std::map<unsigned, std::uint64_t> api_responses;  // by status
  histogram burst_spread_seconds{{1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1}};
  histogram api_latency_seconds{{1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1}};
  std::function<std::vector<loop_gauge>()> loops;  // read at each scrape (empty: none shown)

  void observe_response(unsigned status, double seconds) {
    ++api_requests;
    ++api_responses[status];
    api_latency_seconds.observe(seconds);
  }

  // The exposition text; `jobs_by_status` comes from the database at scrape time, the read
  // model's size and hits from `reads` (when there is one).
  std::string render(const std::map<audit::job_status, std::int64_t>& jobs_by_status, const read_model* reads) const;
};

}  // namespace logitaudit::api
