// Series as JSON: per audit its time, status, validity, fingerprints, baselines' digests,
// counts with Jeffreys intervals, batching evidence, predictions, and the transition into it.
#include "history_routes.hpp"

#include <nlohmann/json.hpp>

#include "record_json.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

constexpr int kDefaultAudits = 30, kMaxAudits = 500;

json interval_json(int k, int n, double confidence) {
  if (n == 0) return nullptr;
  const auto i = audit::jeffreys_interval(k, n, confidence);
  return json::array({i.low, i.high});
}

json rate_json(int k, int n) { return n ? json(static_cast<double>(k) / n) : json(nullptr); }

json transition_json(const audit::transition& t) {
  json shifts = json::array();
  for (const auto& r : t.rate_shifts)
    shifts.push_back({{"condition", r.condition},
                      {"level", r.level},
                      {"before", {{"identical", r.before_k}, {"n", r.before_n}}},
                      {"after", {{"identical", r.after_k}, {"n", r.after_n}}},
                      {"direction", r.upward() ? "up" : "down"},
                      {"p", r.p},
                      {"q", r.q},
                      {"state", std::string(audit::to_string(r.state))}});
  return {{"from_audit", t.from_job},
          {"classification", t.classification()},
          {"kind", std::string(audit::to_string(t.kind))},
          {"state", t.state ? json(std::string(audit::to_string(*t.state))) : json(nullptr)},
          {"changed_fields", t.changed_fields},
          {"field_details", t.field_details},
          {"changed_baselines", t.changed_baselines},
          {"shared_baselines", t.shared_baselines},
          {"canary_changed", t.canary_changed},
          {"machine_changes", t.machine_changes},
          {"rate_shifts", shifts},
          {"reason", t.reason},
          {"revised_at", t.revised_at ? json(t.revised_at) : json(nullptr)},
          {"first_classified", t.first_classified},
          {"reverts", t.reverts ? json(t.reverts) : json(nullptr)},
          {"returned_to", t.returned_to ? json(t.returned_to) : json(nullptr)},
          {"sentence", t.sentence()}};
}

api_response no_series(const std::string& what, const std::string& field) {
  return error_response(service_errc::not_found, "not_found", "no series " + what, field);
}

// audits=N: 1..500.
std::optional<api_response> read_audits(const request_context& ctx, int& audits) {
  audits = kDefaultAudits;
  if (!ctx.query.count("audits")) return std::nullopt;
  auto n = parse_positive_id(ctx.query.at("audits"));
  if (!n || *n > kMaxAudits) return error_response(service_errc::invalid, "invalid_query", "must be between 1 and 500", "audits");
  audits = static_cast<int>(*n);
  return std::nullopt;
}

json series_list(const std::vector<series_view>& all) {
  json out = {{"series", json::array()}};
  for (const auto& v : all) out["series"].push_back(series_json(v));
  return out;
}

net::awaitable<api_response> route_series(history_service* h, request_context ctx) {
  storage::series_filter f;
  f.backend = query_or(ctx, "backend");
  f.spec_hash = query_or(ctx, "spec_hash");
  if (ctx.query.count("schedule")) {
    auto s = parse_positive_id(ctx.query.at("schedule"));
    if (!s) co_return error_response(service_errc::invalid, "invalid_query", "must be a positive schedule id", "schedule");
    f.schedule = *s;
  }
  int audits = 0;
  if (auto bad = read_audits(ctx, audits)) co_return *bad;
  auto all = co_await h->series(f, audits);
  // A filter that names a series that does not exist is a 404, as an unknown id is.
  if (all.empty() && (!f.backend.empty() || !f.spec_hash.empty() || f.schedule)) {
    const char* field = !f.spec_hash.empty() ? "spec_hash" : f.schedule ? "schedule" : "backend";
    co_return no_series(std::string("matches ") + field + " '" + query_or(ctx, field).substr(0, 64) + "'", field);
  }
  co_return json_response(200, series_list(all).dump(-1, ' ', false, json::error_handler_t::replace));
}

