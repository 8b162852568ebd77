// Schedule handlers: JSON in and out, every member validated and named.
#include "schedule_routes.hpp"

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "record_json.hpp"
#include "codec/field_table.hpp"
#include "spec_json.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

api_response no_schedule(const std::string& s) {
  return error_response(service_errc::not_found, "not_found", "no schedule with id '" + s.substr(0, 64) + "'", "id");
}


// A schedule's body, one table: a patch may give any member; a create must give cron and spec.
fields::field<schedule_patch> missed_field() {
  using P = schedule_patch;
  fields::field<P> f{.name = "missed", .doc = "what a fire the daemon was down for becomes"};
  f.choices = [] { return json("$missed_fire_policies"); };
  f.read = [](fields::reader& r, const json& v, const std::string& at, P& out, const fields::field<P>&) {
    std::string text;
    if (!fields::read_value(r, v, at, text)) return;
    out.missed = audit::parse_missed_fire_policy(text);
    if (!out.missed) r.problem(at, "must be \"run_once\" or \"skip\"");
  };
  f.write = [](json&, const P&, const fields::field<P>&) {};  // a request's body only
  f.schema = [](const fields::field<P>& self) { return fields::decorate({{"type", "string"}}, {}, self.choices, self.doc); };
  return f;
}

// The spec, read by the spec's own reader; its problems are named under "spec".
fields::field<schedule_patch> spec_field() {
  using P = schedule_patch;
  fields::field<P> f{.name = "spec", .doc = "the audit each fire submits"};
  f.read = [](fields::reader& r, const json& v, const std::string& at, P& out, const fields::field<P>&) {
    auto spec = read_spec(v.dump());
    if (spec) out.spec = std::move(*spec);
    else
      for (const auto& p : spec.error()) r.problem(at + (p.field.empty() ? "" : "." + p.field), p.message);
  };
  f.write = [](json&, const P&, const fields::field<P>&) {};
  f.schema = [](const fields::field<P>&) { return json{{"$ref", "#/components/schemas/Spec"}}; };
  return f;
}

const fields::object_table<schedule_patch>& body_table(bool create) {
  using P = schedule_patch;
  static const std::vector<fields::field<P>> patch_rows = {
      fields::optional<&P::cron>("cron", "5 fields: minute hour day-of-month month day-of-week"),
      fields::optional<&P::timezone>("timezone", "UTC or an IANA zone"),
      fields::optional<&P::enabled>("enabled"),
      missed_field(),
      spec_field(),
  };
  static const std::vector<fields::field<P>> create_rows = [] {
    auto rows = patch_rows;
    for (auto& f : rows) f.required = f.name == "cron" || f.name == "spec";
    return rows;
  }();
  static const fields::object_table<P> patch{.name = "SchedulePatch", .doc = "", .fields = patch_rows};
  static const fields::object_table<P> created{.name = "ScheduleCreate", .doc = "", .fields = create_rows};
  return create ? created : patch;
}

struct body_fields {
  schedule_patch patch;
  std::vector<audit::spec_problem> problems;
};

body_fields read_body(const std::string& body, bool create) {
  body_fields out;
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    out.problems.push_back({"", "the body must be a JSON object"});
    return out;
  }
  fields::reader r(out.problems);
  fields::read_object(r, j, "", body_table(create), out.patch);
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
  for (bool create : {true, false}) {
    const auto& t = body_table(create);
    r.add_schema(std::string(t.name), fields::object_schema(t).dump());
  }
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
