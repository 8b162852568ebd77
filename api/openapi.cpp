// Route table -> OpenAPI 3.1: one operation per documented route, from its route_doc.
#include "openapi.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <mutex>
#include <stdexcept>

#include "audit/enum_names.hpp"
#include "audit/spec.hpp"
#include "audit/states.hpp"
#include "clients/api_registry.hpp"
#include "embedded_files.hpp"
#include "spec_json.hpp"
#include "storage/documents.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

json schema_ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

json error_content() { return {{"application/json", {{"schema", schema_ref("Error")}}}}; }

// The enums whose values live in a table of their own.
std::vector<std::string> enum_values(const std::string& name) {
  if (name == "$backend_api_kinds") return clients::api_kinds().names();
  if (name == "$condition_kinds") return audit::names_of(audit::kConditionKinds);
  if (name == "$presets") return audit::preset_names();
  if (name == "$arrival_kinds") return audit::names_of(audit::kArrivalKinds);
  if (name == "$job_statuses") return audit::names_of(audit::kJobStatuses);
  if (name == "$missed_fire_policies") return audit::names_of(audit::kMissedFirePolicies);
  if (name == "$ggml_cpu_variants") return {audit::kGgmlCpuVariants.begin(), audit::kGgmlCpuVariants.end()};
  throw std::logic_error("openapi_schemas.json names an unknown enum " + name);
}

void fill_enums(json& j) {
  if (j.is_object()) {
    for (auto& [key, value] : j.items()) {
      if (key == "enum" && value.is_string()) value = enum_values(value.get<std::string>());
      else fill_enums(value);
    }
  } else if (j.is_array()) {
    for (auto& v : j) fill_enums(v);
  }
}

json components_schemas(const router& routes) {
  for (const auto& f : embedded_files())
    if (f.name == "openapi_schemas.json") {
      auto schemas = json::parse(f.body);
      // The documents' shapes, from their field tables.
      schemas.update(json::parse(storage::spec_schemas()));
      schemas.update(json::parse(storage::findings_schemas()));
      schemas.update(json::parse(report_schemas()));
      for (const auto& [name, text] : routes.schemas()) schemas[name] = json::parse(text);  // the families' own
      fill_enums(schemas);
      return schemas;
    }
  return json::object();
}

json query_parameter(const query_param& q) {
  json schema = {{"type", q.type}};
  if (!q.values.empty()) schema["enum"] = q.values;
  if (q.type == "integer") {
    schema["minimum"] = q.minimum;
    if (q.maximum > 0) schema["maximum"] = q.maximum;
  }
  return {{"name", q.name}, {"in", "query"}, {"required", false}, {"description", q.description}, {"schema", schema}};
}

