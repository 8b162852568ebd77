// Record -> JSON.
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "audit/junit.hpp"
#include "audit/report_html.hpp"
#include "audit/predictions.hpp"
#include "record_json.hpp"

#include "spec_json.hpp"
#include "storage/documents.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;

// -1 is how the server says "not reported": null on the wire.
json reported(std::int64_t v) { return v < 0 ? json(nullptr) : json(v); }
json reported(double v) { return v < 0 ? json(nullptr) : json(v); }
template <class T>
json maybe(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json job_json(const storage::job_record& j) {
  const std::string self = "/v1/audits/" + std::to_string(j.id);
  json backends = json::array();
  if (j.spec)
    for (const auto& b : j.spec->backends) backends.push_back(b.name);
  json out = {{"id", j.id},
              {"status", std::string(audit::to_string(j.status))},
              {"progress", {{"done", j.done_requests}, {"total", j.total_requests}, {"failed", j.failed_requests}}},
              {"created_at", j.created_at},
              {"started_at", j.started_at},
              {"finished_at", j.finished_at},
              {"predictions", {{"hash", j.prediction_hash}, {"registered_at", j.predictions_registered_at}}},
              {"spec_hash", j.spec_hash},
              {"tags", j.tags},
              {"backends", backends},
              {"schedule", maybe(j.schedule_id)},
              {"provenance", j.provenance.imported() ? json{{"origin", j.provenance.origin},
                                                            {"audit", j.provenance.audit},
                                                            {"version", j.provenance.version},
                                                            {"imported_at", j.provenance.imported_at}}
                                                      : json(nullptr)},
              {"links",
               {{"self", self},
                {"report", self + "/report"},
                {"bundle", self + "/bundle"},
                {"runs", self + "/runs"},
                {"bursts", self + "/bursts"},
                {"fingerprints", self + "/fingerprints"},
                {"cancel", self + "/cancel"}}}};
  if (!j.error.empty()) out["error"] = j.error;
  // What the findings say in brief, for lists: validity, each prediction's outcome, runs apart.
  out["result"] = nullptr;
  if (const auto& f = j.findings) {
    json predictions = json::array();
    for (const auto& p : audit::section<audit::prediction_section>(*f).results)
      predictions.push_back({{"id", p.claim.id}, {"outcome", std::string(audit::to_string(p.outcome))}});
    out["result"] = {{"valid", f->valid},
                     {"invalid_reason", f->invalid_reason},
                     {"predictions", predictions},
                     {"failed_runs", f->failed_runs},
                     {"flagged_runs", f->flagged_runs}};
  }
  return out;
}

json run_json(const storage::run_record& r) {
  json j = {{"id", r.id},
            {"group", r.group},
            {"request", r.request},
            {"backend", r.backend},
            {"condition", r.condition},
            {"replicate", r.replicate},
            {"prompt", r.prompt},
            {"compared", r.compared},
            {"baseline_group", maybe(r.baseline_group)},
            {"status", r.ok ? "ok" : "failed"},
            {"params",
             {{"temperature", r.temperature}, {"seed", maybe(r.seed)}, {"cache_prompt", r.cache_prompt}, {"id_slot", maybe(r.id_slot)}}},
            {"client_ns", {{"write", r.write_ns}, {"first_byte", r.first_byte_ns}, {"last_byte", r.last_byte_ns}}}};
  if (!r.ok) j["error"] = r.error;
  if (r.ok) {
    j["digests"] = {{"token", r.digests ? r.digests->token.hex() : ""},
                    {"logit", r.digests ? r.digests->logit.hex() : ""},
                    {"tokens", r.token_count}};
    j["server"] = {{"stop_reason", r.stop_reason},
                   {"prompt_tokens", reported(r.prompt_tokens)},
                   {"cached_tokens", reported(r.cached_tokens)},
                   {"slot", reported(r.slot)},
                   {"timings",
                    {{"prompt_n", reported(r.server.prompt_n)},
                     {"prompt_ms", reported(r.server.prompt_ms)},
                     {"predicted_n", reported(r.server.predicted_n)},
                     {"predicted_ms", reported(r.server.predicted_ms)},
                     {"cache_n", reported(r.server.cache_n)}}}};
  }
  if (r.verdict) {
    const auto& v = *r.verdict;
    j["verdict"] = {{"logit_identical", v.logit_identical},
                    {"token_identical", v.token_identical},
                    {"first_logit_difference", v.first_logit_difference},
                    {"first_token_difference", v.first_token_difference},
                    {"max_abs_delta", v.max_abs_delta},
                    {"mean_abs_delta", v.mean_abs_delta},
                    {"max_ulp", v.max_ulp},
                    {"margin_at_flip", maybe(v.margin_at_flip)},
                    {"counted", v.flag == audit::evidence_flag::none},
                    {"flag", std::string(audit::to_string(v.flag))}};
    if (v.flag != audit::evidence_flag::none) j["verdict"]["flag_reason"] = v.flag_reason;
    j["verdict"]["first_text_difference"] = v.first_text_difference;
    // The batch at the first difference (burst members with decode steps).
    if (v.width_at_difference)
      j["verdict"]["at_difference"] = {{"width", *v.width_at_difference},
                                       {"width_before", maybe(v.width_before_difference)},
                                       {"events", v.events_before_difference}};
  }
  if (r.company) j["company"] = *r.company;
  // The server's decode steps this request was in: per position its step, the step's width,
  // and the joins and finishes of the burst's other requests (audit/decode_steps.hpp).
  if (const auto& st = r.decode_steps) {
    json width = json::array(), step = json::array(), events = json::array();
    for (std::size_t p = 0; p < st->positions.size(); ++p) {
      step.push_back(st->positions[p].step);
      width.push_back(st->positions[p].width);
      for (const auto& e : st->positions[p].events)
        events.push_back({{"position", p},
                          {"event", e.what == audit::step_event::kind::joined ? "joined" : "finished"},
                          {"request", e.member}});
    }
    j["decode_steps"] = {{"clock", std::string(audit::to_string(st->clock))}, {"steps", st->steps},
                         {"separation", st->separation}, {"step", step}, {"width", width}, {"events", events}};
  }
  return j;
}

json stream_json(const storage::stream_record& s) {
  json j = run_json(s.run);
  j["content"] = s.stream.content;
  j["keying"] = s.stream.keying == audit::token_keying::id ? "id" : "text";
  // Pruned by the retention policy: the digests stay (in the run), the tokens are gone.
  if (!s.pruned_at.empty()) j["pruned_at"] = s.pruned_at;
  j["tokens"] = json::array();
  for (const auto& t : s.stream.tokens) {
    json top = json::array();
    for (const auto& e : t.top) top.push_back({{"id", e.key}, {"logprob", e.logprob}});
    j["tokens"].push_back({{"id", t.key}, {"logprob", t.logprob}, {"top", top}});
  }
  return j;
}

json burst_json(const storage::burst_record& b) {
  const auto& m = b.measurement;
  json j = {{"group", b.group},
            {"backend", b.backend},
            {"condition", b.condition},
            {"replicate", b.replicate},
            {"width", m.width},
            {"server_slots", reported(m.server_slots)},
            {"launch_spread_ns", m.launch_spread_ns},
            {"write_mode", m.write_mode.empty() ? json(nullptr) : json(m.write_mode)},
            {"streamed", m.streamed},
            {"wall_ns", m.wall_ns},
            {"overlap", m.overlap},
            {"busy_slots_per_decode", maybe(m.busy_slots_per_decode)},
            {"timed_concurrency", maybe(m.timed_concurrency)},
            {"warnings", m.warnings},
            {"verdict", nullptr}};
  if (b.verdict) {
    const auto& v = *b.verdict;
    j["verdict"] = {{"batched", v.batched},
                    {"expected", v.expected},
                    {"needed", v.needed},
                    {"measured", maybe(v.measured)},
                    {"measured_by", std::string(audit::to_string(v.measured_by))},
                    {"needed_overlap", v.needed_overlap},
                    {"reason", v.reason}};
    if (!v.foreign_load.empty()) j["verdict"]["foreign_load"] = v.foreign_load;
  }
  return j;
}

json fingerprint_fields_json(const audit::backend_fingerprint& p) {
  json prompts = json::object();
  for (const auto& [prompt, hash] : p.prompt_token_hashes) prompts[prompt] = hash;
  json meta = json::object();
  for (const auto& [key, value] : p.model_meta) meta[key] = value;
  json machine = json::object();
  for (const auto& [key, value] : p.machine) machine[key] = value;
  json observed = json::object();
  for (const auto& [key, value] : p.observed) observed[key] = value;
  return {{"api", p.api},
          {"build_info", p.build_info},
          {"model", p.model},
          {"model_sha256", p.model_sha256},
          {"model_meta", meta},
          {"model_ftype", p.model_ftype},
          {"total_slots", reported(p.total_slots)},
          {"n_ctx", reported(p.n_ctx)},
          {"chat_template_hash", p.chat_template_hash},
          {"generation_settings_hash", p.generation_settings_hash},
          {"prompt_token_hashes", prompts},
          {"machine", machine},
          {"observed", observed},
          {"canary", {{"logit_digest", p.canary_logit_digest}, {"token_digest", p.canary_token_digest}}}};
}

json fingerprint_json(const storage::fingerprint_record& f) {
  json j = {{"backend", f.backend}, {"phase", std::string(audit::to_string(f.phase))}, {"taken_at", f.taken_at}};
  j.update(fingerprint_fields_json(f.fingerprint));
  return j;
}

json schedule_json(const storage::schedule_record& v) {
  return {{"id", v.id},
          {"cron", v.cron},
          {"timezone", v.timezone},
          {"enabled", v.enabled},
          {"missed", std::string(audit::to_string(v.missed))},
          {"created_at", v.created_at},
          {"spec", v.spec ? spec_value(*v.spec) : json(nullptr)},
          {"next_fire_unix", maybe(v.next_fire_unix)},
          {"last_fire_unix", maybe(v.last_fire_unix)},
          {"links",
           {{"self", "/v1/schedules/" + std::to_string(v.id)}, {"history", "/v1/schedules/" + std::to_string(v.id) + "/history"}}}};
}

json comparison_json(std::int64_t a, std::int64_t b, const audit::baseline_comparison& c) {
  json out = {{"a", a}, {"b", b}, {"baselines", json::array()}, {"fingerprint_differences", c.fingerprint_differences}};
  int compared = 0, logit = 0, token = 0, not_solo = 0;
  for (const auto& p : c.baselines) {
    json j = {{"backend", p.key.backend}, {"prompt", p.key.prompt}, {"temperature", p.key.temperature},
              {"in_a", p.in_a},           {"in_b", p.in_b}};
    if (p.key.seed) j["seed"] = *p.key.seed;
    if (!p.not_solo.empty()) {
      ++not_solo;
      j["not_solo"] = p.not_solo;
    }
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
  out["summary"] = {{"compared", compared}, {"logit_identical", logit}, {"token_identical", token}, {"not_solo", not_solo}};
  return out;
}

namespace {

// Seconds since the epoch of a stored time ("2026-12-05T13:02:42.411Z"); -1 when it is not one.
double epoch_seconds(const std::string& iso) {
  std::tm t{};
  int ms = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour, &t.tm_min, &t.tm_sec, &ms) < 6)
    return -1;
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  return static_cast<double>(timegm(&t)) + ms / 1000.0;
}

}  // namespace

