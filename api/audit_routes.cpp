// Route handlers: parse, validate, call the service, render; final audits' bodies through
// the read model.
#include "audit_routes.hpp"

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "audit/enum_names.hpp"
#include "audit/report.hpp"
#include "audit/states.hpp"
#include "record_json.hpp"
#include "spec_json.hpp"
#include "storage/documents.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

struct route_state {
  audit_service* svc;
  route_options options;
};
using state_ptr = std::shared_ptr<route_state>;

api_response no_audit(const std::string& s) {
  return error_response(service_errc::not_found, "not_found", "no audit with id '" + s.substr(0, 64) + "'", "id");
}

// A final audit's body from the read model, if it is kept there.
std::optional<api_response> kept(const route_state& st, std::int64_t id, const std::string& key) {
  if (!st.options.reads) return std::nullopt;
  auto b = st.options.reads->find(id, key);
  if (!b) return std::nullopt;
  api_response r;
  r.content_type = b->content_type;
  r.shared_body = std::shared_ptr<const std::string>(b, &b->text);
  return r;
}

// Keeps a 200 body of a final audit for the next reader.
api_response keep(const route_state& st, audit::job_status status, std::int64_t id, const std::string& key, api_response r) {
  if (st.options.reads && r.status == 200 && audit::is_final(status))
    st.options.reads->keep(id, key, std::make_shared<rendered_body>(rendered_body{r.body, r.content_type}));
  return r;
}

// GET /healthz
net::awaitable<api_response> route_get_healthz(request_context) { co_return json_response(200, R"({"status":"ok"})"); }

// GET /readyz
net::awaitable<api_response> route_get_readyz(state_ptr st, request_context) {
  co_return st->svc->ready() ? json_response(200, R"({"status":"ready"})")
                             : error_response(service_errc::unavailable, "not_ready", "the database or the queue is not ready");
}

// POST /v1/audits
net::awaitable<api_response> route_post_audits(state_ptr st, request_context ctx) {
  if (ctx.body.empty()) co_return error_response(service_errc::invalid, "invalid_spec", "a JSON body (the audit spec) is required");
  auto spec = read_spec(ctx.body);
  if (!spec) co_return error_response(invalid(spec.error(), "invalid_spec"));
  auto job = co_await st->svc->submit(std::move(*spec));
  if (!job) co_return error_response(job.error());
  co_return json_response(202, dump(job_json(*job)));
}

// GET /v1/audits
net::awaitable<api_response> route_get_audits(state_ptr st, request_context ctx) {
  storage::job_query q;
  if (ctx.query.count("status")) {
    q.status = audit::parse_job_status(ctx.query.at("status"));
    if (!q.status)
      co_return error_response(service_errc::invalid, "invalid_query", "unknown status '" + ctx.query.at("status").substr(0, 32) + "'", "status");
  }
  if (ctx.query.count("before")) {
    auto b = parse_positive_id(ctx.query.at("before"));
    if (!b) co_return error_response(service_errc::invalid, "invalid_query", "must be a positive job id", "before");
    q.before = *b;
  }
  q.limit = 50;
  if (ctx.query.count("limit")) {
    auto l = parse_positive_id(ctx.query.at("limit"));
    if (!l || *l > 500) co_return error_response(service_errc::invalid, "invalid_query", "must be between 1 and 500", "limit");
    q.limit = static_cast<int>(*l);
  }
  q.tag = query_or(ctx, "tag");
  const int limit = q.limit;
  q.limit = limit + 1;  // one more says whether there is a next page
  auto jobs = co_await st->svc->jobs(q);
  json out = {{"audits", json::array()}};
  for (std::size_t i = 0; i < jobs.size() && static_cast<int>(i) < limit; ++i) out["audits"].push_back(job_json(jobs[i]));
  if (static_cast<int>(jobs.size()) > limit)
    out["next"] = "/v1/audits?before=" + std::to_string(jobs[static_cast<std::size_t>(limit) - 1].id);
  co_return json_response(200, dump(out));
}

