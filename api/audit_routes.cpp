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
  // The bodies being rendered, each with a timer that its waiters sleep on until the reader
  // rendering it is done, and the answer it gave (render_flight).
  struct flight {
    std::shared_ptr<net::steady_timer> done;
    std::shared_ptr<std::optional<api_response>> answer;
    std::uint64_t read_at = 0;  // the read model's forgets when the renderer began
  };
  std::map<std::string, flight> rendering{};
};
using state_ptr = std::shared_ptr<route_state>;

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

// One body rendered once for a crowd: readers that miss the same (audit, key) while another is
// rendering it wait for that one and take its answer (what it kept, else what it answered:
// a running audit's rows, an error), instead of each reading the database and rendering. 100 connections on a fresh daemon over a 1M-stream database all missed the
// runs of one audit at once: 100 renderings, and the p99 of the first 10 s was 17 ms against 5
// once warm (docs/performance.md). The reader that renders holds the flight until destroyed;
// then its waiters wake (the timer cancelled) and read the model. Everything here runs on the
// API's executor, as the read model does.
class render_flight {
 public:
  render_flight() = default;
  render_flight(state_ptr st, std::string key, const net::any_io_executor& ex) : st_(std::move(st)), key_(std::move(key)) {
    timer_ = std::make_shared<net::steady_timer>(ex, net::steady_timer::time_point::max());
    answer_ = std::make_shared<std::optional<api_response>>();
    st_->rendering[key_] = {timer_, answer_, st_->options.reads ? st_->options.reads->forgets() : 0};
  }
  // The renderer's answer, for its waiters too.
  api_response publish(api_response r) {
    if (answer_) *answer_ = r;
    return r;
  }
  render_flight(render_flight&& o) noexcept { *this = std::move(o); }
  render_flight& operator=(render_flight&& o) noexcept {
    end();
    st_ = std::move(o.st_);
    key_ = std::move(o.key_);
    timer_ = std::move(o.timer_);
    answer_ = std::move(o.answer_);
    return *this;
  }
  ~render_flight() { end(); }

 private:
  void end() {
    if (!timer_) return;
    st_->rendering.erase(key_);
    timer_->cancel();
    timer_.reset();
  }
  state_ptr st_;
  std::string key_;
  std::shared_ptr<net::steady_timer> timer_;
  std::shared_ptr<std::optional<api_response>> answer_;
};

// A final audit's body from the read model; when another reader is rendering it, after that
// reader is done. A miss with nobody rendering makes this reader the one (`flight`).
net::awaitable<std::optional<api_response>> kept_or_wait(state_ptr st, std::int64_t id, std::string key, render_flight& flight) {
  if (auto hit = kept(*st, id, key)) co_return hit;
  if (!st->options.reads) co_return std::nullopt;
  std::string k = std::to_string(id) + "\x1e" + key;
  if (auto it = st->rendering.find(k); it != st->rendering.end()) {
    auto timer = it->second.done;
    auto answer = it->second.answer;
    const auto renderer_read_at = it->second.read_at;
    co_await timer->async_wait(net::as_tuple(net::use_awaitable));
    if (auto hit = kept(*st, id, key)) co_return hit;
    // The renderer's answer, unless an audit was deleted or pruned since the renderer began
    // reading (its body may be of what is gone), or it ended without answering: then this
    // reader renders.
    if (st->options.reads->forgets() != renderer_read_at) co_return std::nullopt;
    co_return *answer;
  }
  auto ex = co_await net::this_coro::executor;
  flight = render_flight(st, std::move(k), ex);
  co_return std::nullopt;
}

// Where the read model's forgets stood when a reader began reading the database (keep's `read_at`).
std::uint64_t read_begins(const route_state& st) { return st.options.reads ? st.options.reads->forgets() : 0; }

// Keeps a 200 body of a final audit for the next reader, unless an audit was deleted since the
// reader began (`read_at`).
api_response keep(const route_state& st, audit::job_status status, std::int64_t id, const std::string& key, api_response r,
                  std::uint64_t read_at) {
  if (st.options.reads && r.status == 200 && audit::is_final(status))
    st.options.reads->keep(id, key, std::make_shared<rendered_body>(rendered_body{r.body, r.content_type}), read_at);
  return r;
}

// GET /healthz
net::awaitable<api_response> route_get_healthz(request_context) { co_return json_response(200, R"({"status":"ok"})"); }

