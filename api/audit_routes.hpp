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
  audit::spec_limits limits;
  daemon_metrics* metrics = nullptr;  // /metrics when set (lives on the server's executor)
  read_model* reads = nullptr;        // bodies of final audits; none kept when null
  std::string version = "0";
};

// Adds /healthz, /readyz, /metrics, /openapi.json and the /v1 audit routes to `r`.
// `service` (and the metrics and read model) must outlive the server.
void add_audit_routes(router& r, audit_service& service, route_options options);

// Constant-time comparison of a presented token with the configured ones.
bool token_accepted(const std::string& authorization_header, const std::vector<std::string>& tokens);
// A request may mutate: no tokens are configured, or it carries one of them.
bool authorized(const request_context& ctx, const route_options& o);
// The 401 of a request without an accepted token.
api_response unauthorized();

// The 400 naming the first query parameter that is not among `known`; nullopt when all are.
std::optional<api_response> unknown_query(const request_context& ctx, std::initializer_list<const char*> known);
// A query parameter's decoded value, or `fallback`.
std::string query_or(const request_context& ctx, const char* key, std::string fallback = {});

// The JSON error of a service error, with its status from the one table.
api_response error_response(const service_error& e);

}  // namespace logitaudit::api