// GET /v1/audits/{id}[?wait=SECONDS[&done=N]]
net::awaitable<api_response> route_get_audit(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  if (auto hit = kept(*st, *id, "summary")) co_return *hit;
  std::optional<storage::job_record> j;
  if (ctx.query.count("done") && !ctx.query.count("wait"))
    co_return error_response(service_errc::invalid, "invalid_query", "done= goes with wait=", "done");
  if (ctx.query.count("wait")) {
    auto s = parse_positive_id(ctx.query.at("wait"));
    if (!s || *s > 300) co_return error_response(service_errc::invalid, "invalid_query", "must be 1 to 300 seconds", "wait");
    std::optional<std::int64_t> done_above;
    if (ctx.query.count("done")) {
      const std::string& d = ctx.query.at("done");
      auto n = d == "0" ? std::optional<std::int64_t>(0) : parse_positive_id(d);
      if (!n) co_return error_response(service_errc::invalid, "invalid_query", "must be a count of requests (0 or more)", "done");
      done_above = *n;
    }
    j = co_await st->svc->wait(*id, std::chrono::seconds(*s), done_above);
  } else {
    j = co_await st->svc->job(*id);
  }
  if (!j) co_return no_audit(ctx.params[0]);
  co_return keep(*st, j->status, *id, "summary", json_response(200, dump(job_json(*j))));
}

// GET /v1/audits/{id}/spec
net::awaitable<api_response> route_get_spec(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  auto j = co_await st->svc->job(*id);
  if (!j) co_return no_audit(ctx.params[0]);
  co_return json_response(200, j->spec_json);
}

// GET /v1/audits/{id}/report
net::awaitable<api_response> route_get_report(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  const std::string format = query_or(ctx, "format", "json");
  static const std::map<std::string, std::string> content_types = {{"text", "text/plain; charset=utf-8"},
                                                                    {"markdown", "text/markdown; charset=utf-8"},
                                                                    {"csv", "text/csv; charset=utf-8"},
                                                                    {"json", "application/json"}};
  if (!content_types.count(format))
    co_return error_response(service_errc::invalid, "invalid_query", "format must be json, text, markdown or csv", "format");
  const std::string key = "report?" + format;
  if (auto hit = kept(*st, *id, key)) co_return *hit;
  auto j = co_await st->svc->job(*id);
  if (!j) co_return no_audit(ctx.params[0]);
  if (!audit::is_final(j->status))
    co_return error_response(service_errc::conflict, "not_finished", "audit " + std::to_string(*id) + " is " +
                                                      std::string(audit::to_string(j->status)) + "; its report comes when it ends");
  if (j->findings_json.empty())
    co_return error_response(service_errc::conflict, "no_findings", "audit " + std::to_string(*id) + " has no findings (" +
                                                     std::string(audit::to_string(j->status)) + ")");
  // The findings were stored as this JSON when the audit ended; the other formats render them.
  std::string body = j->findings_json;
  if (format != "json") {
    const auto& f = j->findings;
    if (!f) co_return error_response(service_errc::internal, "internal", "the stored findings of audit " + std::to_string(*id) + " do not parse");
    body = format == "text" ? audit::render_text(*f) : format == "markdown" ? audit::render_markdown(*f) : audit::render_csv(*f);
  }
  co_return keep(*st, j->status, *id, key, api_response{200, std::move(body), content_types.at(format)});
}

// GET /v1/audits/{id}/runs
net::awaitable<api_response> route_get_runs(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  storage::run_filter filter{query_or(ctx, "condition"), query_or(ctx, "backend")};
  const std::string key = "runs?" + filter.condition + "\x1f" + filter.backend;
  if (auto hit = kept(*st, *id, key)) co_return *hit;
  auto j = co_await st->svc->job(*id);
  if (!j) co_return no_audit(ctx.params[0]);
  auto runs = co_await st->svc->runs(*id, filter);
  if (!runs) co_return no_audit(ctx.params[0]);
  json out = {{"audit", *id}, {"runs", json::array()}};
  for (const auto& r : *runs) out["runs"].push_back(run_json(r));
  co_return keep(*st, j->status, *id, key, json_response(200, dump(out)));
}