// GET /readyz
net::awaitable<api_response> route_get_readyz(state_ptr st, request_context) {
  const auto problems = st->svc->not_ready();
  if (problems.empty()) co_return json_response(200, R"({"status":"ready"})");
  std::string why = "not ready: ";
  for (std::size_t i = 0; i < problems.size(); ++i) why += (i ? "; " : "") + problems[i];
  co_return error_response(service_errc::unavailable, "not_ready", why);
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

// POST /v1/advice: the advise preset with the body's members over it (docs/advise.md).
net::awaitable<api_response> route_post_advice(state_ptr st, request_context ctx) {
  auto body = json::parse(ctx.body.empty() ? std::string("{}") : ctx.body, nullptr, false);
  if (!body.is_object())
    co_return error_response(service_errc::invalid, "invalid_spec", "the body must be a JSON object: members over the advise preset");
  if (body.contains("preset") && body["preset"] != "advise")
    co_return error_response(invalid({{"preset", "is the advise preset here; submit other presets to POST /v1/audits"}}, "invalid_spec"));
  body["preset"] = "advise";
  auto spec = read_spec(body.dump());
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
  const auto read_at = read_begins(*st);
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
  co_return keep(*st, j->status, *id, "summary", json_response(200, dump(job_json(*j))), read_at);
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
                                                                    {"junit", "application/xml; charset=utf-8"},
                                                                    {"html", "text/html; charset=utf-8"},
                                                                    {"json", "application/json"}};
  if (!content_types.count(format))
    co_return error_response(service_errc::invalid, "invalid_query", "format must be json, text, markdown, csv, junit or html", "format");
  const std::string key = "report?" + format;
  render_flight flight;
  if (auto hit = co_await kept_or_wait(st, *id, key, flight)) co_return *hit;
  const auto read_at = read_begins(*st);
  auto j = co_await st->svc->job(*id);
  if (!j) co_return no_audit(ctx.params[0]);
  if (!audit::is_final(j->status))
    co_return error_response(service_errc::conflict, "not_finished", "audit " + std::to_string(*id) + " is " +
                                                      std::string(audit::to_string(j->status)) + "; its report comes when it ends");
  if (j->findings_json.empty())
    co_return error_response(service_errc::conflict, "no_findings", "audit " + std::to_string(*id) + " has no findings (" +
                                                     std::string(audit::to_string(j->status)) + ")");
  // The findings were stored as this JSON when the audit ended; the JSON report is those members
  // with the verdict beside them, and the other formats render them.
  const auto& f = j->findings;
  if (!f && format == "json") co_return keep(*st, j->status, *id, key, json_response(200, j->findings_json), read_at);  // as stored
  if (!f) co_return error_response(service_errc::internal, "internal", "the stored findings of audit " + std::to_string(*id) + " do not parse");
  // The plot of the streams that moved reads their runs' verdicts (the findings keep none).
  // (The filter is named and the result awaited into its own variable: GCC 12 miscompiles a
  // braced temporary inside a co_await's full expression, and the daemon aborted.)
  std::vector<storage::run_record> runs;
  if (format == "html") {
    const storage::run_filter every;
    auto fetched = co_await st->svc->runs(*id, every);
    if (fetched) runs = std::move(*fetched);
  }
  std::string body = format == "json"       ? report_json(*f, j->findings_json)
                     : format == "text"     ? audit::render_text(*f)
                     : format == "markdown" ? audit::render_markdown(*f)
                     : format == "junit"    ? junit_report(*j, *f)
                     : format == "html"     ? html_report(*j, *f, &runs)
                                            : audit::render_csv(*f);
  co_return flight.publish(keep(*st, j->status, *id, key, api_response{200, std::move(body), content_types.at(format)}, read_at));
}

// The skeleton of every GET of one audit's stored rows: the id parsed, a final audit's body
// from the read model, else the audit read (404 when there is none), its rows fetched
// (`fetch(id)`, an awaitable optional; `gone` when empty) and rendered (`render(id, rows)`),
// and the body kept when the audit is final.
template <class Fetch, class Render, class Gone>
net::awaitable<api_response> audit_rows(state_ptr st, request_context ctx, std::string key, Fetch fetch, Render render,
                                        Gone gone) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  render_flight flight;
  if (auto hit = co_await kept_or_wait(st, *id, key, flight)) co_return *hit;
  const auto read_at = read_begins(*st);
  auto j = co_await st->svc->job(*id);
  if (!j) co_return no_audit(ctx.params[0]);
  auto rows = co_await fetch(*id);
  if (!rows) co_return gone(*id);
  co_return flight.publish(keep(*st, j->status, *id, key, json_response(200, dump(render(*id, *rows))), read_at));
}

