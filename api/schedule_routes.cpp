// Schedule handlers: JSON in and out, every member validated and named.
#include "schedule_routes.hpp"

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "record_json.hpp"
#include "spec_json.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

api_response no_schedule(const std::string& s) {
  return error_response(service_errc::not_found, "not_found", "no schedule with id '" + s.substr(0, 64) + "'", "id");
}

// Reads the members of a create or patch body; the spec through the spec parser.
struct body_fields {
  schedule_patch patch;
  std::vector<audit::spec_problem> problems;
};

body_fields read_body(const std::string& body, bool require) {
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
  std::optional<std::string> missed;
  text("missed", missed);
  if (missed) {
    out.patch.missed = audit::parse_missed_fire_policy(*missed);
    if (!out.patch.missed) out.problems.push_back({"missed", "must be \"run_once\" or \"skip\""});
  }
  if (j.contains("enabled")) {
    if (!j["enabled"].is_boolean()) out.problems.push_back({"enabled", "must be true or false"});
    else out.patch.enabled = j["enabled"].get<bool>();
  }
  if (j.contains("spec")) {
    auto spec = read_spec(j["spec"].dump());
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

api_response problems_response(std::vector<audit::spec_problem> ps) {
  return error_response(invalid(std::move(ps), "invalid_schedule"));
}

api_response service_problem(service_error e) {
  if (e.kind == service_errc::invalid && e.code.empty()) e.code = "invalid_schedule";
  return error_response(e);
}

net::awaitable<api_response> route_create(schedule_service* svc, request_context ctx) {
  auto b = read_body(ctx.body, true);
  if (!b.problems.empty()) co_return problems_response(std::move(b.problems));
  auto created = co_await svc->create(std::move(b.patch));
  if (!created) co_return service_problem(created.error());
  co_return json_response(201, dump(schedule_json(*created)));
}

net::awaitable<api_response> route_list(schedule_service* svc, request_context) {
  json out = {{"schedules", json::array()}};
  for (const auto& v : co_await svc->list()) out["schedules"].push_back(schedule_json(v));
  co_return json_response(200, dump(out));
}

net::awaitable<api_response> route_get(schedule_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_schedule(ctx.params[0]);
  auto v = co_await svc->get(*id);
  if (!v) co_return no_schedule(ctx.params[0]);
  co_return json_response(200, dump(schedule_json(*v)));
}

net::awaitable<api_response> route_patch(schedule_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_schedule(ctx.params[0]);
  auto b = read_body(ctx.body, false);
  if (!b.problems.empty()) co_return problems_response(std::move(b.problems));
  auto updated = co_await svc->update(*id, std::move(b.patch));
  if (!updated) {
    if (updated.error().kind == service_errc::not_found) co_return no_schedule(ctx.params[0]);
    co_return service_problem(updated.error());
  }
  co_return json_response(200, dump(schedule_json(*updated)));
}

net::awaitable<api_response> route_delete(schedule_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_schedule(ctx.params[0]);
  if (!co_await svc->remove(*id)) co_return no_schedule(ctx.params[0]);
  co_return json_response(200, dump(json{{"deleted", *id}}));
}

net::awaitable<api_response> route_history(schedule_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_schedule(ctx.params[0]);
  auto h = co_await svc->history(*id);
  if (!h) co_return no_schedule(ctx.params[0]);
  json out = {{"schedule", *id}, {"runs", json::array()}};
  for (const auto& f : *h) {
    json held = json::object(), outcomes = json::object();
    for (const auto& p : f.predictions) {
      held[p.id] = p.outcome == audit::prediction_outcome::held;
      outcomes[p.id] = std::string(audit::to_string(p.outcome));
    }
    out["runs"].push_back({{"audit", f.job.id},
                           {"status", std::string(audit::to_string(f.job.status))},
                           {"created_at", f.job.created_at},
                           {"finished_at", f.job.finished_at},
                           {"valid", f.valid},
                           {"predictions_held", held},
                           {"predictions", outcomes},
                           {"report", "/v1/audits/" + std::to_string(f.job.id) + "/report"}});
  }
  co_return json_response(200, dump(out));
}

}  // namespace

void add_schedule_routes(router& r, const route_services& s) {
  schedule_service& svc = s.schedules;
  route_options opts = s.options;
  auto o = std::make_shared<route_options>(std::move(opts));
  using http::verb;
  r.add(verb::post, "/v1/schedules",
        {.operation_id = "createSchedule", .summary = "Create a schedule: a 5-field cron expression (UTC or an IANA zone) and an audit spec",
         .needs = access::write, .request_schema = "ScheduleCreate", .status = 201, .response_schema = "Schedule", .tag = "schedules"},
        [&svc](const request_context& c) { return route_create(&svc, c); });
  r.add(verb::get, "/v1/schedules",
        {.operation_id = "listSchedules", .summary = "List schedules", .response_schema = "ScheduleList", .tag = "schedules"},
        [&svc](const request_context& c) { return route_list(&svc, c); });
  r.add(verb::get, "/v1/schedules/{id}",
        {.operation_id = "getSchedule", .summary = "One schedule with its next fire time", .response_schema = "Schedule",
         .tag = "schedules"},
        [&svc](const request_context& c) { return route_get(&svc, c); });
  r.add(verb::patch, "/v1/schedules/{id}",
        {.operation_id = "updateSchedule", .summary = "Change cron, timezone, spec, enabled or missed", .needs = access::write,
         .request_schema = "SchedulePatch", .response_schema = "Schedule", .tag = "schedules"},
        [&svc](const request_context& c) { return route_patch(&svc, c); });
  r.add(verb::delete_, "/v1/schedules/{id}",
        {.operation_id = "deleteSchedule", .summary = "Delete a schedule (its audits stay)", .needs = access::write,
         .response_schema = "Deleted", .tag = "schedules"},
        [&svc](const request_context& c) { return route_delete(&svc, c); });
  r.add(verb::get, "/v1/schedules/{id}/history",
        {.operation_id = "getScheduleHistory", .summary = "The audits a schedule fired, with their validity and predictions",
         .response_schema = "ScheduleHistory", .tag = "schedules"},
        [&svc](const request_context& c) { return route_history(&svc, c); });
}

}  // namespace logitaudit::api
