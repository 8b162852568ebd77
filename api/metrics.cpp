// Prometheus text rendering.
#include "metrics.hpp"

#include <cstdio>

#include "audit/history.hpp"
#include "read_model.hpp"

namespace logitaudit::api {
namespace {

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// A label value in the exposition format: backslash, double quote and newline escaped.
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string with(const std::string& labels, const std::string& more) {
  if (labels.empty()) return "{" + more + "}";
  return "{" + labels + "," + more + "}";
}

}  // namespace

void histogram::observe(double v) {
  for (std::size_t i = 0; i < bounds_.size(); ++i)
    if (v <= bounds_[i]) ++counts_[i];
  sum_ += v;
  ++count_;
}

std::string histogram::render(const std::string& name, const std::string& labels) const {
  std::string out;
  for (std::size_t i = 0; i < bounds_.size(); ++i)
    out += name + "_bucket" + with(labels, "le=\"" + num(bounds_[i]) + "\"") + " " + std::to_string(counts_[i]) + "\n";
  out += name + "_bucket" + with(labels, "le=\"+Inf\"") + " " + std::to_string(count_) + "\n";
  out += name + "_sum" + (labels.empty() ? "" : "{" + labels + "}") + " " + num(sum_) + "\n";
  out += name + "_count" + (labels.empty() ? "" : "{" + labels + "}") + " " + std::to_string(count_) + "\n";
  return out;
}

std::string daemon_metrics::render(const std::map<audit::job_status, std::int64_t>& jobs, const read_model* reads) const {
  std::string out;
  out += "# HELP logitaudit_jobs Audit jobs by status.\n# TYPE logitaudit_jobs gauge\n";
  for (auto s : audit::kJobStatuses) {
    auto it = jobs.find(s);
    out += "logitaudit_jobs{status=\"" + std::string(audit::to_string(s)) + "\"} " +
           std::to_string(it == jobs.end() ? 0 : it->second) + "\n";
  }
  // A counter per backend: its help, its type, a line per backend.
  auto per_backend = [&](const char* name, const char* help, const auto& counts) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n";
    for (const auto& [backend, n] : counts)
      out += std::string(name) + "{backend=\"" + label(backend) + "\"} " + std::to_string(n) + "\n";
  };
  per_backend("logitaudit_backend_requests_total", "Completion requests sent to backends.", requests_sent);
  per_backend("logitaudit_backend_group_retries_total",
              "Request groups sent again after a failure (each logged as a warning).", group_retries);
  per_backend("logitaudit_backend_request_failures_total", "Completion requests that failed after their retries.",
              request_failures);
  out += "# HELP logitaudit_series_state The state of each series from its latest audits (1 for the current one).\n"
         "# TYPE logitaudit_series_state gauge\n";
  for (const auto& g : series)
    for (auto st : audit::kSeriesStates)
      out += "logitaudit_series_state{series=\"" + label(g.series) + "\",backend=\"" + label(g.backend) + "\",state=\"" +
             std::string(audit::to_string(st)) + "\"} " + (st == g.state ? "1" : "0") + "\n";
  out += "# HELP logitaudit_series_valid Whether the latest ended audit of each series has valid findings.\n"
         "# TYPE logitaudit_series_valid gauge\n";
  for (const auto& g : series)
    out += "logitaudit_series_valid{series=\"" + label(g.series) + "\",backend=\"" + label(g.backend) + "\"} " +
           (g.valid ? "1" : "0") + "\n";
  out += "# HELP logitaudit_series_last_audit The id of each series' latest audit.\n"
         "# TYPE logitaudit_series_last_audit gauge\n";
  for (const auto& g : series)
    out += "logitaudit_series_last_audit{series=\"" + label(g.series) + "\",backend=\"" + label(g.backend) + "\"} " +
           std::to_string(g.audit) + "\n";
  out += "# HELP logitaudit_series_identical_ratio Identical streams of the latest audit per series, condition and level.\n"
         "# TYPE logitaudit_series_identical_ratio gauge\n";
  for (const auto& g : series)
    for (const auto& r : g.rates)
      out += "logitaudit_series_identical_ratio{series=\"" + label(g.series) + "\",backend=\"" + label(g.backend) +
             "\",condition=\"" + label(r.condition) + "\",level=\"" + r.level + "\"} " + num(r.ratio) + "\n";
  if (loops) {
    const auto all = loops();
    out += "# HELP logitaudit_loop_healthy Whether each background loop of the daemon makes progress (1) or not (0).\n"
           "# TYPE logitaudit_loop_healthy gauge\n";
    for (const auto& l : all) out += "logitaudit_loop_healthy{loop=\"" + label(l.loop) + "\"} " + (l.healthy ? "1" : "0") + "\n";
    out += "# HELP logitaudit_loop_last_progress_timestamp_seconds When each loop last ended a pass well (0: never).\n"
           "# TYPE logitaudit_loop_last_progress_timestamp_seconds gauge\n";
    for (const auto& l : all)
      out += "logitaudit_loop_last_progress_timestamp_seconds{loop=\"" + label(l.loop) + "\"} " +
             std::to_string(l.last_progress_unix) + "\n";
    out += "# HELP logitaudit_loop_consecutive_failures Passes of each loop that failed in a row.\n"
           "# TYPE logitaudit_loop_consecutive_failures gauge\n";
    for (const auto& l : all)
      out += "logitaudit_loop_consecutive_failures{loop=\"" + label(l.loop) + "\"} " + std::to_string(l.failures) + "\n";
  }
  out += "# HELP logitaudit_bursts_not_batched_total Bursts whose server did not batch them (counted apart).\n"
         "# TYPE logitaudit_bursts_not_batched_total counter\n"
         "logitaudit_bursts_not_batched_total " + std::to_string(bursts_not_batched) + "\n";
  out += "# HELP logitaudit_burst_launch_spread_seconds Last write minus first write of each burst.\n"
         "# TYPE logitaudit_burst_launch_spread_seconds histogram\n";
  out += burst_spread_seconds.render("logitaudit_burst_launch_spread_seconds", "");
  out += "# HELP logitaudit_api_requests_total API requests by status.\n# TYPE logitaudit_api_requests_total counter\n";
  for (const auto& [status, n] : api_responses)
    out += "logitaudit_api_requests_total{status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP logitaudit_api_latency_seconds API request latency, read to written.\n"
         "# TYPE logitaudit_api_latency_seconds histogram\n";
  out += api_latency_seconds.render("logitaudit_api_latency_seconds", "");
  if (reads) {
    out += "# HELP logitaudit_read_cache_bytes Bytes of final audits' bodies kept by the read model.\n"
           "# TYPE logitaudit_read_cache_bytes gauge\n"
           "logitaudit_read_cache_bytes " + std::to_string(reads->bytes()) + "\n";
    out += "# HELP logitaudit_read_cache_lookups_total Read model lookups by result.\n"
           "# TYPE logitaudit_read_cache_lookups_total counter\n"
           "logitaudit_read_cache_lookups_total{result=\"hit\"} " + std::to_string(reads->hits()) + "\n"
           "logitaudit_read_cache_lookups_total{result=\"miss\"} " + std::to_string(reads->misses()) + "\n";
    out += "# HELP logitaudit_read_cache_renders_total Bodies of final audits rendered and kept (once for a crowd of readers).\n"
           "# TYPE logitaudit_read_cache_renders_total counter\n"
           "logitaudit_read_cache_renders_total " + std::to_string(reads->kept()) + "\n";
  }
  return out;
}

}  // namespace logitaudit::api
