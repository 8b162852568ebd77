// Spec JSON <-> audit_spec, and findings -> JSON.
#include "spec_json.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "clients/api_registry.hpp"

namespace logitaudit::api {
namespace {

using json = nlohmann::json;
using audit::spec_problem;

class reader {
 public:
  explicit reader(std::vector<spec_problem>& problems) : problems_(problems) {}

  void problem(const std::string& field, const std::string& message) { problems_.push_back({field, message}); }

  // Reports members of `j` not in `known`.
  void only(const json& j, const std::string& at, std::initializer_list<const char*> known) {
    std::set<std::string> k(known.begin(), known.end());
    for (const auto& [key, v] : j.items())
      if (!k.count(key)) problem(at.empty() ? key : at + "." + key, "unknown field");
  }

  bool text(const json& j, const char* key, const std::string& at, std::string& out) {
    auto it = j.find(key);
    if (it == j.end()) return false;
    if (!it->is_string()) return problem(field(at, key), "must be a string"), false;
    out = it->get<std::string>();
    return true;
  }
  bool boolean(const json& j, const char* key, const std::string& at, bool& out) {
    auto it = j.find(key);
    if (it == j.end()) return false;
    if (!it->is_boolean()) return problem(field(at, key), "must be true or false"), false;
    out = it->get<bool>();
    return true;
  }
  bool integer(const json& j, const char* key, const std::string& at, int& out) {
    auto it = j.find(key);
    if (it == j.end()) return false;
    if (!it->is_number_integer()) return problem(field(at, key), "must be an integer"), false;
    const auto v = it->get<std::int64_t>();
    if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
      return problem(field(at, key), "is too large"), false;
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      return problem(field(at, key), "is out of range"), false;
    out = static_cast<int>(v);
    return true;
  }
  bool unsigned64(const json& j, const char* key, const std::string& at, std::uint64_t& out) {
    auto it = j.find(key);
    if (it == j.end()) return false;
    if (!it->is_number_unsigned()) return problem(field(at, key), "must be a non-negative integer"), false;
    out = it->get<std::uint64_t>();
    return true;
  }
  bool number(const json& j, const char* key, const std::string& at, double& out) {
    auto it = j.find(key);
    if (it == j.end()) return false;
    if (!it->is_number()) return problem(field(at, key), "must be a number"), false;
    out = it->get<double>();
    if (!std::isfinite(out)) return problem(field(at, key), "must be finite"), false;
    return true;
  }
  bool strings(const json& j, const char* key, const std::string& at, std::vector<std::string>& out) {
    auto it = j.find(key);
    if (it == j.end()) return false;
    if (!it->is_array()) return problem(field(at, key), "must be an array of strings"), false;
    out.clear();
    for (std::size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        problem(field(at, key) + "[" + std::to_string(i) + "]", "must be a string");
        continue;
      }
      out.push_back((*it)[i].get<std::string>());
    }
    return true;
  }
  static std::string field(const std::string& at, const char* key) { return at.empty() ? key : at + "." + key; }

 private:
  std::vector<spec_problem>& problems_;
};

void read_backends(reader& r, const json& arr, audit::audit_spec& s) {
  s.backends.clear();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string at = "backends[" + std::to_string(i) + "]";
    const auto& b = arr[i];
    audit::backend_ref ref;
    if (b.is_string()) {  // the name of a backend configured in the daemon
      ref.name = b.get<std::string>();
    } else if (b.is_object()) {
      r.only(b, at, {"name", "url", "api"});
      if (!r.text(b, "name", at, ref.name)) r.problem(at + ".name", "is required");
      r.text(b, "url", at, ref.url);
      r.text(b, "api", at, ref.api);
    } else {
      r.problem(at, "must be a backend name or an object {name, url, api}");
      continue;
    }
    s.backends.push_back(ref);
  }
}

void read_conditions(reader& r, const json& arr, audit::audit_spec& s) {
  s.conditions.clear();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string at = "conditions[" + std::to_string(i) + "]";
    const auto& c = arr[i];
    if (!c.is_object()) {
      r.problem(at, "must be an object");
      continue;
    }
    r.only(c, at, {"name", "kind", "concurrency", "replicates", "seeded", "all_prompts", "seeded_replicates"});
    audit::condition cond;
    if (!r.text(c, "name", at, cond.name)) r.problem(at + ".name", "is required");
    std::string kind;
    if (!r.text(c, "kind", at, kind)) r.problem(at + ".kind", "is required");
    else if (auto k = audit::parse_condition_kind(kind)) cond.kind = *k;
    else
      r.problem(at + ".kind",
                "must be one of repeat, concurrent, cross_batch, cache_reuse, control_prompt, control_seed, "
                "control_temperature");
    r.integer(c, "concurrency", at, cond.concurrency);
    r.integer(c, "replicates", at, cond.replicates);
    r.boolean(c, "seeded", at, cond.seeded);
    r.boolean(c, "all_prompts", at, cond.all_prompts);
    r.integer(c, "seeded_replicates", at, cond.seeded_replicates);
    s.conditions.push_back(cond);
  }
}

