// Schedule handlers: JSON in and out, every member validated and named.
#include "schedule_routes.hpp"

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "spec_json.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;


api_response no_schedule(const std::string& s) {
  return error_response(404, "not_found", "no schedule with id '" + s.substr(0, 64) + "'", "id");
}

json view_json(const schedule_view& v) {
  json j = {{"id", v.id},           {"cron", v.cron},       {"timezone", v.timezone},
            {"enabled", v.enabled}, {"missed", v.missed},   {"created_at", v.created_at},
            {"spec", json::parse(v.spec_json, nullptr, false)},
            {"links", {{"self", "/v1/schedules/" + std::to_string(v.id)},
                       {"history", "/v1/schedules/" + std::to_string(v.id) + "/history"}}}};
  j["next_fire_unix"] = v.next_fire_unix ? json(*v.next_fire_unix) : json(nullptr);
  j["last_fire_unix"] = v.last_fire_unix ? json(*v.last_fire_unix) : json(nullptr);
  return j;
}

api_response problems_response(const std::vector<audit::spec_problem>& ps, const std::string& prefix) {
  std::string all;
  for (const auto& q : ps) all += (all.empty() ? "" : "; ") + (q.field.empty() ? "" : prefix + q.field + ": ") + q.message;
  return error_response(400, "invalid_schedule", all, ps.empty() ? "" : prefix + ps.front().field);
}

// Reads the members of a create or patch body; the spec through the spec parser.
struct body_fields {
  schedule_patch patch;
  std::vector<audit::spec_problem> problems;
};

body_fields read_body(const std::string& body, const audit::spec_limits& limits, bool require) {
  body_fields out;
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    out.problems.push_back({"", "the body must be a JSON object"});
    return out;
  }
  static const std::set<std::string> known = {"cron", "timezone", "enabled", "missed", "spec"};
  for (const auto& [k, v] : j.items())
    if (!known.count(k)) out.problems.push_back({k, "unknown field"});
  auto text = [&](const char* k, std::optional<std::string>& dst) {
    if (!j.contains(k)) return;
    if (!j[k].is_string()) out.problems.push_back({k, "must be a string"});
    else dst = j[k].get<std::string>();
  };
  text("cron", out.patch.cron);
  text("timezone", out.patch.timezone);
  text("missed", out.patch.missed);
  if (j.contains("enabled")) {
    if (!j["enabled"].is_boolean()) out.problems.push_back({"enabled", "must be true or false"});
    else out.patch.enabled = j["enabled"].get<bool>();
  }
  if (out.patch.missed && *out.patch.missed != "run_once" && *out.patch.missed != "skip")
    out.problems.push_back({"missed", "must be \"run_once\" or \"skip\""});
  if (j.contains("spec")) {
    auto spec = parse_spec(j["spec"].dump(), limits);
    if (!spec)
      for (const auto& p : spec.error()) out.problems.push_back({"spec" + (p.field.empty() ? "" : "." + p.field), p.message});
    else out.patch.spec = *spec;
  }
  if (require) {
    if (!out.patch.cron && !j.contains("cron")) out.problems.push_back({"cron", "is required"});
    if (!out.patch.spec && !j.contains("spec")) out.problems.push_back({"spec", "is required"});
  }
  return out;
}

net::awaitable<api_response> route_create(schedule_service* svc, std::shared_ptr<route_options> o, request_context ctx) {
  if (!o->tokens.empty() && !token_accepted(ctx.authorization, o->tokens))
    co_return error_response(401, "unauthorized", "this route needs Authorization: Bearer <token>");
  auto b = read_body(ctx.body, o->limits, true);
  if (!b.problems.empty()) co_return problems_response(b.problems, "");
  auto created = co_await svc->create(*b.patch.cron, b.patch.timezone.value_or("UTC"), b.patch.enabled.value_or(true),
                                      b.patch.missed.value_or("run_once"), *b.patch.spec);
  if (!created) co_return problems_response(created.error(), "");
  co_return json_response(201, view_json(*created).dump());
}

net::awaitable<api_response> route_list(schedule_service* svc, request_context) {
  json out = {{"schedules", json::array()}};
  for (const auto& v : co_await svc->list()) out["schedules"].push_back(view_json(v));
  co_return json_response(200, out.dump());
}

net::awaitable<api_response> route_get(schedule_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_schedule(ctx.params[0]);
  auto v = co_await svc->get(*id);
  if (!v) co_return no_schedule(ctx.params[0]);
  co_return json_response(200, view_json(*v).dump());
}

net::awaitable<api_response> route_patch(schedule_service* svc, std::shared_ptr<route_options> o, request_context ctx) {
  if (!o->tokens.empty() && !token_accepted(ctx.authorization, o->tokens))
    co_return error_response(401, "unauthorized", "this route needs Authorization: Bearer <token>");
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_schedule(ctx.params[0]);
  auto b = read_body(ctx.body, o->limits, false);
  if (!b.problems.empty()) co_return problems_response(b.problems, "");
  auto updated = co_await svc->update(*id, std::move(b.patch));
  if (!updated) co_return no_schedule(ctx.params[0]);
  if (!*updated) co_return problems_response(updated->error(), "");
  co_return json_response(200, view_json(**updated).dump());
}

net::awaitable<api_response> route_delete(schedule_service* svc, std::shared_ptr<route_options> o, request_context ctx) {
  if (!o->tokens.empty() && !token_accepted(ctx.authorization, o->tokens))
    co_return error_response(401, "unauthorized", "this route needs Authorization: Bearer <token>");
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_schedule(ctx.params[0]);
  if (!co_await svc->remove(*id)) co_return no_schedule(ctx.params[0]);
  co_return json_response(200, json{{"deleted", *id}}.dump());
}

net::awaitable<api_response> route_history(schedule_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_schedule(ctx.params[0]);
  auto h = co_await svc->history(*id);
  if (!h) co_return no_schedule(ctx.params[0]);
  json out = {{"schedule", *id}, {"runs", json::array()}};
  for (const auto& f : *h) {
    json held = json::object();
    for (const auto& [pid, ok] : f.held) held[pid] = ok;
    out["runs"].push_back({{"audit", f.job.id},
                           {"status", f.job.status},
                           {"created_at", f.job.created_at},
                           {"finished_at", f.job.finished_at},
                           {"valid", f.valid},
                           {"predictions_held", held},
                           {"report", "/v1/audits/" + std::to_string(f.job.id) + "/report"}});
  }
  co_return json_response(200, out.dump());
}

}  // namespace

void add_schedule_routes(router& r, schedule_service& svc, route_options opts) {
  auto o = std::make_shared<route_options>(std::move(opts));
  using http::verb;
  r.add(verb::post, "/v1/schedules", [&svc, o](const request_context& c) { return route_create(&svc, o, c); });
  r.add(verb::get, "/v1/schedules", [&svc](const request_context& c) { return route_list(&svc, c); });
  r.add(verb::get, "/v1/schedules/{id}", [&svc](const request_context& c) { return route_get(&svc, c); });
  r.add(verb::patch, "/v1/schedules/{id}", [&svc, o](const request_context& c) { return route_patch(&svc, o, c); });
  r.add(verb::delete_, "/v1/schedules/{id}", [&svc, o](const request_context& c) { return route_delete(&svc, o, c); });
  r.add(verb::get, "/v1/schedules/{id}/history", [&svc](const request_context& c) { return route_history(&svc, c); });
}

}  // namespace logitaudit::api
