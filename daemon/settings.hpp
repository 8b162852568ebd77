// The daemon's parts configured from one daemon_config: the lifecycle's backends, limits and
// evidence thresholds, the queue's concurrency and resume policy.
#pragma once

#include "config/daemon_config.hpp"
#include "job_lifecycle.hpp"
#include "alerts.hpp"
#include "job_queue.hpp"

namespace logitaudit::daemon {

// The configured backends as the client sees them (the configuration was validated, so every
// URL parses and every API kind is registered).
std::map<std::string, clients::backend_config> backend_configs(const config::daemon_config& c);

lifecycle_config lifecycle_settings(const config::daemon_config& c);
queue_config queue_settings(const config::daemon_config& c);
alert_settings alert_settings_of(const config::daemon_config& c);

// This machine's host name, and this process's name in a fleet: host, pid and start time in
// milliseconds (unique even when a pid is reused).
std::string host_name();
std::string member_id();

}  // namespace logitaudit::daemon