void read_predictions(reader& r, const json& arr, audit::audit_spec& s) {
  s.predictions.clear();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string at = "predictions[" + std::to_string(i) + "]";
    const auto& p = arr[i];
    if (!p.is_object()) {
      r.problem(at, "must be an object");
      continue;
    }
    r.only(p, at, {"id", "statement", "conditions", "level", "expect", "at_least"});
    audit::prediction pr;
    if (!r.text(p, "id", at, pr.id)) r.problem(at + ".id", "is required");
    r.text(p, "statement", at, pr.statement);
    if (!r.strings(p, "conditions", at, pr.conditions)) r.problem(at + ".conditions", "is required");
    std::string level = "logit", expect = "identical";
    r.text(p, "level", at, level);
    r.text(p, "expect", at, expect);
    if (level == "logit") pr.level = audit::identity_level::logit;
    else if (level == "token") pr.level = audit::identity_level::token;
    else r.problem(at + ".level", "must be \"logit\" or \"token\"");
    if (expect == "identical") pr.expect = audit::expectation::identical;
    else if (expect == "diverges") pr.expect = audit::expectation::diverges;
    else r.problem(at + ".expect", "must be \"identical\" or \"diverges\"");
    r.number(p, "at_least", at, pr.at_least);
    s.predictions.push_back(pr);
  }
}

}  // namespace

expected<audit::audit_spec, std::vector<spec_problem>> parse_spec(std::string_view text,
                                                                  const audit::spec_limits& limits) {
  auto s = read_spec(text);
  if (!s) return s;
  auto invalid = audit::validate(*s, limits, clients::api_kinds().names());
  if (!invalid.empty()) return unexpected{std::move(invalid)};
  return s;
}

expected<audit::audit_spec, std::vector<spec_problem>> read_spec(std::string_view text) {
  std::vector<spec_problem> problems;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return unexpected{std::vector<spec_problem>{{"", "the body is not valid JSON"}}};
  if (!j.is_object()) return unexpected{std::vector<spec_problem>{{"", "the spec must be a JSON object"}}};
  reader r(problems);
  r.only(j, "", {"preset", "backends", "prompts", "n_predict", "top_k", "temperature", "seed", "control_temperature",
                 "conditions", "predictions", "tags"});

  audit::audit_spec s;
  std::string preset;
  if (r.text(j, "preset", "", preset)) {
    if (preset == "seed-protocol") s = audit::seed_protocol({});
    else r.problem("preset", "unknown preset '" + preset + "' (known: seed-protocol)");
  }
  if (auto it = j.find("backends"); it != j.end()) {
    if (it->is_array()) read_backends(r, *it, s);
    else r.problem("backends", "must be an array");
  }
  r.strings(j, "prompts", "", s.prompts);
  r.integer(j, "n_predict", "", s.n_predict);
  r.integer(j, "top_k", "", s.top_k);
  r.number(j, "temperature", "", s.temperature);
  r.unsigned64(j, "seed", "", s.seed);
  r.number(j, "control_temperature", "", s.control_temperature);
  if (auto it = j.find("conditions"); it != j.end()) {
    if (it->is_array()) read_conditions(r, *it, s);
    else r.problem("conditions", "must be an array");
  }
  if (auto it = j.find("predictions"); it != j.end()) {
    if (it->is_array()) read_predictions(r, *it, s);
    else r.problem("predictions", "must be an array");
  }
  r.strings(j, "tags", "", s.tags);
  if (!problems.empty()) return unexpected{std::move(problems)};
  return s;
}

