// The /v1 audit routes of logitauditd over an audit_service: JSON in, JSON (or a report) out,
// every field validated with a message that names it, nothing stored for a rejected request,
// and the bodies of final audits served from the read model.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "audit_service.hpp"
#include "http_server.hpp"
#include "route_families.hpp"
#include "metrics.hpp"
#include "read_model.hpp"

namespace logitaudit::api {


// Adds /healthz, /readyz, /v1/info, /metrics and the /v1 audit routes to `r`. `tokens` and
// `protect_reads` are what /v1/info reports; the router enforces them (router::protect).
// `service` (and the metrics and read model) must outlive the server.
void add_audit_routes(router& r, const route_services& s);
// The 404 of a path whose {id} segment names no audit.
api_response no_audit(const std::string& segment);
// A query parameter's decoded value, or `fallback`.
std::string query_or(const request_context& ctx, const char* key, std::string fallback = {});

}  // namespace logitaudit::api
