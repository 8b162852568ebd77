// daemon_config -> the settings of each part.
#include "settings.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "storage/repositories.hpp"

namespace logitaudit::daemon {

std::map<std::string, clients::backend_config> backend_configs(const config::daemon_config& conf) {
  std::map<std::string, clients::backend_config> out;
  for (const auto& b : conf.backends) {
    clients::backend_config c;
    c.name = b.name;
    c.url = b.url;
    c.api = clients::parse_api_kind(b.api).value_or(clients::default_api_kind());
    c.http.bearer_token = b.token;
    c.http.ca_file = b.ca_file;
    c.http.client_cert = b.client_cert;
    c.http.client_key = b.client_key;
    c.http.first_byte_timeout = c.http.total_timeout = std::chrono::seconds(b.timeout_s);
    c.options.model = b.model;
    c.model_path = b.model_path;
    c.host = b.host;
    c.local = b.local;
    c.machine = b.machine;
    out[c.name] = c;
  }
  return out;
}

lifecycle_config lifecycle_settings(const config::daemon_config& c) {
  lifecycle_config l;
  l.backends = backend_configs(c);
  l.allow_adhoc_backends = c.allow_adhoc_backends;
  l.limits = c.spec_limits;
  l.evidence = c.evidence;
  l.health_wait = std::chrono::seconds(c.deadlines.health_wait_s);
  l.idle_wait = std::chrono::seconds(c.deadlines.idle_wait_s);
  l.first_byte_floor = std::chrono::seconds(c.deadlines.first_byte_floor_s);
  l.first_byte_multiple = c.deadlines.first_byte_multiple;
  l.repro_trials = c.repro.trials;
  l.repro_max_bursts = c.repro.max_bursts;
  l.repro_max_bursts_limit = c.repro.max_bursts_limit;
  l.max_queued_jobs = c.max_queued_jobs;
  l.managed.executable = c.managed.llama_server;
  for (const auto& m : c.managed.models) l.managed.models.push_back({m.name, m.path});
  l.managed.ctx_per_slot = c.managed.ctx_per_slot;
  l.managed.startup_timeout = std::chrono::seconds(c.managed.startup_timeout_s);
  // Beside the database; a database in memory (`logitaudit run` or `advise` without --db) keeps
  // none of them, nor its servers' logs, which go to the temporary directory.
  l.managed.log_dir = !c.managed.log_dir.empty()          ? std::filesystem::path(c.managed.log_dir)
                      : storage::is_postgres_url(c.database) ? std::filesystem::absolute("managed-logs")
                      : c.database == ":memory:"             ? std::filesystem::temp_directory_path() / "logitaudit-managed-logs"
                                                             : std::filesystem::absolute(c.database).parent_path() / "managed-logs";
  return l;
}

queue_config queue_settings(const config::daemon_config& c) {
  queue_config q;
  q.max_running_jobs = c.max_running_jobs;
  q.resume_interrupted = c.interrupted_jobs == config::interrupted_policy::resume;
  return q;
}

alert_settings alert_settings_of(const config::daemon_config& c) {
  alert_settings a;
  for (const auto& w : c.alerts.webhooks) a.webhooks.push_back({w.url, w.secret, {w.on.begin(), w.on.end()}});
  a.attempts = c.alerts.attempts;
  a.backoff = std::chrono::milliseconds(c.alerts.backoff_ms);
  a.timeout = std::chrono::milliseconds(c.alerts.timeout_ms);
  return a;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::string member_id() {
  static const std::string id = [] {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
    return host_name() + ":" + std::to_string(::getpid()) + ":" + std::to_string(ms.count());
  }();
  return id;
}

}  // namespace logitaudit::daemon