std::string spec_to_json(const audit::audit_spec& s) {
  json j;
  if (!s.preset.empty()) j["preset"] = s.preset;
  j["backends"] = json::array();
  for (const auto& b : s.backends) j["backends"].push_back({{"name", b.name}, {"url", b.url}, {"api", b.api}});
  j["prompts"] = s.prompts;
  j["n_predict"] = s.n_predict;
  j["top_k"] = s.top_k;
  j["temperature"] = s.temperature;
  j["seed"] = s.seed;
  j["control_temperature"] = s.control_temperature;
  j["conditions"] = json::array();
  for (const auto& c : s.conditions)
    j["conditions"].push_back({{"name", c.name}, {"kind", std::string(audit::to_string(c.kind))},
                               {"concurrency", c.concurrency}, {"replicates", c.replicates}, {"seeded", c.seeded},
                               {"all_prompts", c.all_prompts}, {"seeded_replicates", c.seeded_replicates}});
  j["predictions"] = json::array();
  for (const auto& p : s.predictions)
    j["predictions"].push_back({{"id", p.id}, {"statement", p.statement}, {"conditions", p.conditions},
                                {"level", p.level == audit::identity_level::logit ? "logit" : "token"},
                                {"expect", p.expect == audit::expectation::identical ? "identical" : "diverges"},
                                {"at_least", p.at_least}});
  j["tags"] = s.tags;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string findings_to_json(const audit::findings& f) {
  auto tally = [](const audit::condition_tally& t) {
    json j{{"condition", t.condition},       {"kind", std::string(audit::to_string(t.kind))},
           {"concurrency", t.concurrency},   {"seeded", t.seeded},
           {"control", t.control()},         {"n", t.n},
           {"logit_identical", t.logit_identical}, {"token_identical", t.token_identical},
           {"failed", t.failed},             {"flagged", t.flagged},
           {"flagged_as", std::string(audit::to_string(audit::flag_of(t.kind)))}};
    if (t.bursts)
      j["batching"] = {{"bursts", t.bursts->bursts},
                       {"batched", t.bursts->batched},
                       {"width", t.bursts->width},
                       {"expected", t.bursts->expected},
                       {"median_measured", t.bursts->median_measured ? json(*t.bursts->median_measured) : json(nullptr)},
                       {"measured_by", std::string(audit::to_string(t.bursts->measured_by))},
                       {"median_overlap", t.bursts->median_overlap}};
    return j;
  };
  json j;
  j["valid"] = f.valid;
  if (!f.valid) j["invalid_reason"] = f.invalid_reason;
  j["backends"] = f.backends;
  j["pooled"] = json::array();
  for (const auto& t : f.pooled) j["pooled"].push_back(tally(t));
  j["per_backend"] = json::object();
  for (const auto& [b, rows] : f.per_backend) {
    j["per_backend"][b] = json::array();
    for (const auto& t : rows) j["per_backend"][b].push_back(tally(t));
  }
  j["findings"] = f.sentences;
  j["predictions"] = json::array();
  for (const auto& p : f.predictions)
    j["predictions"].push_back({{"id", p.claim.id}, {"statement", p.claim.statement}, {"held", p.held()},
                                {"outcome", std::string(audit::to_string(p.outcome))},
                                {"conditions", p.claim.conditions},
                                {"k", p.k}, {"n", p.n}, {"flagged", p.flagged}, {"at_least", p.claim.at_least},
                                {"level", p.claim.level == audit::identity_level::logit ? "logit" : "token"},
                                {"expect", p.claim.expect == audit::expectation::identical ? "identical" : "diverges"}});
  j["failed_runs"] = f.failed_runs;
  j["flagged_runs"] = f.flagged_runs;
  j["fingerprint_changes"] = f.fingerprint_changes;
  j["evidence_thresholds"] = {{"min_batching", f.thresholds.min_batching},
                              {"min_overlap", f.thresholds.min_overlap},
                              {"require_server_measure", f.thresholds.require_server_measure},
                              {"min_reused_tokens", f.thresholds.min_reused_tokens}};
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

std::optional<audit::findings> findings_from_json(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("valid") || !j.contains("pooled") || !j.contains("predictions")) return std::nullopt;
  try {
    auto tally = [](const json& t) {
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
      if (auto b = t.find("batching"); b != t.end() && b->is_object()) {
        audit::burst_summary s;
        s.bursts = b->at("bursts").get<int>();
        s.batched = b->at("batched").get<int>();
        s.width = b->at("width").get<int>();
        s.expected = b->at("expected").get<double>();
        if (!b->at("median_measured").is_null()) s.median_measured = b->at("median_measured").get<double>();
        s.measured_by = audit::parse_concurrency_measure(b->at("measured_by").get<std::string>()).value();
        s.median_overlap = b->at("median_overlap").get<double>();
        c.bursts = s;
      }
      return c;
    };
    audit::findings f;
    f.valid = j.at("valid").get<bool>();
    f.invalid_reason = j.value("invalid_reason", "");
    f.backends = j.at("backends").get<std::vector<std::string>>();
    for (const auto& t : j.at("pooled")) f.pooled.push_back(tally(t));
    for (const auto& [b, rows] : j.at("per_backend").items())
      for (const auto& t : rows) f.per_backend[b].push_back(tally(t));
    f.sentences = j.at("findings").get<std::vector<std::string>>();
    for (const auto& p : j.at("predictions")) {
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
      f.predictions.push_back(std::move(r));
    }
    f.failed_runs = j.at("failed_runs").get<int>();
    f.flagged_runs = j.value("flagged_runs", 0);
    f.fingerprint_changes = j.at("fingerprint_changes").get<std::vector<std::string>>();
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

}  // namespace logitaudit::api
