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
#include "metrics.hpp"
#include "read_model.hpp"

namespace logitaudit::api {

struct route_options {
  std::vector<std::string> tokens;  // when non-empty, mutating routes need one as a bearer token
  bool protect_reads = false;       // with tokens: every route but health and the console's files needs one
  audit::spec_limits limits;
  daemon_metrics* metrics = nullptr;  // /metrics when set (lives on the server's executor)
  read_model* reads = nullptr;        // bodies of final audits; none kept when null
  std::string version = "0";
};

// Adds /healthz, /readyz, /v1/info, /metrics and the /v1 audit routes to `r`. `tokens` and
// `protect_reads` are what /v1/info reports; the router enforces them (router::protect).
// `service` (and the metrics and read model) must outlive the server.
void add_audit_routes(router& r, audit_service& service, route_options options);
// The 404 of a path whose {id} segment names no audit.
api_response no_audit(const std::string& segment);
// A query parameter's decoded value, or `fallback`.
std::string query_or(const request_context& ctx, const char* key, std::string fallback = {});

}  // namespace logitaudit::api
