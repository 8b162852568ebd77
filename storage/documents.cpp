// The stored documents, format 1: spec JSON <-> audit_spec, findings JSON <-> findings. These
// bytes are what every database of versions 1 and 2 holds, and a spec's text is hashed into
// its spec_hash (the key of ad-hoc series): format 1 must keep writing exactly these bytes.
#include "documents.hpp"

#include "spec_document.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "audit/enum_names.hpp"

namespace logitaudit::storage {

using json = nlohmann::json;

namespace {

// The second verdict: per condition against the reference, each stream's verdict, and the
// fingerprint fields that differ from the reference's.
json reference_json(const audit::reference_findings& r) {
  json pooled = json::array();
  for (const auto& t : r.pooled)
    pooled.push_back({{"condition", t.condition}, {"n", t.n}, {"logit_matches", t.logit_matches},
                      {"token_matches", t.token_matches}, {"not_comparable", t.not_comparable}});
  json verdicts = json::array();
  for (const auto& v : r.verdicts) {
    json jv = {{"group", v.group}, {"request", v.request}, {"outcome", std::string(audit::to_string(v.outcome))}};
    if (v.result)
      jv.update({{"logit_identical", v.result->logit_identical},
                 {"token_identical", v.result->token_identical},
                 {"first_logit_difference", v.result->first_logit_difference},
                 {"first_token_difference", v.result->first_token_difference},
                 {"max_abs_delta", v.result->max_abs_delta},
                 {"max_ulp", v.result->max_ulp}});
    else
      jv["reason"] = v.reason;
    verdicts.push_back(std::move(jv));
  }
  return {{"audit", r.audit}, {"origin", r.origin}, {"all_match", r.all_match()}, {"pooled", pooled},
          {"fingerprint_differences", r.fingerprint_differences}, {"sentence", r.sentence}, {"verdicts", verdicts}};
}

audit::reference_findings reference_of(const json& j) {
  audit::reference_findings r;
  r.audit = j.at("audit").get<std::int64_t>();
  r.origin = j.value("origin", "");
  r.sentence = j.value("sentence", "");
  for (const auto& t : j.at("pooled"))
    r.pooled.push_back({t.at("condition").get<std::string>(), t.at("n").get<int>(), t.at("logit_matches").get<int>(),
                        t.at("token_matches").get<int>(), t.at("not_comparable").get<int>()});
  r.fingerprint_differences = j.at("fingerprint_differences").get<std::map<std::string, std::vector<std::string>>>();
  for (const auto& v : j.at("verdicts")) {
    audit::reference_verdict rv;
    rv.group = v.at("group").get<std::size_t>();
    rv.request = v.at("request").get<std::size_t>();
    const auto o = v.at("outcome").get<std::string>();
    rv.outcome = o == "matches_reference" ? audit::reference_outcome::matches_reference
                 : o == "differs"         ? audit::reference_outcome::differs
                                          : audit::reference_outcome::not_comparable;
    if (v.contains("logit_identical")) {
      audit::comparison c;
      c.logit_identical = v.at("logit_identical").get<bool>();
      c.token_identical = v.at("token_identical").get<bool>();
      c.first_logit_difference = v.at("first_logit_difference").get<int>();
      c.first_token_difference = v.at("first_token_difference").get<int>();
      c.max_abs_delta = v.at("max_abs_delta").get<double>();
      c.max_ulp = v.at("max_ulp").get<std::uint64_t>();
      rv.result = c;
    } else {
      rv.reason = v.value("reason", "");
    }
    r.verdicts.push_back(std::move(rv));
  }
  return r;
}

}  // namespace

namespace {

json latency_json(const audit::latency_summary& l) {
  return {{"n", l.n}, {"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}};
}

audit::latency_summary latency_from(const json& j) {
  audit::latency_summary l;
  l.n = j.at("n").get<std::size_t>();
  l.mean = j.at("mean").get<double>();
  l.p50 = j.at("p50").get<double>();
  l.p90 = j.at("p90").get<double>();
  l.p99 = j.at("p99").get<double>();
  return l;
}

json load_measurement_json(const audit::load_measurement& m) {
  json probes = json::array();
  for (const auto& p : m.probes)
    probes.push_back({{"scheduled_ms", p.scheduled_ns / 1e6}, {"sent_ms", p.sent_ns / 1e6}, {"in_flight", p.in_flight},
                      {"width", p.width}});
  json j = {{"label", m.label},
            {"level", m.level},
            {"arrival", std::string(audit::to_string(m.arrival))},
            {"duration_s", m.duration_s},
            {"server_slots", m.server_slots},
            {"scheduled", m.scheduled},
            {"sent", m.sent},
            {"completed", m.completed},
            {"failed", m.failed},
            {"dropped", m.dropped},
            {"offered_rps", m.offered_rps},
            {"achieved_rps", m.achieved_rps},
            {"bench_duration_s", m.bench_duration_s},
            {"request_throughput", m.request_throughput},
            {"output_throughput", m.output_throughput},
            {"output_tokens", m.output_tokens},
            {"prompt_tokens", m.prompt_tokens},
            {"mean_in_flight", m.mean_in_flight},
            {"max_in_flight", m.max_in_flight},
            {"in_flight_at_half", m.in_flight_at_half},
            {"in_flight_at_end", m.in_flight_at_end},
            {"ttft_ms", latency_json(m.ttft_ms)},
            {"itl_ms", latency_json(m.itl_ms)},
            {"tpot_ms", latency_json(m.tpot_ms)},
            {"e2el_ms", latency_json(m.e2el_ms)},
            {"arrival_lateness_us", latency_json(m.arrival_lateness_us)},
            {"probes", std::move(probes)},
            {"server_tokens_predicted", m.server_tokens_predicted},
            {"server_busy_slots_per_decode", m.server_busy_slots_per_decode},
            {"server_in_flight", m.server_in_flight},
            {"sampled_in_flight", m.sampled_in_flight},
            {"server_samples", m.server_samples},
            {"reached", m.reached},
            {"not_reached", m.not_reached}};
  if (!m.replay.empty()) j["replay"] = m.replay;
  return j;
}

audit::load_measurement load_measurement_from(const json& j) {
  audit::load_measurement m;
  m.label = j.at("label").get<std::string>();
  m.level = j.at("level").get<double>();
  m.arrival = audit::parse_arrival_kind(j.at("arrival").get<std::string>()).value_or(audit::arrival_kind::poisson);
  m.duration_s = j.at("duration_s").get<double>();
  m.server_slots = j.at("server_slots").get<std::int64_t>();
  m.scheduled = j.at("scheduled").get<std::int64_t>();
  m.sent = j.at("sent").get<std::int64_t>();
  m.completed = j.at("completed").get<std::int64_t>();
  m.failed = j.at("failed").get<std::int64_t>();
  m.dropped = j.at("dropped").get<std::int64_t>();
  m.offered_rps = j.at("offered_rps").get<double>();
  m.achieved_rps = j.at("achieved_rps").get<double>();
  m.bench_duration_s = j.at("bench_duration_s").get<double>();
  m.request_throughput = j.at("request_throughput").get<double>();
  m.output_throughput = j.at("output_throughput").get<double>();
  m.output_tokens = j.at("output_tokens").get<std::int64_t>();
  m.prompt_tokens = j.at("prompt_tokens").get<std::int64_t>();
  m.mean_in_flight = j.at("mean_in_flight").get<double>();
  m.max_in_flight = j.at("max_in_flight").get<int>();
  m.in_flight_at_half = j.at("in_flight_at_half").get<int>();
  m.in_flight_at_end = j.at("in_flight_at_end").get<int>();
  m.ttft_ms = latency_from(j.at("ttft_ms"));
  m.itl_ms = latency_from(j.at("itl_ms"));
  m.tpot_ms = latency_from(j.at("tpot_ms"));
  m.e2el_ms = latency_from(j.at("e2el_ms"));
  m.arrival_lateness_us = latency_from(j.at("arrival_lateness_us"));
  for (const auto& p : j.at("probes"))
    m.probes.push_back({static_cast<std::int64_t>(p.at("scheduled_ms").get<double>() * 1e6),
                        static_cast<std::int64_t>(p.at("sent_ms").get<double>() * 1e6), p.at("in_flight").get<double>(),
                        p.at("width").get<double>()});
  m.server_tokens_predicted = j.at("server_tokens_predicted").get<double>();
  m.server_busy_slots_per_decode = j.at("server_busy_slots_per_decode").get<double>();
  m.server_in_flight = j.value("server_in_flight", -1.0);  // absent before 2026-12-02
  m.sampled_in_flight = j.value("sampled_in_flight", -1.0);
  m.server_samples = j.value("server_samples", 0);
  m.reached = j.at("reached").get<bool>();
  m.not_reached = j.at("not_reached").get<std::string>();
  if (auto r = j.find("replay"); r != j.end()) m.replay = r->get<std::vector<std::array<double, 3>>>();
  return m;
}

json burst_summary_json(const audit::burst_summary& b) {
  return {{"bursts", b.bursts},
          {"batched", b.batched},
          {"width", b.width},
          {"expected", b.expected},
          {"median_measured", b.median_measured ? json(*b.median_measured) : json(nullptr)},
          {"measured_by", std::string(audit::to_string(b.measured_by))},
          {"median_overlap", b.median_overlap}};
}

audit::burst_summary burst_summary_from(const json& b) {
  audit::burst_summary s;
  s.bursts = b.at("bursts").get<int>();
  s.batched = b.at("batched").get<int>();
  s.width = b.at("width").get<int>();
  s.expected = b.at("expected").get<double>();
  if (!b.at("median_measured").is_null()) s.median_measured = b.at("median_measured").get<double>();
  s.measured_by = audit::parse_concurrency_measure(b.at("measured_by").get<std::string>()).value();
  s.median_overlap = b.at("median_overlap").get<double>();
  return s;
}

}  // namespace

std::string encode_load_measurement(const audit::load_measurement& m) {
  return load_measurement_json(m).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<audit::load_measurement> decode_load_measurement(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  try {
    return load_measurement_from(j);
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

namespace {

json tally_json(const audit::condition_tally& t) {
  json j{{"condition", t.condition},       {"kind", std::string(audit::to_string(t.kind))},
         {"concurrency", t.concurrency},   {"seeded", t.seeded},
         {"control", t.control()},         {"n", t.n},
         {"logit_identical", t.logit_identical}, {"token_identical", t.token_identical},
         {"failed", t.failed},             {"flagged", t.flagged},
         {"flagged_as", std::string(audit::to_string(audit::flag_of(t.kind)))}};
  if (t.not_solo) j["not_solo"] = t.not_solo;        // since schema 7
  if (t.ineffective) j["ineffective"] = t.ineffective;  // since schema 7
  if (t.bursts) j["batching"] = burst_summary_json(*t.bursts);
  if (!t.widths.empty()) {  // since schema 9
    j["batching_by_width"] = json::array();
    for (const auto& w : t.widths) j["batching_by_width"].push_back(burst_summary_json(w));
  }
  return j;
}

audit::condition_tally tally_from(const json& t) {
  audit::condition_tally c;
  c.condition = t.at("condition").get<std::string>();
  c.kind = audit::parse_condition_kind(t.at("kind").get<std::string>()).value();
  c.concurrency = t.at("concurrency").get<int>();
  c.seeded = t.at("seeded").get<bool>();
  c.n = t.at("n").get<int>();
  c.logit_identical = t.at("logit_identical").get<int>();
  c.token_identical = t.at("token_identical").get<int>();
  c.failed = t.at("failed").get<int>();
  c.flagged = t.value("flagged", 0);
  c.not_solo = t.value("not_solo", 0);
  c.ineffective = t.value("ineffective", 0);
  if (auto b = t.find("batching"); b != t.end() && b->is_object()) c.bursts = burst_summary_from(*b);
  for (const auto& b : t.value("batching_by_width", json::array())) c.widths.push_back(burst_summary_from(b));
  return c;
}

json prediction_json(const audit::prediction_result& p) {
  return {{"id", p.claim.id}, {"statement", p.claim.statement}, {"held", p.held()},
          {"outcome", std::string(audit::to_string(p.outcome))},
          {"conditions", p.claim.conditions},
          {"k", p.k}, {"n", p.n}, {"flagged", p.flagged}, {"at_least", p.claim.at_least},
          {"level", p.claim.level == audit::identity_level::logit ? "logit" : "token"},
          {"expect", p.claim.expect == audit::expectation::identical ? "identical" : "diverges"}};
}

audit::prediction_result prediction_from(const json& p) {
  audit::prediction_result r;
  r.claim.id = p.at("id").get<std::string>();
  r.claim.statement = p.at("statement").get<std::string>();
  r.claim.conditions = p.value("conditions", std::vector<std::string>{});
  r.claim.at_least = p.at("at_least").get<double>();
  r.claim.level = p.at("level") == "logit" ? audit::identity_level::logit : audit::identity_level::token;
  r.claim.expect = p.at("expect") == "identical" ? audit::expectation::identical : audit::expectation::diverges;
  r.k = p.at("k").get<int>();
  r.n = p.at("n").get<int>();
  r.flagged = p.value("flagged", 0);
  // Written before outcomes existed: held, or failed (undecided when nothing was counted).
  r.outcome = p.contains("outcome") ? audit::parse_prediction_outcome(p.at("outcome").get<std::string>()).value()
              : p.at("held").get<bool>() ? audit::prediction_outcome::held
              : r.n == 0                 ? audit::prediction_outcome::undecided
                                         : audit::prediction_outcome::failed;
  return r;
}

// Since schema 7, each only when there is something to say (older findings keep their bytes).
void put_harness_sections(json& j, const audit::findings& f) {
  if (!f.resolution.empty()) {
    j["resolution"] = json::object();
    for (const auto& [b, r] : f.resolution) {
      json one = r.facts();
      one["bit_exact"] = r.bit_exact();
      one["describe"] = r.describe();
      if (auto d = r.fixed_decimals()) one["fixed_decimals"] = *d;
      j["resolution"][b] = std::move(one);
    }
  }
  if (!f.selftests.empty()) {
    j["selftests"] = json::object();
    for (const auto& [b, t] : f.selftests)
      j["selftests"][b] = {{"id", t.id}, {"taken_at", t.taken_at}, {"caught", t.caught}, {"faults", t.faults},
                           {"equivalents_flagged", t.equivalents_flagged}, {"equivalents", t.equivalents},
                           {"passed", t.passed}, {"summary", t.summary}, {"paths", t.paths}};
  }
  if (!f.restarts.empty()) j["restarts"] = f.restarts;
  if (!f.quiet_waits.empty()) j["quiet_waits"] = f.quiet_waits;
  if (!f.canary_undecided.empty()) j["canary_undecided"] = f.canary_undecided;
  if (f.foreign_load_bursts > 0) j["foreign_load_bursts"] = f.foreign_load_bursts;
}

void take_harness_sections(const json& j, audit::findings& f) {
  if (j.contains("resolution"))
    for (const auto& [b, r] : j.at("resolution").items()) {
      std::map<std::string, std::string> facts;
      for (const auto& [k, v] : r.items())
        if (v.is_string() && k.starts_with("logprob_")) facts[k] = v.get<std::string>();
      f.resolution[b] = audit::number_format::from_facts(facts);
    }
  if (j.contains("selftests"))
    for (const auto& [b, t] : j.at("selftests").items())
      f.selftests[b] = {t.at("id").get<std::int64_t>(), t.at("taken_at").get<std::string>(), t.at("caught").get<int>(),
                        t.at("faults").get<int>(), t.at("equivalents_flagged").get<int>(), t.at("equivalents").get<int>(),
                        t.at("passed").get<bool>(), t.at("summary").get<std::string>(), t.at("paths").get<std::string>()};
  f.restarts = j.value("restarts", std::vector<std::string>{});
  f.quiet_waits = j.value("quiet_waits", std::vector<std::string>{});
  f.canary_undecided = j.value("canary_undecided", std::vector<std::string>{});
  f.foreign_load_bursts = j.value("foreign_load_bursts", 0);
}

json attribution_json(const audit::attribution_tally& t) {
  return {{"condition", t.condition}, {"backend", t.backend}, {"divergent", t.divergent},
          {"with_steps", t.with_steps}, {"at_first_token", t.at_first_token},
          {"tested", t.tested}, {"at_width_change", t.at_width_change},
          {"at_finish", t.at_finish}, {"at_join", t.at_join}, {"positions", t.positions},
          {"width_changes", t.width_changes}, {"finishes", t.finishes}, {"joins", t.joins},
          {"base_rate", t.base_rate()}, {"p_width_change", t.p_width_change},
          {"no_steps_reason", t.no_steps_reason}};
}

audit::attribution_tally attribution_from(const json& a) {
  audit::attribution_tally t;
  t.condition = a.at("condition").get<std::string>();
  t.backend = a.at("backend").get<std::string>();
  t.divergent = a.at("divergent").get<int>();
  t.with_steps = a.at("with_steps").get<int>();
  t.at_first_token = a.at("at_first_token").get<int>();
  t.tested = a.at("tested").get<int>();
  t.at_width_change = a.at("at_width_change").get<int>();
  t.at_finish = a.at("at_finish").get<int>();
  t.at_join = a.at("at_join").get<int>();
  t.positions = a.at("positions").get<int>();
  t.width_changes = a.at("width_changes").get<int>();
  t.finishes = a.at("finishes").get<int>();
  t.joins = a.at("joins").get<int>();
  t.p_width_change = a.at("p_width_change").get<double>();
  t.no_steps_reason = a.value("no_steps_reason", "");
  return t;
}

json search_json(const audit::search_result& r) {
  json widths = json::array();
  for (const auto& w : r.widths)
    widths.push_back({{"width", w.width},
                      {"trials", w.trials},
                      {"batched_trials", w.batched_trials},
                      {"n", w.n},
                      {"logit_identical", w.logit_identical},
                      {"token_identical", w.token_identical},
                      {"logit_interval", {w.logit_interval.low, w.logit_interval.high}},
                      {"token_interval", {w.token_interval.low, w.token_interval.high}},
                      {"logit_p", w.logit_p},
                      {"token_p", w.token_p},
                      {"logit", std::string(audit::to_string(w.logit))},
                      {"token", std::string(audit::to_string(w.token))}});
  return {{"backend", r.backend},
          {"condition", r.condition},
          {"reference_n", r.reference_n},
          {"reference_logit_identical", r.reference_logit_identical},
          {"reference_token_identical", r.reference_token_identical},
          {"widths", std::move(widths)},
          {"logit_threshold", r.logit_threshold ? json(*r.logit_threshold) : json(nullptr)},
          {"token_threshold", r.token_threshold ? json(*r.token_threshold) : json(nullptr)}};
}

audit::search_result search_from(const json& r) {
  audit::search_result out;
  out.backend = r.at("backend").get<std::string>();
  out.condition = r.at("condition").get<std::string>();
  out.reference_n = r.at("reference_n").get<int>();
  out.reference_logit_identical = r.at("reference_logit_identical").get<int>();
  out.reference_token_identical = r.at("reference_token_identical").get<int>();
  if (!r.at("logit_threshold").is_null()) out.logit_threshold = r.at("logit_threshold").get<int>();
  if (!r.at("token_threshold").is_null()) out.token_threshold = r.at("token_threshold").get<int>();
  for (const auto& w : r.at("widths")) {
    audit::search_width x;
    x.width = w.at("width").get<int>();
    x.trials = w.at("trials").get<int>();
    x.batched_trials = w.at("batched_trials").get<int>();
    x.n = w.at("n").get<int>();
    x.logit_identical = w.at("logit_identical").get<int>();
    x.token_identical = w.at("token_identical").get<int>();
    x.logit_interval = {w.at("logit_interval").at(0).get<double>(), w.at("logit_interval").at(1).get<double>()};
    x.token_interval = {w.at("token_interval").at(0).get<double>(), w.at("token_interval").at(1).get<double>()};
    x.logit_p = w.at("logit_p").get<double>();
    x.token_p = w.at("token_p").get<double>();
    x.logit = audit::parse_search_decision(w.at("logit").get<std::string>()).value();
    x.token = audit::parse_search_decision(w.at("token").get<std::string>()).value();
    out.widths.push_back(x);
  }
  return out;
}

json load_curve_json(const audit::load_curve& c) {
  json levels = json::array();
  for (const auto& l : c.levels)
    levels.push_back({{"group", l.group}, {"level", l.level}, {"measurement", load_measurement_json(l.measurement)},
                      {"probes", l.probes}, {"logit_identical", l.logit_identical},
                      {"token_identical", l.token_identical}, {"flagged", l.flagged}, {"failed", l.failed},
                      {"logit_low", l.logit_low}, {"logit_high", l.logit_high}, {"mean_width", l.mean_width}});
  return {{"backend", c.backend}, {"condition", c.condition},
          {"arrival", std::string(audit::to_string(c.arrival))}, {"first_lost", c.first_lost},
          {"levels", std::move(levels)}};
}

audit::load_curve load_curve_from(const json& c) {
  audit::load_curve x;
  x.backend = c.at("backend").get<std::string>();
  x.condition = c.at("condition").get<std::string>();
  x.arrival = audit::parse_arrival_kind(c.at("arrival").get<std::string>()).value_or(audit::arrival_kind::poisson);
  x.first_lost = c.at("first_lost").get<int>();
  for (const auto& l : c.at("levels")) {
    audit::load_level_finding y;
    y.group = l.at("group").get<std::size_t>();
    y.level = l.at("level").get<std::size_t>();
    y.measurement = load_measurement_from(l.at("measurement"));
    y.probes = l.at("probes").get<int>();
    y.logit_identical = l.at("logit_identical").get<int>();
    y.token_identical = l.at("token_identical").get<int>();
    y.flagged = l.at("flagged").get<int>();
    y.failed = l.at("failed").get<int>();
    y.logit_low = l.at("logit_low").get<double>();
    y.logit_high = l.at("logit_high").get<double>();
    y.mean_width = l.at("mean_width").get<double>();
    x.levels.push_back(std::move(y));
  }
  return x;
}

json frontier_json(const audit::frontier_row& r) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"backend", r.backend},
          {"settings", r.settings ? settings_json(*r.settings) : json(nullptr)},
          {"flags", r.settings ? audit::settings_words(*r.settings) : ""},  // as the report words them
          {"load_n", r.load_n},
          {"load_logit_identical", r.load_logit_identical},
          {"load_token_identical", r.load_token_identical},
          {"load_batched", r.load_batched},
          {"serial_n", r.serial_n},
          {"serial_logit_identical", r.serial_logit_identical},
          {"cache_n", r.cache_n},
          {"cache_logit_identical", r.cache_logit_identical},
          {"failed", r.failed},
          {"tokens_per_s", opt(r.tokens_per_s)},
          {"requests_per_s", opt(r.requests_per_s)},
          {"cost", opt(r.cost)},
          {"reproducible", r.reproducible},
          {"note", r.note}};
}

audit::frontier_row frontier_from(const json& r) {
  auto opt = [](const json& v) { return v.is_null() ? std::optional<double>() : std::optional<double>(v.get<double>()); };
  audit::frontier_row x;
  x.backend = r.at("backend").get<std::string>();
  if (!r.at("settings").is_null()) {
    std::vector<audit::spec_problem> ignored;
    fields::reader rr(ignored);
    x.settings.emplace();
    read_settings(rr, r.at("settings"), "settings", *x.settings);
  }
  x.load_n = r.at("load_n").get<int>();
  x.load_logit_identical = r.at("load_logit_identical").get<int>();
  x.load_token_identical = r.at("load_token_identical").get<int>();
  x.load_batched = r.at("load_batched").get<int>();
  x.serial_n = r.at("serial_n").get<int>();
  x.serial_logit_identical = r.at("serial_logit_identical").get<int>();
  x.cache_n = r.at("cache_n").get<int>();
  x.cache_logit_identical = r.at("cache_logit_identical").get<int>();
  x.failed = r.at("failed").get<int>();
  x.tokens_per_s = opt(r.at("tokens_per_s"));
  x.requests_per_s = opt(r.at("requests_per_s"));
  x.cost = opt(r.at("cost"));
  x.reproducible = r.at("reproducible").get<bool>();
  x.note = r.at("note").get<std::string>();
  return x;
}

// Each element of a list through `to_json`.
template <class Items, class ToJson>
json array_of(const Items& items, ToJson to_json) {
  json out = json::array();
  for (const auto& i : items) out.push_back(to_json(i));
  return out;
}

}  // namespace

std::string encode_repro_files(const std::map<std::string, std::string>& files) {
  if (files.empty()) return "";
  return json(files).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::map<std::string, std::string> decode_repro_files(std::string_view text) {
  std::map<std::string, std::string> out;
  const auto j = json::parse(text, nullptr, false);
  if (j.is_object())
    for (const auto& [name, body] : j.items())
      if (body.is_string()) out[name] = body.get<std::string>();
  return out;
}

std::string encode_findings_format1(const audit::findings& f) {
  json j;
  j["valid"] = f.valid;
  if (!f.valid) j["invalid_reason"] = f.invalid_reason;
  j["backends"] = f.backends;
  j["pooled"] = array_of(f.pooled, tally_json);
  j["per_backend"] = json::object();
  for (const auto& [b, rows] : f.per_backend) j["per_backend"][b] = array_of(rows, tally_json);
  j["findings"] = f.sentences;
  j["predictions"] = array_of(f.predictions, prediction_json);
  j["failed_runs"] = f.failed_runs;
  j["flagged_runs"] = f.flagged_runs;
  j["fingerprint_changes"] = f.fingerprint_changes;
  if (!f.missing_fingerprints.empty()) j["missing_fingerprints"] = f.missing_fingerprints;  // since schema 6
  if (!f.machines.empty()) j["machines"] = f.machines;                                         // since schema 6
  if (f.reference) j["reference"] = reference_json(*f.reference);                             // since schema 6
  put_harness_sections(j, f);
  if (!f.attributions.empty()) j["attributions"] = array_of(f.attributions, attribution_json);  // since schema 8
  j["searches"] = array_of(f.searches, search_json);
  j["throughput"] = json::array();
  for (const auto& t : f.throughput)
    j["throughput"].push_back({{"backend", t.backend}, {"width", t.width}, {"bursts", t.bursts},
                               {"requests", t.requests}, {"tokens", t.tokens}, {"seconds", t.seconds},
                               {"tokens_per_s", t.tokens_per_s}, {"requests_per_s", t.requests_per_s}});
  if (!f.load_curves.empty()) j["load_curves"] = array_of(f.load_curves, load_curve_json);  // since schema 9
  j["frontier"] = array_of(f.frontier, frontier_json);
  j["evidence_thresholds"] = {{"min_batching", f.thresholds.min_batching},
                              {"min_overlap", f.thresholds.min_overlap},
                              {"require_server_measure", f.thresholds.require_server_measure},
                              {"min_reused_tokens", f.thresholds.min_reused_tokens}};
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

std::optional<audit::findings> decode_findings_format1(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("valid") || !j.contains("pooled") || !j.contains("predictions")) return std::nullopt;
  try {
    audit::findings f;
    f.valid = j.at("valid").get<bool>();
    f.invalid_reason = j.value("invalid_reason", "");
    f.backends = j.at("backends").get<std::vector<std::string>>();
    for (const auto& t : j.at("pooled")) f.pooled.push_back(tally_from(t));
    for (const auto& [b, rows] : j.at("per_backend").items())
      for (const auto& t : rows) f.per_backend[b].push_back(tally_from(t));
    f.sentences = j.at("findings").get<std::vector<std::string>>();
    for (const auto& p : j.at("predictions")) f.predictions.push_back(prediction_from(p));
    f.failed_runs = j.at("failed_runs").get<int>();
    f.flagged_runs = j.value("flagged_runs", 0);
    f.fingerprint_changes = j.at("fingerprint_changes").get<std::vector<std::string>>();
    if (j.contains("missing_fingerprints"))
      f.missing_fingerprints = j.at("missing_fingerprints").get<std::vector<std::string>>();
    if (j.contains("machines")) f.machines = j.at("machines").get<std::map<std::string, std::map<std::string, std::string>>>();
    if (j.contains("reference")) f.reference = reference_of(j.at("reference"));
    take_harness_sections(j, f);
    for (const auto& a : j.value("attributions", json::array())) f.attributions.push_back(attribution_from(a));
    for (const auto& r : j.value("searches", json::array())) f.searches.push_back(search_from(r));
    for (const auto& t : j.value("throughput", json::array()))
      f.throughput.push_back({t.at("backend").get<std::string>(), t.at("width").get<int>(), t.at("bursts").get<int>(),
                              t.at("requests").get<int>(), t.at("tokens").get<long long>(),
                              t.at("seconds").get<double>(), t.at("tokens_per_s").get<double>(),
                              t.at("requests_per_s").get<double>()});
    for (const auto& c : j.value("load_curves", json::array())) f.load_curves.push_back(load_curve_from(c));
    for (const auto& r : j.value("frontier", json::array())) f.frontier.push_back(frontier_from(r));
    if (auto t = j.find("evidence_thresholds"); t != j.end() && t->is_object()) {
      f.thresholds.min_batching = t->at("min_batching").get<double>();
      f.thresholds.min_overlap = t->at("min_overlap").get<double>();
      f.thresholds.require_server_measure = t->at("require_server_measure").get<bool>();
      f.thresholds.min_reused_tokens = t->at("min_reused_tokens").get<std::int64_t>();
    }
    return f;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

// The "format" member of a document, 1 when it has none; 0 when the text is no JSON object.
int format_of(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return 0;
  const auto f = j.find("format");
  if (f == j.end()) return 1;
  return f->is_number_integer() ? f->get<int>() : -1;
}

}  // namespace

std::string encode_spec(const audit::audit_spec& spec) { return encode_spec_format1(spec); }

expected<audit::audit_spec, std::vector<audit::spec_problem>> decode_spec(std::string_view text) {
  auto v1 = read_spec_format1(text);
  if (v1) return v1;
  if (const int f = format_of(text); f != 1 && f != 0)
    return unexpected{std::vector<audit::spec_problem>{
        {"format", "a spec document of format " + std::to_string(f) + ", newer than this logitaudit reads (" +
                       std::to_string(kDocumentFormat) + ")"}}};
  return v1;
}

std::string encode_findings(const audit::findings& f) { return encode_findings_format1(f); }

std::optional<audit::findings> decode_findings(std::string_view text) {
  if (format_of(text) != 1) return std::nullopt;
  return decode_findings_format1(text);
}

}  // namespace logitaudit::storage
