// Route handlers: parse, validate, call the service, render.
#include "audit_routes.hpp"

#include <map>

#include <memory>
#include <set>
#include <nlohmann/json.hpp>

#include "audit/report.hpp"
#include "openapi.hpp"
#include "spec_json.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

json summary_json(const job_summary& j) {
  json out = {{"id", j.id},
              {"status", j.status},
              {"progress", {{"done", j.done}, {"total", j.total}, {"failed", j.failed}}},
              {"created_at", j.created_at},
              {"started_at", j.started_at},
              {"finished_at", j.finished_at},
              {"predictions", {{"hash", j.prediction_hash}, {"registered_at", j.predictions_registered_at}}},
              {"tags", j.tags},
              {"backends", j.backends},
              {"links",
               {{"self", "/v1/audits/" + std::to_string(j.id)},
                {"report", "/v1/audits/" + std::to_string(j.id) + "/report"},
                {"cancel", "/v1/audits/" + std::to_string(j.id) + "/cancel"}}}};
  if (!j.error.empty()) out["error"] = j.error;
  return out;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }


api_response bad_id(const std::string& s) {
  return error_response(404, "not_found", "no audit with id '" + s.substr(0, 64) + "'", "id");
}

bool authorized(const request_context& ctx, const route_options& o) {
  return o.tokens.empty() || token_accepted(ctx.authorization, o.tokens);
}

api_response unauthorized() {
  return error_response(401, "unauthorized", "this route needs Authorization: Bearer <token>");
}

// GET /healthz
net::awaitable<api_response> route_get_healthz(request_context) {
  co_return json_response(200, R"({"status":"ok"})");
}

// GET /readyz
net::awaitable<api_response> route_get_readyz(audit_service* svc_ptr, request_context) {
  co_return svc_ptr->ready() ? json_response(200, R"({"status":"ready"})")
                        : error_response(503, "not_ready", "the database or the queue is not ready");
}

// POST /v1/audits
net::awaitable<api_response> route_post_v1_audits(audit_service* svc_ptr, std::shared_ptr<route_options> o, request_context ctx) {
  if (!authorized(ctx, *o)) co_return unauthorized();
  if (ctx.body.empty()) co_return error_response(400, "invalid_spec", "a JSON body (the audit spec) is required");
  auto spec = parse_spec(ctx.body, o->limits);
  if (!spec) {
    const auto& p = spec.error().front();
    std::string all;
    for (const auto& q : spec.error()) all += (all.empty() ? "" : "; ") + (q.field.empty() ? "" : q.field + ": ") + q.message;
    co_return error_response(400, "invalid_spec", all, p.field);
  }
  auto job = co_await svc_ptr->submit(std::move(*spec));
  if (!job) {
    const auto& p = job.error().front();
    if (p.field == "queue") co_return error_response(429, "queue_full", p.message);
    if (p.field == "storage") co_return error_response(507, "storage_full", p.message);
    co_return error_response(400, "invalid_spec", p.message, p.field);
  }
  co_return json_response(202, dump(summary_json(*job)));
}

// GET /v1/audits
net::awaitable<api_response> route_get_v1_audits(audit_service* svc_ptr, request_context ctx) {
  for (const auto& [k, v] : ctx.query)
    if (k != "status" && k != "tag" && k != "before" && k != "limit")
      co_return error_response(400, "invalid_query", "unknown query parameter", k);
  std::string status = ctx.query.count("status") ? ctx.query.at("status") : "";
  static const std::set<std::string> statuses = {"", "queued", "running", "done", "failed", "cancelled", "interrupted"};
  if (!statuses.count(status)) co_return error_response(400, "invalid_query", "unknown status '" + status.substr(0, 32) + "'", "status");
  std::int64_t before = 0;
  if (ctx.query.count("before")) {
    auto b = parse_positive_id(ctx.query.at("before"));
    if (!b) co_return error_response(400, "invalid_query", "must be a positive job id", "before");
    before = *b;
  }
  int limit = 50;
  if (ctx.query.count("limit")) {
    auto l = parse_positive_id(ctx.query.at("limit"));
    if (!l || *l > 500) co_return error_response(400, "invalid_query", "must be between 1 and 500", "limit");
    limit = static_cast<int>(*l);
  }
  // Named, not a temporary: GCC 12 mishandles temporaries passed by value to a coroutine
  // inside a co_await expression.
  const std::string tag = ctx.query.count("tag") ? ctx.query.at("tag") : "";
  auto jobs = co_await svc_ptr->jobs(status, tag, before, limit + 1);
  json out = {{"audits", json::array()}};
  for (std::size_t i = 0; i < jobs.size() && static_cast<int>(i) < limit; ++i) out["audits"].push_back(summary_json(jobs[i]));
  if (static_cast<int>(jobs.size()) > limit) out["next"] = "/v1/audits?before=" + std::to_string(jobs[static_cast<std::size_t>(limit) - 1].id);
  co_return json_response(200, dump(out));
}

