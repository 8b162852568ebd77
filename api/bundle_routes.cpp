// Bundle routes: export and import.
#include "bundle_routes.hpp"

#include <nlohmann/json.hpp>

#include "audit_routes.hpp"
#include "record_json.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

// GET /v1/audits/{id}/bundle
net::awaitable<api_response> route_get_bundle(audit_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  std::vector<std::int64_t> ids(1, *id);  // (a braced list in a coroutine's co_await trips GCC 12)
  auto text = co_await svc->export_bundle(std::move(ids));
  if (!text) co_return error_response(text.error());
  api_response r;
  r.body = std::move(*text);
  r.content_type = "application/x-ndjson";
  r.headers.emplace_back(http::field::content_disposition, "attachment; filename=\"audit-" + std::to_string(*id) + ".bundle\"");
  co_return r;
}

// POST /v1/imports
net::awaitable<api_response> route_post_imports(audit_service* svc, request_context ctx) {
  auto imported = co_await svc->import_bundle(std::move(ctx.body));
  if (!imported) co_return error_response(imported.error());
  json audits = json::array();
  bool fresh = false;
  for (std::size_t i = 0; i < imported->jobs.size(); ++i) {
    audits.push_back({{"id", imported->jobs[i]}, {"already_imported", static_cast<bool>(imported->already[i])},
                      {"links", {{"self", "/v1/audits/" + std::to_string(imported->jobs[i])}}}});
    fresh = fresh || !imported->already[i];
  }
  co_return json_response(fresh ? 201 : 200, dump(json{{"audits", audits}}));
}

}  // namespace

void add_bundle_routes(router& r, const route_services& s) {
  audit_service* svc = &s.audits;
  using http::verb;
  r.add(verb::get, "/v1/audits/{id}/bundle",
        {.operation_id = "exportBundle",
         .summary = "The ended audit as an evidence bundle: spec, predictions, fingerprints, every run with its stream bytes, "
                    "verdicts and findings, under one content digest (docs/protocol.md)",
         .media = "application/x-ndjson", .tag = "audits"},
        [svc](const request_context& ctx) { return route_get_bundle(svc, ctx); });
  r.add(verb::post, "/v1/imports",
        {.operation_id = "importBundle",
         .summary = "Add a bundle's audits to this database, read-only, with their provenance; 201, or 200 when every one "
                    "was imported before",
         .needs = access::write, .request_schema = "Bundle", .request_media = "application/x-ndjson", .status = 201,
         .response_schema = "ImportResult", .tag = "audits"},
        [svc](const request_context& ctx) { return route_post_imports(svc, ctx); });
}

}  // namespace logitaudit::api