// GET /v1/audits/{id}/runs/{run}/stream
net::awaitable<api_response> route_get_stream(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  auto run = parse_positive_id(ctx.params[1]);
  if (!id) co_return no_audit(ctx.params[0]);
  if (!run) co_return error_response(service_errc::not_found, "not_found", "no run '" + ctx.params[1].substr(0, 64) + "' in this audit", "run");
  const std::string key = "stream/" + std::to_string(*run);
  if (auto hit = kept(*st, *id, key)) co_return *hit;
  auto j = co_await st->svc->job(*id);
  if (!j) co_return no_audit(ctx.params[0]);
  auto s = co_await st->svc->stream(*id, *run);
  if (!s) co_return error_response(service_errc::not_found, "not_found", "no run " + std::to_string(*run) + " in audit " + std::to_string(*id), "run");
  co_return keep(*st, j->status, *id, key, json_response(200, dump(stream_json(*s))));
}

// GET /v1/audits/{id}/bursts
net::awaitable<api_response> route_get_bursts(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  if (auto hit = kept(*st, *id, "bursts")) co_return *hit;
  auto j = co_await st->svc->job(*id);
  if (!j) co_return no_audit(ctx.params[0]);
  auto bursts = co_await st->svc->bursts(*id);
  if (!bursts) co_return no_audit(ctx.params[0]);
  json out = {{"audit", *id}, {"bursts", json::array()}};
  for (const auto& b : *bursts) out["bursts"].push_back(burst_json(b));
  co_return keep(*st, j->status, *id, "bursts", json_response(200, dump(out)));
}

// GET /v1/audits/{id}/fingerprints
net::awaitable<api_response> route_get_fingerprints(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  if (auto hit = kept(*st, *id, "fingerprints")) co_return *hit;
  auto j = co_await st->svc->job(*id);
  if (!j) co_return no_audit(ctx.params[0]);
  auto fps = co_await st->svc->fingerprints(*id);
  if (!fps) co_return no_audit(ctx.params[0]);
  json out = {{"audit", *id}, {"fingerprints", json::array()}};
  for (const auto& f : *fps) out["fingerprints"].push_back(fingerprint_json(f));
  co_return keep(*st, j->status, *id, "fingerprints", json_response(200, dump(out)));
}

// GET /v1/audits/{id}/bundle
net::awaitable<api_response> route_get_bundle(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  std::vector<std::int64_t> ids(1, *id);  // (a braced list in a coroutine's co_await trips GCC 12)
  auto text = co_await st->svc->export_bundle(std::move(ids));
  if (!text) co_return error_response(text.error());
  api_response r;
  r.body = std::move(*text);
  r.content_type = "application/x-ndjson";
  r.headers.emplace_back(http::field::content_disposition, "attachment; filename=\"audit-" + std::to_string(*id) + ".bundle\"");
  co_return r;
}