// GET /v1/audits/{id}
net::awaitable<api_response> route_get_v1_audits_id(audit_service* svc_ptr, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return bad_id(ctx.params[0]);
  auto j = co_await svc_ptr->job(*id);
  if (!j) co_return bad_id(ctx.params[0]);
  co_return json_response(200, dump(summary_json(*j)));
}

// GET /v1/audits/{id}/report
net::awaitable<api_response> route_get_v1_audits_id_report(audit_service* svc_ptr, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return bad_id(ctx.params[0]);
  const std::string format = ctx.query.count("format") ? ctx.query.at("format") : "json";
  if (format != "json" && format != "text" && format != "markdown" && format != "csv")
    co_return error_response(400, "invalid_query", "format must be json, text, markdown or csv", "format");
  auto j = co_await svc_ptr->job(*id);
  if (!j) co_return bad_id(ctx.params[0]);
  if (j->status == "queued" || j->status == "running")
    co_return error_response(409, "not_finished", "audit " + std::to_string(*id) + " is " + j->status + "; its report comes when it ends");
  static const std::map<std::string, std::string> content_types = {{"text", "text/plain; charset=utf-8"},
                                                                    {"markdown", "text/markdown; charset=utf-8"},
                                                                    {"csv", "text/csv; charset=utf-8"},
                                                                    {"json", "application/json"}};
  if (const std::string* kept = svc_ptr->rendered_report(*id, format))
    co_return api_response{200, *kept, content_types.at(format)};
  auto f = co_await svc_ptr->findings(*id);
  if (!f) co_return error_response(409, "no_findings", "audit " + std::to_string(*id) + " has no findings (" + j->status + ")");
  std::string body = format == "text"       ? audit::render_text(*f)
                     : format == "markdown" ? audit::render_markdown(*f)
                     : format == "csv"      ? audit::render_csv(*f)
                                            : findings_to_json(*f);
  svc_ptr->keep_rendered_report(*id, format, body);
  co_return api_response{200, std::move(body), content_types.at(format)};
}

// POST /v1/audits/{id}/cancel
net::awaitable<api_response> route_post_v1_audits_id_cancel(audit_service* svc_ptr, std::shared_ptr<route_options> o, request_context ctx) {
  if (!authorized(ctx, *o)) co_return unauthorized();
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return bad_id(ctx.params[0]);
  switch (co_await svc_ptr->cancel(*id)) {
    case cancel_outcome::not_found: co_return bad_id(ctx.params[0]);
    case cancel_outcome::already_finished:
      co_return error_response(409, "already_finished", "audit " + std::to_string(*id) + " has already ended");
    case cancel_outcome::cancelled: break;
  }
  auto j = co_await svc_ptr->job(*id);
  co_return json_response(202, dump(summary_json(*j)));
}

// DELETE /v1/audits/{id}
net::awaitable<api_response> route_delete_v1_audits_id(audit_service* svc_ptr, std::shared_ptr<route_options> o, request_context ctx) {
  if (!authorized(ctx, *o)) co_return unauthorized();
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return bad_id(ctx.params[0]);
  if (!co_await svc_ptr->remove(*id)) co_return bad_id(ctx.params[0]);
  co_return json_response(200, dump(json{{"deleted", *id}}));
}

// GET /v1/backends
net::awaitable<api_response> route_get_v1_backends(audit_service* svc_ptr, request_context) {
  co_return json_response(200, co_await svc_ptr->backends_json());
}