json operation(const std::string& method, const std::string& pattern, const route_doc& d, const router& routes) {
  json op = {{"operationId", d.operation_id}, {"summary", d.summary}, {"tags", {d.tag}}};
  json params = json::array();
  for (std::size_t i = 0; (i = pattern.find('{', i)) != std::string::npos;) {
    const auto close = pattern.find('}', i);
    const std::string name = pattern.substr(i + 1, close - i - 1);
    params.push_back({{"name", name},
                      {"in", "path"},
                      {"required", true},
                      {"description", name == "run" ? "a run id of the audit" : "the resource's id"},
                      {"schema", {{"type", "integer"}, {"minimum", 1}}}});
    i = close;
  }
  for (const auto& q : d.query) params.push_back(query_parameter(q));
  if (!params.empty()) op["parameters"] = params;
  if (!d.request_schema.empty())
    op["requestBody"] = {{"required", true}, {"content", {{d.request_media, {{"schema", schema_ref(d.request_schema)}}}}}};

  json ok = {{"description", "success"}};
  if (!d.response_schema.empty()) ok["content"][d.media] = {{"schema", schema_ref(d.response_schema)}};
  else if (d.media != "application/json") ok["content"][d.media] = {{"schema", {{"type", "string"}}}};
  else ok["content"][d.media] = {{"schema", {{"type", "object"}}}};
  if (d.operation_id == "getReport")
    for (const char* t : {"text/plain", "text/markdown", "text/csv"}) ok["content"][t] = {{"schema", {{"type", "string"}}}};
  json responses = {{std::to_string(d.status), ok}};
  // Every route refuses unknown query parameters; bodies and parameters are validated.
  responses["400"] = {{"description", "a malformed request: the error names the field"}, {"content", error_content()}};
  const bool token = d.needs == access::write || (d.needs == access::read && routes.reads_protected());
  if (d.needs != access::open)
    responses["401"] = {{"description", token ? "no accepted bearer token" : "no accepted bearer token (when tokens are configured)"},
                        {"content", error_content()}};
  if (pattern.find('{') != std::string::npos)
    responses["404"] = {{"description", "no such resource"}, {"content", error_content()}};
  if (d.operation_id == "getReport" || d.operation_id == "cancelAudit" || d.operation_id == "deleteAudit")
    responses["409"] = {{"description", "the audit is not in a state that allows it"}, {"content", error_content()}};
  if (d.needs == access::write || d.operation_id == "getReadiness")
    responses["503"] = {{"description", "not ready, or the queue is full"}, {"content", error_content()}};
  responses["default"] = {{"description", "an error"}, {"content", error_content()}};
  op["responses"] = responses;
  // Open routes need nothing; mutations need the bearer token; reads need it when protected.
  if (d.needs == access::open || (!token && d.needs == access::read)) op["security"] = json::array();
  else op["security"] = json::array({{{"bearer", json::array()}}});
  (void)method;
  return op;
}

}  // namespace

std::string openapi_document(const router& routes, const std::string& version) {
  json doc = {
      {"openapi", "3.1.0"},
      {"info",
       {{"title", "logitauditd"},
        {"version", version},
        {"description", "Audits whether LLM servers return bit-identical logprobs under load: jobs, their findings, "
                        "runs and logit streams, schedules and the history of their series."},
        {"license", {{"name", "MIT"}, {"identifier", "MIT"}}}}},
      {"servers", json::array({{{"url", "/"}, {"description", "this daemon"}}})},
      {"tags", json::array({{{"name", "audits"}, {"description", "Submit audits and read their findings, runs and streams"}},
                            {{"name", "schedules"}, {"description", "Cron schedules of audits"}},
                            {{"name", "history"}, {"description", "Series of audits over time and their alerts"}},
                            {{"name", "fleet"}, {"description", "The daemons sharing a PostgreSQL database and their leases"}},
                            {{"name", "operations"}, {"description", "Health, readiness, metrics and this document"}}})},
      {"paths", json::object()},
      {"components",
       {{"schemas", components_schemas(routes)},
        {"securitySchemes",
         {{"bearer", {{"type", "http"}, {"scheme", "bearer"}, {"description", "one of the daemon's configured tokens"}}}}}}}};
  for (const auto& e : routes.routes()) {
    if (!e.doc->documented) continue;
    std::string lower = e.method;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    doc["paths"][e.pattern][lower] = operation(e.method, e.pattern, *e.doc, routes);
  }
  return doc.dump(2);
}

namespace {

struct openapi_state {
  const router* routes;
  std::string version;
  std::once_flag built;
  std::string document;
};

net::awaitable<api_response> route_get_openapi(std::shared_ptr<openapi_state> st) {
  std::call_once(st->built, [&] { st->document = openapi_document(*st->routes, st->version); });
  co_return json_response(200, st->document);
}

}  // namespace

void add_openapi_route(router& r, std::string version) {
  auto st = std::make_shared<openapi_state>();
  st->routes = &r;
  st->version = std::move(version);
  r.add(http::verb::get, "/openapi.json",
        {.operation_id = "getOpenApi", .summary = "This document", .needs = access::open, .tag = "operations"},
        [st](const request_context&) { return route_get_openapi(st); });
}

}  // namespace logitaudit::api