// POST /v1/imports
net::awaitable<api_response> route_post_imports(state_ptr st, request_context ctx) {
  auto imported = co_await st->svc->import_bundle(std::move(ctx.body));
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

// POST /v1/audits/{id}/cancel
net::awaitable<api_response> route_post_cancel(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  auto j = co_await st->svc->cancel(*id);
  if (!j) co_return error_response(j.error());
  co_return json_response(202, dump(job_json(*j)));
}

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
net::awaitable<api_response> route_post_repro(state_ptr st, request_context ctx) {
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
  auto r = co_await st->svc->start_repro(*id, *run, settings);
  if (!r) co_return error_response(r.error());
  co_return json_response(202, dump(repro_json(*r)));
}

// The repro a path's id segment names; nullopt when there is none.
net::awaitable<std::optional<repro_view>> find_repro(state_ptr st, std::string segment) {
  auto id = parse_positive_id(segment);
  std::optional<repro_view> r;  // no co_await in a conditional expression: GCC 12 miscompiles it
  if (id) r = co_await st->svc->repro(*id);
  co_return r;
}

api_response no_repro(const std::string& segment) {
  return error_response(service_errc::not_found, "not_found", "no repro with id '" + segment.substr(0, 32) + "'", "id");
}

// GET /v1/repros/{id}
net::awaitable<api_response> route_get_repro(state_ptr st, request_context ctx) {
  auto r = co_await find_repro(st, ctx.params[0]);
  if (!r) co_return no_repro(ctx.params[0]);
  co_return json_response(200, dump(repro_json(*r)));
}

// POST /v1/repros/{id}/cancel
net::awaitable<api_response> route_post_repro_cancel(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_repro(ctx.params[0]);
  auto r = co_await st->svc->cancel_repro(*id);
  if (!r) co_return error_response(r.error());
  co_return json_response(202, dump(repro_json(*r)));
}

// GET /v1/repros/{id}/files/{name}
net::awaitable<api_response> route_get_repro_file(state_ptr st, request_context ctx) {
  auto r = co_await find_repro(st, ctx.params[0]);
  if (!r) co_return no_repro(ctx.params[0]);
  auto f = r->files.find(ctx.params[1]);
  if (f == r->files.end())
    co_return error_response(service_errc::not_found, "not_found",
                             r->status == "running" ? "the repro is still running: its bundle is written when it ends"
                                                    : "no file '" + ctx.params[1].substr(0, 64) + "' in this bundle",
                             "name");
  api_response out;
  out.body = f->second;
  out.content_type = f->first.ends_with(".json") ? "application/json"
                     : f->first.ends_with(".sh") ? "text/x-shellscript; charset=utf-8"
                                                 : "text/plain; charset=utf-8";
  co_return out;
}

// DELETE /v1/audits/{id}
net::awaitable<api_response> route_delete_audit(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  auto gone = co_await st->svc->remove(*id);
  if (st->options.reads) st->options.reads->forget(*id);
  if (!gone) co_return error_response(gone.error());
  co_return json_response(200, dump(json{{"deleted", *id}}));
}

// GET /v1/backends
net::awaitable<api_response> route_get_backends(state_ptr st, request_context) {
  const auto list = co_await st->svc->backends();
  json out = {{"backends", json::array()}, {"allow_adhoc_backends", list.allow_adhoc}};
  for (const auto& b : list.backends)
    out["backends"].push_back({{"name", b.name}, {"url", b.url}, {"api", b.api}, {"busy", b.busy}});
  co_return json_response(200, dump(out));
}

// POST /v1/backends/{name}/selftest
net::awaitable<api_response> route_post_selftest(state_ptr st, request_context ctx) {
  auto r = co_await st->svc->selftest(ctx.params[0]);
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

// GET /v1/compare?a=ID&b=ID
net::awaitable<api_response> route_get_compare(state_ptr st, request_context ctx) {
  for (const char* k : {"a", "b"})
    if (!ctx.query.count(k) || !parse_positive_id(ctx.query.at(k)))
      co_return error_response(service_errc::invalid, "invalid_query", "must be an audit id", k);
  const auto a = *parse_positive_id(ctx.query.at("a")), b = *parse_positive_id(ctx.query.at("b"));
  auto c = co_await st->svc->compare(a, b);
  if (!c) co_return error_response(c.error());
  co_return json_response(200, dump(comparison_json(a, b, *c)));
}

// GET /v1/info
net::awaitable<api_response> route_get_info(state_ptr st, request_context) {
  const json out = {{"version", st->options.version},
                    {"auth", {{"tokens", !st->options.tokens.empty()}, {"protect_reads", st->options.protect_reads && !st->options.tokens.empty()}}}};
  co_return json_response(200, dump(out));
}

// GET /v1/presets
net::awaitable<api_response> route_get_presets(request_context) {
  json out = {{"presets", json::array()}};
  for (const auto& p : audit::presets())
    out["presets"].push_back({{"name", p.name}, {"description", p.description}, {"spec", json::parse(spec_to_json(p.make()))}});
  co_return json_response(200, dump(out));
}

// GET /metrics
net::awaitable<api_response> route_get_metrics(state_ptr st, request_context) {
  auto jobs = co_await st->svc->job_counts();
  co_return api_response{200, st->options.metrics->render(jobs, st->options.reads),
                         "text/plain; version=0.0.4; charset=utf-8"};
}

}  // namespace

std::string query_or(const request_context& ctx, const char* key, std::string fallback) {
  auto it = ctx.query.find(key);
  return it == ctx.query.end() ? fallback : it->second;
}

void add_audit_routes(router& r, audit_service& svc, route_options opts) {
  auto st = std::make_shared<route_state>(route_state{&svc, std::move(opts)});
  using http::verb;
  const query_param limit{"limit", "integer", "at most this many (default 50)", {}, 1, 500};
  // Each route: a named, non-coroutine lambda that hands its state to a free coroutine (GCC 12).
  r.add(verb::get, "/healthz",
        {.operation_id = "getHealth", .summary = "Liveness: the process serves HTTP", .needs = access::open,
         .response_schema = "Status", .tag = "operations"},
        [](const request_context& ctx) { return route_get_healthz(ctx); });
  r.add(verb::get, "/readyz",
        {.operation_id = "getReadiness", .summary = "Readiness: the database and the queue are up", .needs = access::open,
         .response_schema = "Status", .tag = "operations"},
        [st](const request_context& ctx) { return route_get_readyz(st, ctx); });
  r.add(verb::get, "/v1/info",
        {.operation_id = "getInfo",
         .summary = "The daemon's version and what its routes need: a token for mutations, and for reads when they are protected",
         .needs = access::open, .response_schema = "Info", .tag = "operations"},
        [st](const request_context& ctx) { return route_get_info(st, ctx); });
  r.add(verb::post, "/v1/audits",
        {.operation_id = "submitAudit", .summary = "Submit an audit (a spec, or a preset with overrides); 202 with the job",
         .needs = access::write, .request_schema = "Spec", .status = 202, .response_schema = "Job", .tag = "audits"},
        [st](const request_context& ctx) { return route_post_audits(st, ctx); });
  r.add(verb::get, "/v1/audits",
        {.operation_id = "listAudits", .summary = "List audits, newest first; `next` links the following page",
         .query = {{"status", "string", "only audits in this state", audit::names_of(audit::kJobStatuses)},
                   {"tag", "string", "only audits carrying this tag"},
                   {"before", "integer", "only audits with a smaller id (the next page)", {}, 1, 0},
                   limit},
         .response_schema = "JobList", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_audits(st, ctx); });
  r.add(verb::get, "/v1/audits/{id}",
        {.operation_id = "getAudit", .summary = "One audit: status, progress, predictions, links; ?wait=S answers when it ends (or after S seconds)",
         .query = {{"wait", "integer", "long poll: answer when the audit ends or after this many seconds", {}, 1, 300},
                   {"done", "integer", "with wait: answer as soon as more than this many requests are done", {}, 0, 0}},
         .response_schema = "Job", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_audit(st, ctx); });
  r.add(verb::get, "/v1/audits/{id}/spec",
        {.operation_id = "getAuditSpec",
         .summary = "The audit's spec as stored (presets and sweeps expanded): what a replay submits again",
         .response_schema = "ExpandedSpec", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_spec(st, ctx); });
  r.add(verb::get, "/v1/audits/{id}/report",
        {.operation_id = "getReport", .summary = "The findings table of an ended audit (json, text, markdown or csv)",
         .query = {{"format", "string", "the rendering (default json)", {"json", "text", "markdown", "csv"}}},
         .response_schema = "Findings", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_report(st, ctx); });
  r.add(verb::get, "/v1/audits/{id}/runs",
        {.operation_id = "listRuns", .summary = "The audit's runs with the server's account, their verdicts and evidence flags",
         .query = {{"condition", "string", "only runs of this condition"}, {"backend", "string", "only runs on this backend"}},
         .response_schema = "RunList", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_runs(st, ctx); });
  r.add(verb::get, "/v1/audits/{id}/runs/{run}/stream",
        {.operation_id = "getStream", .summary = "One run's logit stream: tokens, logprobs, top-k, digests, the server's account",
         .response_schema = "Stream", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_stream(st, ctx); });
  r.add(verb::get, "/v1/audits/{id}/bursts",
        {.operation_id = "listBursts",
         .summary = "Every burst: width, launch spread, overlap, the server's busy slots per decode, and whether it batched",
         .response_schema = "BurstList", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_bursts(st, ctx); });
  r.add(verb::get, "/v1/audits/{id}/fingerprints",
        {.operation_id = "listFingerprints", .summary = "Each backend's fingerprint before and after the audit",
         .response_schema = "FingerprintList", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_fingerprints(st, ctx); });
  r.add(verb::get, "/v1/audits/{id}/bundle",
        {.operation_id = "exportBundle",
         .summary = "The ended audit as an evidence bundle: spec, predictions, fingerprints, every run with its stream bytes, "
                    "verdicts and findings, under one content digest (docs/protocol.md)",
         .media = "application/x-ndjson", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_bundle(st, ctx); });
  r.add(verb::post, "/v1/imports",
        {.operation_id = "importBundle",
         .summary = "Add a bundle's audits to this database, read-only, with their provenance; 201, or 200 when every one "
                    "was imported before",
         .needs = access::write, .request_schema = "Bundle", .request_media = "application/x-ndjson", .status = 201,
         .response_schema = "ImportResult", .tag = "audits"},
        [st](const request_context& ctx) { return route_post_imports(st, ctx); });
  r.add(verb::post, "/v1/audits/{id}/cancel",
        {.operation_id = "cancelAudit", .summary = "Cancel at the next request-group boundary", .needs = access::write,
         .status = 202, .response_schema = "Job", .tag = "audits"},
        [st](const request_context& ctx) { return route_post_cancel(st, ctx); });
  r.add(verb::post, "/v1/audits/{id}/runs/{run}/repro",
        {.operation_id = "startRepro",
         .summary = "Shrink a divergent burst run to its minimal reproduction against the live server (ddmin), as a background task",
         .needs = access::write, .request_schema = "ReproSettings", .status = 202, .response_schema = "Repro", .tag = "audits"},
        [st](const request_context& ctx) { return route_post_repro(st, ctx); });
  r.add(verb::get, "/v1/repros/{id}",
        {.operation_id = "getRepro", .summary = "A repro: progress, then its outcome, minimal case and bundle files",
         .response_schema = "Repro", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_repro(st, ctx); });
  r.add(verb::post, "/v1/repros/{id}/cancel",
        {.operation_id = "cancelRepro", .summary = "Stop a running repro at its next probe (the smallest case so far is kept)",
         .needs = access::write, .status = 202, .response_schema = "Repro", .tag = "audits"},
        [st](const request_context& ctx) { return route_post_repro_cancel(st, ctx); });
  r.add(verb::get, "/v1/repros/{id}/files/{name}",
        {.operation_id = "getReproFile",
         .summary = "One file of a repro's bundle: repro.sh, expected.json, fingerprint.json, command.txt, upstream.md",
         .media = "text/plain", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_repro_file(st, ctx); });
  r.add(verb::delete_, "/v1/audits/{id}",
        {.operation_id = "deleteAudit", .summary = "Delete the audit and all its rows", .needs = access::write,
         .response_schema = "Deleted", .tag = "audits"},
        [st](const request_context& ctx) { return route_delete_audit(st, ctx); });
  if (st->options.metrics)
    r.add(verb::get, "/metrics",
          {.operation_id = "getMetrics", .summary = "Prometheus metrics (text exposition format)",
           .media = "text/plain", .tag = "operations"},
          [st](const request_context& ctx) { return route_get_metrics(st, ctx); });
  r.add(verb::get, "/v1/compare",
        {.operation_id = "compareAudits", .summary = "The baseline streams of two audits compared, with their fingerprint differences",
         .query = {{"a", "integer", "the first audit", {}, 1, 0}, {"b", "integer", "the second audit", {}, 1, 0}},
         .response_schema = "Comparison", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_compare(st, ctx); });
  r.add(verb::get, "/v1/backends",
        {.operation_id = "listBackends", .summary = "The configured backends and whether an audit holds each",
         .response_schema = "BackendList", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_backends(st, ctx); });
  r.add(verb::post, "/v1/backends/{name}/selftest",
        {.operation_id = "selftestBackend",
         .summary = "Seed faults into a configured backend's answers on every path and store how many the comparator caught",
         .needs = access::write, .response_schema = "Selftest", .tag = "audits"},
        [st](const request_context& ctx) { return route_post_selftest(st, ctx); });
  r.add(verb::get, "/v1/presets",
        {.operation_id = "listPresets", .summary = "The spec presets, each expanded (what a submission naming it starts from)",
         .response_schema = "PresetList", .tag = "audits"},
        [](const request_context& ctx) { return route_get_presets(ctx); });
}

}  // namespace logitaudit::api
