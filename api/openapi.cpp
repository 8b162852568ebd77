// Route table -> OpenAPI paths.
#include "openapi.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace logitaudit::api {

std::string openapi_document(const router& routes, const std::string& version) {
  using json = nlohmann::json;
  static const std::map<std::string, std::string> summaries = {
      {"GET /healthz", "Liveness: the process serves HTTP"},
      {"GET /readyz", "Readiness: the database and the queue are up"},
      {"GET /metrics", "Prometheus metrics"},
      {"GET /openapi.json", "This document"},
      {"POST /v1/audits", "Submit an audit (a spec, or a preset with overrides); 202 with the job"},
      {"GET /v1/audits", "List audits, newest first (status, tag, before, limit)"},
      {"GET /v1/audits/{id}", "One audit: status, progress, predictions, links; ?wait=S answers when it ends (or after S seconds)"},
      {"GET /v1/audits/{id}/report", "The findings table (format=json|text|markdown|csv)"},
      {"GET /v1/audits/{id}/runs", "The audit's runs with the server's account and their verdicts and evidence flags (condition, backend filters)"},
      {"GET /v1/audits/{id}/runs/{run}/stream", "One run's logit stream: tokens, logprobs, top-k, digests, the server's account"},
      {"GET /v1/audits/{id}/bursts", "Every burst: condition, width, launch spread, overlap, the server's busy slots per decode and timed concurrency, warnings, and whether it batched"},
      {"GET /v1/audits/{id}/fingerprints", "Each backend's fingerprint before and after the audit, with the time each was taken"},
      {"POST /v1/audits/{id}/cancel", "Cancel at the next request-group boundary"},
      {"DELETE /v1/audits/{id}", "Delete the audit and all its rows"},
      {"GET /v1/backends", "Configured backends"},
      {"GET /v1/compare", "Baseline streams of two audits (a, b) compared, with their fingerprint differences"},
      {"POST /v1/schedules", "Create a schedule: a 5-field cron expression (UTC or an IANA zone) and an audit spec"},
      {"GET /v1/schedules", "List schedules"},
      {"GET /v1/schedules/{id}", "One schedule with its next fire time"},
      {"PATCH /v1/schedules/{id}", "Change cron, timezone, spec, enabled or missed"},
      {"DELETE /v1/schedules/{id}", "Delete a schedule (its audits stay)"},
      {"GET /v1/schedules/{id}/history", "The audits a schedule fired, with their validity and predictions"},
      {"GET /v1/schedules/{id}/timeline", "The schedule's series (one per backend): per audit its fingerprints, baseline digests, identical counts with Jeffreys intervals, batching evidence, predictions, and the classified transition into it (backend, audits)"},
      {"GET /v1/alerts/deliveries", "The newest alert deliveries to webhooks: status (pending, delivered, failed), attempts, the receiver's last status and error, the payload (limit)"},
      {"GET /v1/series", "Series of audits (a schedule's, or ad-hoc audits of one spec) per backend, with their timelines, segments and state (backend, spec_hash, schedule, audits)"},
  };
  const json error_schema = {
      {"type", "object"},
      {"required", {"error"}},
      {"properties",
       {{"error",
         {{"type", "object"},
          {"required", {"code", "message"}},
          {"properties", {{"code", {{"type", "string"}}}, {"message", {{"type", "string"}}}, {"field", {{"type", "string"}}}}}}}}}};
  json doc = {{"openapi", "3.1.0"},
              {"info", {{"title", "logitauditd"}, {"version", version},
                        {"description", "Audits whether LLM servers return bit-identical logprobs under load."}}},
              {"paths", json::object()},
              {"components", {{"schemas", {{"Error", error_schema}}}}}};
  for (const auto& [method, pattern] : routes.routes()) {
    std::string lower = method;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    json error_ref = {{"$ref", "#/components/schemas/Error"}};
    json op;
    op["summary"] = summaries.count(method + " " + pattern) ? summaries.at(method + " " + pattern) : pattern;
    op["responses"]["default"] = {{"description", "error"},
                                  {"content", {{"application/json", {{"schema", error_ref}}}}}};
    const std::string ok = method == "POST" && pattern == "/v1/audits" ? "202" : method == "POST" && pattern == "/v1/schedules" ? "201" : "200";
    op["responses"][ok] = {{"description", "success"}};
    json params = json::array();
    for (std::size_t i = 0; (i = pattern.find('{', i)) != std::string::npos;) {
      const auto close = pattern.find('}', i);
      params.push_back({{"name", pattern.substr(i + 1, close - i - 1)}, {"in", "path"}, {"required", true},
                        {"schema", {{"type", "integer"}, {"minimum", 1}}}});
      i = close;
    }
    if (!params.empty()) op["parameters"] = params;
    doc["paths"][pattern][lower] = op;
  }
  return doc.dump(2);
}

}  // namespace logitaudit::api