json run_json(const run_view& r) {
  json j = {{"id", r.id},           {"group", r.group},         {"request", r.request},
            {"backend", r.backend}, {"condition", r.condition}, {"replicate", r.replicate},
            {"prompt", r.prompt},   {"compared", r.compared},   {"status", r.ok ? "ok" : "failed"},
            {"params", {{"temperature", r.temperature}, {"cache_prompt", r.cache_prompt}}},
            {"client_ns", {{"write", r.write_ns}, {"first_byte", r.first_byte_ns}, {"last_byte", r.last_byte_ns}}}};
  if (r.seed) j["params"]["seed"] = *r.seed;
  if (!r.ok) j["error"] = r.error;
  if (r.ok) j["digests"] = {{"token", r.token_digest}, {"logit", r.logit_digest}, {"tokens", r.token_count}};
  if (r.logit_identical) j["verdict"] = {{"logit_identical", *r.logit_identical}, {"token_identical", *r.token_identical}};
  return j;
}

// GET /v1/compare?a=ID&b=ID
net::awaitable<api_response> route_get_compare(audit_service* svc, request_context ctx) {
  for (const auto& [k, v] : ctx.query)
    if (k != "a" && k != "b") co_return error_response(400, "invalid_query", "unknown query parameter", k);
  for (const char* k : {"a", "b"})
    if (!ctx.query.count(k) || !parse_positive_id(ctx.query.at(k)))
      co_return error_response(400, "invalid_query", "must be an audit id", k);
  const auto a = *parse_positive_id(ctx.query.at("a")), b = *parse_positive_id(ctx.query.at("b"));
  auto c = co_await svc->compare(a, b);
  if (!c) co_return error_response(404, "not_found", "no audit with that id", c.error());
  json out = {{"a", c->a}, {"b", c->b}, {"baselines", json::array()}, {"fingerprint_differences", c->fingerprint_differences}};
  int compared = 0, logit = 0, token = 0;
  for (const auto& p : c->baselines) {
    json j = {{"backend", p.backend}, {"prompt", p.prompt}, {"temperature", p.temperature}, {"in_a", p.in_a}, {"in_b", p.in_b}};
    if (p.seed) j["seed"] = *p.seed;
    if (p.result) {
      ++compared;
      logit += p.result->logit_identical;
      token += p.result->token_identical;
      j["logit_identical"] = p.result->logit_identical;
      j["token_identical"] = p.result->token_identical;
      j["first_logit_difference"] = p.result->first_logit_difference;
      j["first_token_difference"] = p.result->first_token_difference;
      j["max_abs_delta"] = p.result->max_abs_delta;
      j["max_ulp"] = p.result->max_ulp;
    }
    out["baselines"].push_back(j);
  }
  out["summary"] = {{"compared", compared}, {"logit_identical", logit}, {"token_identical", token}};
  co_return json_response(200, dump(out));
}

// GET /openapi.json
net::awaitable<api_response> route_get_openapi(std::shared_ptr<std::string> doc) { co_return json_response(200, *doc); }

// GET /metrics
net::awaitable<api_response> route_get_metrics(audit_service* svc, std::shared_ptr<route_options> o, request_context) {
  auto jobs = co_await svc->job_counts();
  co_return api_response{200, o->metrics->render(jobs), "text/plain; version=0.0.4; charset=utf-8"};
}

// GET /v1/audits/{id}/runs
net::awaitable<api_response> route_get_runs(audit_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return bad_id(ctx.params[0]);
  for (const auto& [k, v] : ctx.query)
    if (k != "condition" && k != "backend") co_return error_response(400, "invalid_query", "unknown query parameter", k);
  const std::string condition = ctx.query.count("condition") ? ctx.query.at("condition") : "";
  const std::string backend = ctx.query.count("backend") ? ctx.query.at("backend") : "";
  auto runs = co_await svc->runs(*id, condition, backend);
  if (!runs) co_return bad_id(ctx.params[0]);
  json out = {{"runs", json::array()}};
  for (const auto& r : *runs) out["runs"].push_back(run_json(r));
  co_return json_response(200, dump(out));
}

