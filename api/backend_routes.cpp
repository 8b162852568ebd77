// Backend routes: the list and the selftest.
#include "backend_routes.hpp"

#include "clients/machine.hpp"

#include <nlohmann/json.hpp>

#include "record_json.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

// GET /v1/backends
net::awaitable<api_response> route_get_backends(audit_service* svc, request_context) {
  const auto list = co_await svc->backends();
  json out = {{"backends", json::array()}, {"allow_adhoc_backends", list.allow_adhoc}};
  for (const auto& b : list.backends)
    out["backends"].push_back({{"name", b.name}, {"url", b.url}, {"api", b.api}, {"busy", b.busy}});
  // The host managed servers run on, and the ggml CPU variants they may be given (a sweep's
  // cpu_variant axis): read now, never cached; the devices (its device axis), kept a minute.
  const auto host = clients::host_machine();
  auto fact = [&host](const char* key) { return host.count(key) ? host.at(key) : std::string(); };
  out["host"] = {{"cpu_model", fact("cpu_model")},
                 {"cpu_features", fact("cpu_features")},
                 {"ggml_cpu_variants", clients::runnable_cpu_variants(host)},
                 {"devices", list.devices},
                 {"device_words", list.device_words}};
  co_return json_response(200, dump(out));
}

// POST /v1/backends/{name}/selftest
net::awaitable<api_response> route_post_selftest(audit_service* svc, request_context ctx) {
  auto r = co_await svc->selftest(ctx.params[0]);
  if (!r) co_return error_response(r.error());
  json cases = json::array();
  for (const auto& c : r->power.cases) {
    json one = {{"path", c.path},       {"fault", std::string(audit::to_string(c.fault))},
                {"position", c.position}, {"applicable", c.applicable},
                {"caught", c.caught},     {"reported", c.detail}};
    if (c.applicable) {
      one["expected"] = {{"level", std::string(audit::to_string(c.expected.level))}, {"position", c.expected.position}};
      if (c.expected.max_ulp) one["expected"]["max_ulp"] = *c.expected.max_ulp;
    }
    if (!c.error.empty()) one["error"] = c.error;
    cases.push_back(std::move(one));
  }
  const json out = {{"id", r->id},
                    {"backend", r->backend},
                    {"url", r->url},
                    {"taken_at", r->taken_at},
                    {"paths", r->paths},
                    {"caught", r->power.caught},
                    {"faults", r->power.faults},
                    {"equivalents_flagged", r->power.equivalents_flagged},
                    {"equivalents", r->power.equivalents},
                    {"passed", r->power.passed()},
                    {"summary", "harness power: " + r->power.summary()},
                    {"cases", cases}};
  co_return json_response(200, dump(out));
}

}  // namespace

void add_backend_routes(router& r, const route_services& s) {
  audit_service* svc = &s.audits;
  using http::verb;
  r.add(verb::get, "/v1/backends",
        {.operation_id = "listBackends", .summary = "The configured backends and whether an audit holds each",
         .response_schema = "BackendList", .tag = "audits"},
        [svc](const request_context& ctx) { return route_get_backends(svc, ctx); });
  r.add(verb::post, "/v1/backends/{name}/selftest",
        {.operation_id = "selftestBackend",
         .summary = "Seed faults into a configured backend's answers on every path and store how many the comparator caught",
         .needs = access::write, .response_schema = "Selftest", .tag = "audits"},
        [svc](const request_context& ctx) { return route_post_selftest(svc, ctx); });
}

}  // namespace logitaudit::api