net::awaitable<api_response> route_timeline(history_service* h, schedule_service* schedules, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  std::optional<storage::schedule_record> schedule;
  if (id) schedule = co_await schedules->get(*id);
  if (!schedule)
    co_return error_response(service_errc::not_found, "not_found", "no schedule with id '" + ctx.params[0].substr(0, 64) + "'", "id");
  int audits = 0;
  if (auto bad = read_audits(ctx, audits)) co_return *bad;
  storage::series_filter f;
  f.schedule = *id;
  f.backend = query_or(ctx, "backend");
  auto all = co_await h->series(f, audits);
  if (all.empty() && !f.backend.empty())
    co_return no_series("of schedule " + std::to_string(*id) + " on backend '" + f.backend.substr(0, 64) + "'", "backend");
  json out = series_list(all);
  out["schedule"] = *id;
  co_return json_response(200, out.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

std::string series_name(const storage::series_key& k) {
  return (k.schedule ? "schedule " + std::to_string(*k.schedule) : "spec " + k.spec_hash) + " / " + k.backend;
}

// The share of an audit's baselines equal to the previous audit's (null without one).
json equal_previous_json(const audit::series_audit& a, const audit::series_audit* previous) {
  if (!previous || a.baselines.empty()) return nullptr;
  int k = 0, n = 0;
  for (const auto& [label, d] : a.baselines)
    if (auto it = previous->baselines.find(label); it != previous->baselines.end()) {
      ++n;
      k += it->second == d;
    }
  return {{"equal", k}, {"n", n}, {"audit", previous->job}};
}

json audit_reference_json(const audit::series_audit& a) {
  if (!a.reference) return nullptr;
  return {{"audit", a.reference->audit},
          {"baselines", {{"equal", a.reference->baselines_matching}, {"n", a.reference->baselines}}},
          {"streams", {{"equal", a.reference->streams_matching}, {"n", a.reference->streams}}},
          {"not_comparable", a.reference->not_comparable},
          {"baselines_not_comparable", a.reference->baselines_not_comparable},
          {"all_match", a.reference->all_match()},
          {"differing_fields", a.reference->differing_fields}};
}

json conditions_json(const audit::series_audit& a, const audit::history_thresholds& t) {
  json conditions = json::array();
  for (const auto& c : a.conditions) {
    json row = {{"condition", c.condition},
                {"control", c.control},
                {"n", c.n},
                {"logit_identical", c.logit_identical},
                {"logit_rate", rate_json(c.logit_identical, c.n)},
                {"logit_interval", interval_json(c.logit_identical, c.n, t.confidence)},
                {"token_identical", c.token_identical},
                {"token_rate", rate_json(c.token_identical, c.n)},
                {"token_interval", interval_json(c.token_identical, c.n, t.confidence)},
                {"flagged", c.flagged},
                {"failed", c.failed}};
    row["batching"] = c.bursts ? json{{"bursts", c.bursts}, {"batched", c.batched}} : json(nullptr);
    conditions.push_back(std::move(row));
  }
  return conditions;
}

// One audit of a series' timeline: what moves across audits (the share of its baselines equal to
// the previous audit's and, a nightly gate, to the reference's: a step looks like a step), its
// conditions' rates, its predictions and the transition into it.
json timeline_entry(const series_view& v, const audit::series_audit& a, const audit::series_audit* previous,
                    const audit::transition* into) {
  json baselines = json::array();
  for (const auto& [label, d] : a.baselines)
    baselines.push_back({{"label", label}, {"logit_digest", d.logit}, {"token_digest", d.token}});
  json predictions = json::array();
  if (auto it = v.predictions.find(a.job); it != v.predictions.end())
    for (const auto& p : it->second)
      predictions.push_back(
          {{"id", p.id}, {"outcome", std::string(audit::to_string(p.outcome))}, {"k", p.k}, {"n", p.n}, {"flagged", p.flagged}});
  const auto self = "/v1/audits/" + std::to_string(a.job);
  return {{"audit", a.job},
          {"time", a.time},
          {"status", std::string(audit::to_string(a.status))},
          {"valid", a.valid},
          {"invalid_reason", a.invalid_reason},
          {"server_changed", a.server_changed},
          {"fingerprint",
           {{"before", a.before ? fingerprint_fields_json(*a.before) : json(nullptr)},
            {"after", a.after ? fingerprint_fields_json(*a.after) : json(nullptr)}}},
          {"baselines", baselines},
          {"baselines_equal_previous", equal_previous_json(a, previous)},
          {"reference", audit_reference_json(a)},
          {"conditions", conditions_json(a, v.thresholds)},
          {"predictions", predictions},
          {"transition", into ? transition_json(*into) : json(nullptr)},
          {"links", {{"audit", self}, {"report", self + "/report"}, {"runs", self + "/runs"}}}};
}

json series_json(const series_view& v) {
  const auto& k = v.summary.key;
  const auto& t = v.thresholds;
  json series = {{"name", series_name(k)},
                 {"schedule", k.schedule ? json(*k.schedule) : json(nullptr)},
                 {"spec_hash", k.schedule ? v.summary.last_spec_hash : k.spec_hash},
                 {"backend", k.backend},
                 {"audits_total", v.summary.audits},
                 {"first_audit", v.summary.first_job},
                 {"last_audit", v.summary.last_job},
                 {"state", std::string(audit::to_string(v.history.state))},
                 {"thresholds",
                  {{"confidence", t.confidence},
                   {"rate_shift_q", t.rate_shift_q},
                   {"rate_min_history", t.rate_min_history},
                   {"rate_window", t.rate_window},
                   {"confirm_after", t.confirm_after}}},
                 {"segments", json::array()},
                 {"timeline", json::array()}};
  for (const auto& s : v.history.segments)
    series["segments"].push_back(
        {{"first_audit", s.first_job}, {"last_audit", s.last_job}, {"audits", s.audits}, {"opened_by", s.opened_by}});
  std::map<std::int64_t, const audit::transition*> into;
  for (const auto& tr : v.history.transitions) into[tr.to_job] = &tr;
  const audit::series_audit* previous = nullptr;  // the last audit with baselines
  for (const auto& a : v.audits) {
    auto tr = into.find(a.job);
    series["timeline"].push_back(timeline_entry(v, a, previous, tr != into.end() ? tr->second : nullptr));
    if (!a.baselines.empty()) previous = &a;
  }
  return series;
}

// The audit's standing against its reference (null without one): the gate's alert names the
// fingerprint fields that differ.
json reference_payload(const series_view& v, std::int64_t audit) {
  for (const auto& a : v.audits)
    if (a.job == audit && a.reference)
      return {{"audit", a.reference->audit},
              {"streams", {{"equal", a.reference->streams_matching}, {"n", a.reference->streams}}},
              {"not_comparable", a.reference->not_comparable},
              {"differing_fields", a.reference->differing_fields}};
  return nullptr;
}

json alert_payload_json(const series_view& v, std::int64_t audit, const std::string& kind,
                        const audit::transition* transition) {
  const auto& k = v.summary.key;
  const auto self = "/v1/audits/" + std::to_string(audit);
  const std::string timeline = k.schedule ? "/v1/schedules/" + std::to_string(*k.schedule) + "/timeline" : "/v1/series";
  return {{"kind", kind},
          {"series",
           {{"name", series_name(k)},
            {"schedule", k.schedule ? json(*k.schedule) : json(nullptr)},
            {"spec_hash", k.schedule ? v.summary.last_spec_hash : k.spec_hash},
            {"backend", k.backend},
            {"state", std::string(audit::to_string(v.history.state))}}},
          {"audit", audit},
          {"transition", transition ? transition_json(*transition) : json(nullptr)},
          {"reference", reference_payload(v, audit)},
          {"links",
           {{"audit", self},
            {"report", self + "/report"},
            {"timeline", timeline + "?backend=" + k.backend + (k.schedule ? "" : "&spec_hash=" + k.spec_hash)}}},
          {"sent_by", "logitauditd"}};
}

std::string loop_alert_payload(const std::string& loop, const std::string& problem, std::int64_t unhealthy_since_unix,
                               std::int64_t last_progress_unix, const std::string& daemon) {
  const json j = {{"kind", "loop_unhealthy"},
                  {"loop", loop},
                  {"problem", problem},
                  {"unhealthy_since_unix", unhealthy_since_unix},
                  {"last_progress_unix", last_progress_unix},
                  {"daemon", daemon},
                  {"sent_by", "logitauditd"}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

net::awaitable<api_response> route_deliveries(history_service* h, request_context ctx) {
  int limit = 50;
  if (ctx.query.count("limit")) {
    auto n = parse_positive_id(ctx.query.at("limit"));
    if (!n || *n > 500) co_return error_response(service_errc::invalid, "invalid_query", "must be between 1 and 500", "limit");
    limit = static_cast<int>(*n);
  }
  json out = {{"deliveries", json::array()}};
  for (const auto& d : co_await h->deliveries(limit)) {
    const json payload = json::parse(d.payload, nullptr, false);
    out["deliveries"].push_back({{"id", d.id},
                                 {"url", d.url},
                                 {"status", std::string(audit::to_string(d.status))},
                                 {"attempts", d.attempts},
                                 {"last_status", d.last_status ? json(d.last_status) : json(nullptr)},
                                 {"last_error", d.last_error},
                                 {"created_at", d.created_at},
                                 {"last_attempt_at", d.last_attempt_at},
                                 {"payload", payload.is_discarded() ? json(nullptr) : payload}});
  }
  co_return json_response(200, out.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

void add_history_routes(router& r, const route_services& s) {
  history_service& history = s.history;
  schedule_service& schedules = s.schedules;
  using http::verb;
  const query_param audits{"audits", "integer", "the newest this many audits of each series (default 30)", {}, 1, 500};
  const query_param backend{"backend", "string", "only the series on this backend"};
  r.add(verb::get, "/v1/alerts/deliveries",
        {.operation_id = "listAlertDeliveries",
         .summary = "The newest alert deliveries to webhooks: status, attempts, the receiver's last answer, the payload",
         .query = {{"limit", "integer", "at most this many (default 50)", {}, 1, 500}},
         .response_schema = "DeliveryList", .tag = "history"},
        [&history](const request_context& c) { return route_deliveries(&history, c); });
  r.add(verb::get, "/v1/series",
        {.operation_id = "listSeries",
         .summary = "Series of audits (a schedule's, or ad-hoc audits of one spec) per backend, with timelines, segments and state",
         .query = {backend, {"spec_hash", "string", "only the series of this spec"}, {"schedule", "integer", "only this schedule's series", {}, 1, 0}, audits},
         .response_schema = "SeriesList", .tag = "history"},
        [&history](const request_context& c) { return route_series(&history, c); });
  r.add(verb::get, "/v1/schedules/{id}/timeline",
        {.operation_id = "getScheduleTimeline",
         .summary = "The schedule's series, one per backend: per audit its fingerprints, digests, identical counts with intervals, "
                    "batching, predictions and the classified transition into it",
         .query = {backend, audits}, .response_schema = "SeriesList", .tag = "history"},
        [&history, &schedules](const request_context& c) { return route_timeline(&history, &schedules, c); });
}

}  // namespace logitaudit::api