// GET /v1/audits/{id}/runs/{run}/stream
net::awaitable<api_response> route_get_stream(audit_service* svc, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  auto run = parse_positive_id(ctx.params[1]);
  if (!id) co_return bad_id(ctx.params[0]);
  if (!run) co_return error_response(404, "not_found", "no run '" + ctx.params[1].substr(0, 64) + "' in this audit", "run");
  auto v = co_await svc->stream(*id, *run);
  if (!v) co_return error_response(404, "not_found", "no run " + std::to_string(*run) + " in audit " + std::to_string(*id), "run");
  json j = run_json(v->run);
  j["content"] = v->content;
  j["keying"] = v->stream.keying == audit::token_keying::id ? "id" : "text";
  j["tokens"] = json::array();
  for (const auto& t : v->stream.tokens) {
    json top = json::array();
    for (const auto& e : t.top) top.push_back({{"id", e.key}, {"logprob", e.logprob}});
    j["tokens"].push_back({{"id", t.key}, {"logprob", t.logprob}, {"top", top}});
  }
  co_return json_response(200, dump(j));
}

}  // namespace

bool token_accepted(const std::string& header, const std::vector<std::string>& tokens) {
  constexpr std::string_view prefix = "Bearer ";
  if (!header.starts_with(prefix)) return false;
  const std::string_view presented = std::string_view(header).substr(prefix.size());
  bool ok = false;
  for (const auto& t : tokens) {
    // Compare every byte of equal-length candidates; the length is not secret.
    unsigned diff = presented.size() != t.size();
    for (std::size_t i = 0; i < t.size(); ++i) diff |= static_cast<unsigned char>(i < presented.size() ? presented[i] : 0) ^ static_cast<unsigned char>(t[i]);
    ok = ok || diff == 0;
  }
  return ok;
}

void add_audit_routes(router& r, audit_service& svc, route_options opts) {
  auto o = std::make_shared<route_options>(std::move(opts));
  using http::verb;

  r.add(verb::get, "/healthz", [](const request_context& ctx) { return route_get_healthz(ctx); });
  r.add(verb::get, "/readyz", [&svc](const request_context& ctx) { return route_get_readyz(&svc, ctx); });

  r.add(verb::post, "/v1/audits", [&svc, o](const request_context& ctx) { return route_post_v1_audits(&svc, o, ctx); });

  r.add(verb::get, "/v1/audits", [&svc](const request_context& ctx) { return route_get_v1_audits(&svc, ctx); });

  r.add(verb::get, "/v1/audits/{id}", [&svc](const request_context& ctx) { return route_get_v1_audits_id(&svc, ctx); });

  r.add(verb::get, "/v1/audits/{id}/report", [&svc](const request_context& ctx) { return route_get_v1_audits_id_report(&svc, ctx); });

  r.add(verb::get, "/v1/audits/{id}/runs", [&svc](const request_context& ctx) { return route_get_runs(&svc, ctx); });
  r.add(verb::get, "/v1/audits/{id}/runs/{run}/stream",
        [&svc](const request_context& ctx) { return route_get_stream(&svc, ctx); });
  r.add(verb::post, "/v1/audits/{id}/cancel", [&svc, o](const request_context& ctx) { return route_post_v1_audits_id_cancel(&svc, o, ctx); });

  r.add(verb::delete_, "/v1/audits/{id}", [&svc, o](const request_context& ctx) { return route_delete_v1_audits_id(&svc, o, ctx); });

  if (o->metrics)
    r.add(verb::get, "/metrics", [&svc, o](const request_context& ctx) { return route_get_metrics(&svc, o, ctx); });
  // The document is built from the table as it is once every route is in; see the end.
  auto openapi = std::make_shared<std::string>();
  r.add(verb::get, "/openapi.json", [openapi](const request_context&) { return route_get_openapi(openapi); });
  r.add(verb::get, "/v1/compare", [&svc](const request_context& ctx) { return route_get_compare(&svc, ctx); });
  r.add(verb::get, "/v1/backends", [&svc](const request_context& ctx) { return route_get_v1_backends(&svc, ctx); });
  *openapi = openapi_document(r, o->version);
}

}  // namespace logitaudit::api