std::string junit_report(const storage::job_record& j, const audit::findings& f) {
  audit::junit_context c;
  c.audit = j.id;
  c.timestamp = j.started_at.empty() ? j.created_at : j.started_at;
  if (auto dot = c.timestamp.find('.'); dot != std::string::npos) c.timestamp.resize(dot);  // xs:dateTime without a zone
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) c.hostname = host;
  const double a = epoch_seconds(j.started_at), b = epoch_seconds(j.finished_at);
  c.seconds = a >= 0 && b >= a ? b - a : 0;
  return audit::render_junit(f, c);
}

std::string html_report(const storage::job_record& j, const audit::findings& f, const std::vector<storage::run_record>* runs) {
  const bool in_process = runs == nullptr;
  audit::html_context c;
  c.audit = j.id;
  if (runs) {
    for (const auto& r : *runs)
      if (r.verdict && r.verdict->flag == audit::evidence_flag::none && !r.verdict->logit_identical)
        c.moved.push_back({r.backend, r.verdict->first_logit_difference, r.verdict->max_abs_delta});
  } else {
    c.moved = audit::moved_streams(f);
  }
  c.started = j.started_at;
  c.spec_json = j.spec_json.empty() ? "" : nlohmann::json::parse(j.spec_json, nullptr, false).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  if (c.spec_json == "<discarded>") c.spec_json = j.spec_json;
  const std::string id = std::to_string(j.id);
  if (in_process) {
    c.commands = {"# spec.json: the spec below, its backends' URLs in it", "logitaudit run --spec spec.json"};
  } else {
    c.commands = {"logitaudit report " + id + " --format html > audit-" + id + ".html"};
    if (j.spec)
      for (const auto& b : j.spec->backends) c.commands.push_back("logitaudit replay " + id + " --backend " + b.name);
    c.commands.push_back("logitaudit export " + id + " -o audit-" + id + ".bundle");
  }
  return audit::render_html(f, c);
}

}  // namespace logitaudit::api