template <class Fetch, class Render>
net::awaitable<api_response> audit_rows(state_ptr st, request_context ctx, std::string key, Fetch fetch, Render render) {
  const std::string segment = ctx.params[0];
  auto gone = [segment](std::int64_t) { return no_audit(segment); };
  return audit_rows(std::move(st), std::move(ctx), std::move(key), fetch, render, gone);
}

// A list of records under `name`, beside the audit's id.
template <class Records, class ToJson>
json listed(std::int64_t id, const char* name, const Records& records, ToJson to_json) {
  json out = {{"audit", id}, {name, json::array()}};
  for (const auto& r : records) out[name].push_back(to_json(r));
  return out;
}

// GET /v1/audits/{id}/runs
net::awaitable<api_response> route_get_runs(state_ptr st, request_context ctx) {
  storage::run_filter filter{query_or(ctx, "condition"), query_or(ctx, "backend")};
  std::string key = "runs?" + filter.condition + "\x1f" + filter.backend;
  auto fetch = [st, filter](std::int64_t id) { return st->svc->runs(id, filter); };
  auto render = [](std::int64_t id, const std::vector<storage::run_record>& runs) { return listed(id, "runs", runs, run_json); };
  return audit_rows(st, std::move(ctx), std::move(key), fetch, render);
}

// GET /v1/audits/{id}/runs/{run}/stream
net::awaitable<api_response> route_get_stream(state_ptr st, request_context ctx) {
  const auto run = parse_positive_id(ctx.params[1]);
  if (!parse_positive_id(ctx.params[0])) co_return no_audit(ctx.params[0]);
  if (!run) co_return error_response(service_errc::not_found, "not_found", "no run '" + ctx.params[1].substr(0, 64) + "' in this audit", "run");
  auto gone = [run = *run](std::int64_t id) {
    return error_response(service_errc::not_found, "not_found", "no run " + std::to_string(run) + " in audit " + std::to_string(id), "run");
  };
  auto fetch = [st, run = *run](std::int64_t id) { return st->svc->stream(id, run); };
  auto render = [](std::int64_t, const storage::stream_record& s) { return stream_json(s); };
  co_return co_await audit_rows(st, std::move(ctx), "stream/" + std::to_string(*run), fetch, render, gone);
}

// GET /v1/audits/{id}/bursts
net::awaitable<api_response> route_get_bursts(state_ptr st, request_context ctx) {
  auto fetch = [st](std::int64_t id) { return st->svc->bursts(id); };
  auto render = [](std::int64_t id, const std::vector<storage::burst_record>& b) { return listed(id, "bursts", b, burst_json); };
  return audit_rows(st, std::move(ctx), "bursts", fetch, render);
}

// GET /v1/audits/{id}/fingerprints
net::awaitable<api_response> route_get_fingerprints(state_ptr st, request_context ctx) {
  auto fetch = [st](std::int64_t id) { return st->svc->fingerprints(id); };
  auto render = [](std::int64_t id, const std::vector<storage::fingerprint_record>& f) {
    return listed(id, "fingerprints", f, fingerprint_json);
  };
  return audit_rows(st, std::move(ctx), "fingerprints", fetch, render);
}

// POST /v1/audits/{id}/cancel
net::awaitable<api_response> route_post_cancel(state_ptr st, request_context ctx) {
  auto id = parse_positive_id(ctx.params[0]);
  if (!id) co_return no_audit(ctx.params[0]);
  auto j = co_await st->svc->cancel(*id);
  if (!j) co_return error_response(j.error());
  co_return json_response(202, dump(job_json(*j)));
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
    out["presets"].push_back({{"name", p.name}, {"description", p.description}, {"spec", spec_value(p.make())}});
  co_return json_response(200, dump(out));
}

// GET /metrics
net::awaitable<api_response> route_get_metrics(state_ptr st, request_context) {
  auto jobs = co_await st->svc->job_counts();
  co_return api_response{200, st->options.metrics->render(jobs, st->options.reads),
                         "text/plain; version=0.0.4; charset=utf-8"};
}

}  // namespace

api_response no_audit(const std::string& segment) {
  return error_response(service_errc::not_found, "not_found", "no audit with id '" + segment.substr(0, 64) + "'", "id");
}

