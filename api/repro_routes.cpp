// Repro routes: parse, call the service, render.
#include "repro_routes.hpp"

#include <nlohmann/json.hpp>

#include "audit_routes.hpp"
#include "clients/repro.hpp"
#include "record_json.hpp"
#include "codec/field_table.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

using view_field = fields::field<repro_view>;

std::string self_link(const repro_view& v) { return "/v1/repros/" + std::to_string(v.id); }
std::vector<std::string> file_names(const repro_view& v) {
  std::vector<std::string> out;
  for (const auto& [name, text] : v.files) out.push_back(name);
  return out;
}
std::map<std::string, std::string> links(const repro_view& v) {
  return {{"self", self_link(v)}, {"cancel", self_link(v) + "/cancel"}, {"script", self_link(v) + "/files/repro.sh"}};
}
bool still_going(const repro_view& v, const view_field&) { return v.status == "queued" || v.status == "running"; }

// The search's progress, an object of its own on the wire.
const fields::object_table<repro_view>& progress_table() {
  static const std::vector<view_field> rows = {
      fields::member<&repro_view::bursts>("bursts"), fields::member<&repro_view::max_bursts>("max_bursts"),
      fields::member<&repro_view::trials>("trials"), fields::member<&repro_view::phase>("phase", "solo, full, requests, lengths")};
  static const fields::object_table<repro_view> t{.name = "", .doc = "", .fields = rows, .shown = true};
  return t;
}

view_field progress_field() {
  view_field f{.name = "progress"};
  f.read = [](fields::reader&, const json&, const std::string&, repro_view&, const view_field&) {};
  f.write = [](json& j, const repro_view& v, const view_field&) { j["progress"] = fields::write_object(progress_table(), v); };
  f.schema = [](const view_field&) { return fields::object_schema(progress_table(), true); };
  return f;
}

view_field once_ended(view_field f) {
  f.omit = still_going;
  return f;
}

const fields::object_table<repro_view>& repro_table() {
  static const std::vector<view_field> rows = [] {
    auto status = fields::member<&repro_view::status>("status");
    status.choices = [] { return json("$job_statuses"); };
    auto outcome = fields::member<&repro_view::outcome>("outcome");
    outcome.choices = [] { return json(audit::names_of(audit::kEnumerators<clients::repro_outcome>)); };
    return std::vector{
        fields::member<&repro_view::id>("id"),
        fields::member<&repro_view::audit>("audit"),
        fields::member<&repro_view::run>("run"),
        fields::member<&repro_view::backend>("backend"),
        status,
        fields::member<&repro_view::created_at>("created_at"),
        fields::member<&repro_view::started_at>("started_at"),
        fields::member<&repro_view::finished_at>("finished_at"),
        progress_field(),
        fields::member<&repro_view::original>("original", "the divergent case, described"),
        fields::computed<repro_view, file_names>("files", "the bundle's files, once done"),
        fields::computed<repro_view, links>("links"),
        once_ended(outcome),
        once_ended(fields::member<&repro_view::message>("message")),
        once_ended(fields::member<&repro_view::minimal>("minimal", "the smallest case that still diverges, described")),
    };
  }();
  static const fields::object_table<repro_view> t{.name = "Repro", .doc = "", .fields = rows, .shown = true};
  return t;
}

json repro_json(const repro_view& v) { return fields::write_object(repro_table(), v); }

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
  audit_service* svc = &s.audits;
  r.add_schema("Repro", fields::object_schema(repro_table(), true).dump());
  using http::verb;
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
