// Repro routes: parse, call the service, render.
#include "repro_routes.hpp"

#include <nlohmann/json.hpp>

#include "audit_routes.hpp"
#include "record_json.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

json repro_json(const repro_view& v) {
  json files = json::array();
  for (const auto& [name, text] : v.files) files.push_back(name);
  const std::string self = "/v1/repros/" + std::to_string(v.id);
  json j = {{"id", v.id},
            {"audit", v.audit},
            {"run", v.run},
            {"backend", v.backend},
            {"status", v.status},
            {"created_at", v.created_at},
            {"started_at", v.started_at},
            {"finished_at", v.finished_at},
            {"progress", {{"bursts", v.bursts}, {"max_bursts", v.max_bursts}, {"trials", v.trials}, {"phase", v.phase}}},
            {"original", v.original},
            {"files", files},
            {"links", {{"self", self}, {"cancel", self + "/cancel"}, {"script", self + "/files/repro.sh"}}}};
  if (v.status != "queued" && v.status != "running") {
    j["outcome"] = v.outcome;
    j["message"] = v.message;
    j["minimal"] = v.minimal;
  }
  return j;
}

// POST /v1/audits/{id}/runs/{run}/repro
net::awaitable<api_response> route_post_repro(audit_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  auto run = parse_positive_id(ctx.params[1]);
  if (!run) co_return error_response(service_errc::not_found, "not_found", "no run '" + ctx.params[1].substr(0, 32) + "'", "run");
  repro_settings settings;
  if (!ctx.body.empty()) {
    const json b = json::parse(ctx.body, nullptr, false);
    if (!b.is_object()) co_return error_response(service_errc::invalid, "invalid_repro", "the body must be a JSON object", "body");
    for (const auto& [k, v] : b.items()) {
      if (k != "trials" && k != "max_bursts")
        co_return error_response(service_errc::invalid, "invalid_repro", "unknown field (known: trials, max_bursts)", k);
      if (!v.is_number_integer()) co_return error_response(service_errc::invalid, "invalid_repro", "must be an integer", k);
    }
    if (b.contains("trials")) settings.trials = b["trials"].get<int>();
    if (b.contains("max_bursts")) settings.max_bursts = b["max_bursts"].get<int>();
  }
  auto r = co_await svc->start_repro(*id, *run, settings);
  if (!r) co_return error_response(r.error());
  co_return json_response(202, dump(repro_json(*r)));
}

// The repro a path's id segment names; nullopt when there is none.
net::awaitable<std::optional<repro_view>> find_repro(audit_service* svc, std::string segment,
                                                     std::chrono::milliseconds wait = std::chrono::milliseconds(0)) {
  auto id = parse_positive_id(segment);
  std::optional<repro_view> r;  // no co_await in a conditional expression: GCC 12 miscompiles it
  if (id) r = co_await svc->repro(*id, wait);
  co_return r;
}

api_response no_repro(const std::string& segment) {
  return error_response(service_errc::not_found, "not_found", "no repro with id '" + segment.substr(0, 32) + "'", "id");
}

// GET /v1/repros/{id}
net::awaitable<api_response> route_get_repro(audit_service* svc, request_context ctx) {
  std::chrono::milliseconds wait(0);
  if (ctx.query.count("wait")) {
    auto s = parse_positive_id(ctx.query.at("wait"));
    if (!s || *s > 300) co_return error_response(service_errc::invalid, "invalid_query", "must be 1 to 300 seconds", "wait");
    wait = std::chrono::seconds(*s);
  }
  auto r = co_await find_repro(svc, ctx.params[0], wait);
  if (!r) co_return no_repro(ctx.params[0]);
  co_return json_response(200, dump(repro_json(*r)));
}

// POST /v1/repros/{id}/cancel
net::awaitable<api_response> route_post_repro_cancel(audit_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_repro(ctx.params[0]);
  auto r = co_await svc->cancel_repro(*id);
  if (!r) co_return error_response(r.error());
  co_return json_response(202, dump(repro_json(*r)));
}

// GET /v1/repros/{id}/files/{name}
net::awaitable<api_response> route_get_repro_file(audit_service* svc, request_context ctx) {
  auto r = co_await find_repro(svc, ctx.params[0]);
  if (!r) co_return no_repro(ctx.params[0]);
  auto f = r->files.find(ctx.params[1]);
  if (f == r->files.end())
    co_return error_response(service_errc::not_found, "not_found",
                             r->status == "queued" || r->status == "running"
                                 ? "the repro has not ended: its bundle is written when it ends"
                                                    : "no file '" + ctx.params[1].substr(0, 64) + "' in this bundle",
                             "name");
  api_response out;
  out.body = f->second;
  out.content_type = f->first.ends_with(".json") ? "application/json"
                     : f->first.ends_with(".sh") ? "text/x-shellscript; charset=utf-8"
                                                 : "text/plain; charset=utf-8";
  co_return out;
}

}  // namespace

void add_repro_routes(router& r, const route_services& s) {
  audit_service& service = s.audits;
  audit_service* svc = &service;
  using http::verb;
  // Each route: a named, non-coroutine lambda that hands its state to a free coroutine (GCC 12).
  r.add(verb::post, "/v1/audits/{id}/runs/{run}/repro",
        {.operation_id = "startRepro",
         .summary = "Shrink a divergent burst run to its minimal reproduction against the live server (ddmin), as a background task",
         .needs = access::write, .request_schema = "ReproSettings", .status = 202, .response_schema = "Repro", .tag = "audits"},
        [svc](const request_context& ctx) { return route_post_repro(svc, ctx); });
  r.add(verb::get, "/v1/repros/{id}",
        {.operation_id = "getRepro",
         .summary = "A repro: progress, then its outcome, minimal case and bundle files; ?wait=S answers when it ends "
                    "(or after S seconds)",
         .query = {{"wait", "integer", "long poll: answer when the repro ends or after this many seconds", {}, 1, 300}},
         .response_schema = "Repro", .tag = "audits"},
        [svc](const request_context& ctx) { return route_get_repro(svc, ctx); });
  r.add(verb::post, "/v1/repros/{id}/cancel",
        {.operation_id = "cancelRepro", .summary = "Stop a running repro at its next probe (the smallest case so far is kept)",
         .needs = access::write, .status = 202, .response_schema = "Repro", .tag = "audits"},
        [svc](const request_context& ctx) { return route_post_repro_cancel(svc, ctx); });
  r.add(verb::get, "/v1/repros/{id}/files/{name}",
        {.operation_id = "getReproFile",
         .summary = "One file of a repro's bundle: repro.sh, expected.json, fingerprint.json, command.txt, upstream.md",
         .media = "text/plain", .tag = "audits"},
        [svc](const request_context& ctx) { return route_get_repro_file(svc, ctx); });
}

}  // namespace logitaudit::api