std::string query_or(const request_context& ctx, const char* key, std::string fallback) {
  auto it = ctx.query.find(key);
  return it == ctx.query.end() ? fallback : it->second;
}

namespace {

using route_state_ptr = std::shared_ptr<route_state>;

// Health, readiness, the daemon's info, and its metrics when they are on.
void add_operations_routes(router& r, const route_state_ptr& st) {
  using http::verb;
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
  if (st->options.metrics)
    r.add(verb::get, "/metrics",
          {.operation_id = "getMetrics", .summary = "Prometheus metrics (text exposition format)",
           .media = "text/plain", .tag = "operations"},
          [st](const request_context& ctx) { return route_get_metrics(st, ctx); });
}

// Submit, list and read one audit, and its spec.
void add_audit_job_routes(router& r, const route_state_ptr& st) {
  using http::verb;
  const query_param limit{"limit", "integer", "at most this many (default 50)", {}, 1, 500};
  r.add(verb::post, "/v1/audits",
        {.operation_id = "submitAudit", .summary = "Submit an audit (a spec, or a preset with overrides); 202 with the job",
         .needs = access::write, .request_schema = "Spec", .status = 202, .response_schema = "Job", .tag = "audits"},
        [st](const request_context& ctx) { return route_post_audits(st, ctx); });
  r.add(verb::post, "/v1/advice",
        {.operation_id = "submitAdvice",
         .summary = "Submit an advise job: the advise preset with the body's members over it (sweep.models at least); 202 "
                    "with the job, whose progress and findings (advice_result) GET /v1/audits/{id} and its report give",
         .needs = access::write, .request_schema = "Spec", .status = 202, .response_schema = "Job", .tag = "audits"},
        [st](const request_context& ctx) { return route_post_advice(st, ctx); });
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
}

// An audit's evidence (its report, runs, streams, bursts, fingerprints), cancel and delete, and
// the comparison of two audits' baselines and the presets.
void add_audit_evidence_routes(router& r, const route_state_ptr& st) {
  using http::verb;
  r.add(verb::get, "/v1/audits/{id}/spec",
        {.operation_id = "getAuditSpec",
         .summary = "The audit's spec as stored (presets and sweeps expanded): what a replay submits again",
         .response_schema = "ExpandedSpec", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_spec(st, ctx); });
  r.add(verb::get, "/v1/audits/{id}/report",
        {.operation_id = "getReport", .summary = "The findings table of an ended audit (json, text, markdown or csv)",
         .query = {{"format", "string", "the rendering (default json; junit: JUnit XML for CI; html: one self-contained file)", {"json", "text", "markdown", "csv", "junit", "html"}}},
         .response_schema = "Report", .tag = "audits"},
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
  r.add(verb::post, "/v1/audits/{id}/cancel",
        {.operation_id = "cancelAudit", .summary = "Cancel at the next request-group boundary", .needs = access::write,
         .status = 202, .response_schema = "Job", .tag = "audits"},
        [st](const request_context& ctx) { return route_post_cancel(st, ctx); });
  r.add(verb::delete_, "/v1/audits/{id}",
        {.operation_id = "deleteAudit", .summary = "Delete the audit and all its rows", .needs = access::write,
         .response_schema = "Deleted", .tag = "audits"},
        [st](const request_context& ctx) { return route_delete_audit(st, ctx); });
  r.add(verb::get, "/v1/compare",
        {.operation_id = "compareAudits", .summary = "The baseline streams of two audits compared, with their fingerprint differences",
         .query = {{"a", "integer", "the first audit", {}, 1, 0}, {"b", "integer", "the second audit", {}, 1, 0}},
         .response_schema = "Comparison", .tag = "audits"},
        [st](const request_context& ctx) { return route_get_compare(st, ctx); });
  r.add(verb::get, "/v1/presets",
        {.operation_id = "listPresets", .summary = "The spec presets, each expanded (what a submission naming it starts from)",
         .response_schema = "PresetList", .tag = "audits"},
        [](const request_context& ctx) { return route_get_presets(ctx); });
}

}  // namespace

void add_audit_routes(router& r, const route_services& s) {
  audit_service& svc = s.audits;
  route_options opts = s.options;
  auto st = std::make_shared<route_state>(route_state{&svc, std::move(opts)});
  // Each route of every family: a named, non-coroutine lambda that hands its state to a free
  // coroutine (GCC 12).
  add_operations_routes(r, st);
  add_audit_job_routes(r, st);
  add_audit_evidence_routes(r, st);
}

}  // namespace logitaudit::api
