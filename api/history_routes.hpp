// The history routes: GET /v1/series (filtered by backend, spec hash, schedule) and
// GET /v1/schedules/{id}/timeline, each series with its audits, segments and classified
// transitions (audit/history.hpp).
#pragma once

#include "audit_routes.hpp"
#include "history_service.hpp"
#include "schedule_service.hpp"

namespace logitaudit::api {

void add_history_routes(router& r, const route_services& s);

// "schedule 3 / tiny", "spec 1a2b3c4d5e6f7a8b / tiny".
std::string series_name(const storage::series_key& k);

// The body of an alert: what kind, the series, the audit, the transition (null for a failed
// audit), the series' state, links.
nlohmann::json alert_payload_json(const series_view& v, std::int64_t audit, const std::string& kind,
                                  const audit::transition* transition);
// The body of a loop_unhealthy alert: the daemon's own, not a series'. Untrusted text (a
// database's message) is replaced where it is not UTF-8, so it always serialises.
std::string loop_alert_payload(const std::string& loop, const std::string& problem, std::int64_t unhealthy_since_unix,
                               std::int64_t last_progress_unix, const std::string& daemon);

// One series as the API shows it (the CLI's `history --json` prints the same).
nlohmann::json series_json(const series_view& v);

}  // namespace logitaudit::api
