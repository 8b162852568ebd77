// The seed-protocol preset and spec validation.
#include "spec.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "enum_names.hpp"

namespace logitaudit::audit {

std::string_view to_string(condition_kind k) {
  switch (k) {
    case condition_kind::repeat: return "repeat";
    case condition_kind::concurrent: return "concurrent";
    case condition_kind::cross_batch: return "cross_batch";
    case condition_kind::cache_reuse: return "cache_reuse";
    case condition_kind::control_prompt: return "control_prompt";
    case condition_kind::control_seed: return "control_seed";
    case condition_kind::control_temperature: return "control_temperature";
  }
  return "?";
}

std::optional<condition_kind> parse_condition_kind(std::string_view s) {
  return parse_by_name(std::array{condition_kind::repeat, condition_kind::concurrent, condition_kind::cross_batch,
                                  condition_kind::cache_reuse, condition_kind::control_prompt, condition_kind::control_seed,
                                  condition_kind::control_temperature},
                       s);
}

bool is_control(condition_kind k) {
  return k == condition_kind::control_prompt || k == condition_kind::control_seed ||
         k == condition_kind::control_temperature;
}

std::vector<std::string> default_prompts() {
  return {"The history of the printing press begins", "Once upon a time, in a quiet village,",
          "The three laws of thermodynamics state that"};
}

audit_spec seed_protocol(std::vector<backend_ref> backends) {
  audit_spec s;
  s.preset = "seed-protocol";
  s.backends = std::move(backends);
  s.prompts = default_prompts();
  // Per backend: 3 prompts x (6 greedy + 4 seeded) serial repeats = 30 streams, as the seed's
  // 60 pooled over two models; one burst per concurrency level; one stream each for
  // cross-batch, cache reuse and every control.
  s.conditions = {
      {"repeat_greedy", condition_kind::repeat, 1, 6, false, true, 4},
      {"concurrent_greedy_c2", condition_kind::concurrent, 2, 1, false, false},
      {"concurrent_greedy_c4", condition_kind::concurrent, 4, 1, false, false},
      {"concurrent_greedy_c8", condition_kind::concurrent, 8, 1, false, false},
      {"concurrent_seeded_c6", condition_kind::concurrent, 6, 1, true, false},
      {"cross_batch", condition_kind::cross_batch, 4, 1, false, false},
      {"cache_reuse", condition_kind::cache_reuse, 1, 1, false, false},
      {"control_prompt", condition_kind::control_prompt, 1, 1, false, false},
      {"control_seed", condition_kind::control_seed, 1, 1, true, false},
      {"control_temperature", condition_kind::control_temperature, 1, 1, true, false},
  };
  s.predictions = {
      {"P1", "serial repeats are logit-identical", {"repeat_greedy"}, identity_level::logit,
       expectation::identical, 1.0},
      {"P2", "concurrency, cross-batch and cache reuse perturb the logits",
       {"concurrent_greedy_c4", "concurrent_greedy_c8", "cross_batch", "cache_reuse"}, identity_level::logit,
       expectation::diverges, 0.5},
      {"P3", "the greedy token stream survives that perturbation",
       {"concurrent_greedy_c2", "concurrent_greedy_c4", "concurrent_greedy_c8", "cross_batch", "cache_reuse"},
       identity_level::token, expectation::identical, 1.0},
      {"P4", "seeded sampling does not survive concurrency", {"concurrent_seeded_c6"}, identity_level::token,
       expectation::diverges, 0.25},
  };
  return s;
}

std::vector<spec_problem> validate(const audit_spec& s, const spec_limits& lim, std::span<const std::string> api_kinds) {
  std::vector<spec_problem> p;
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };

  if (s.backends.empty()) add("backends", "at least one backend is required");
  if (static_cast<int>(s.backends.size()) > lim.max_backends)
    add("backends", "at most " + std::to_string(lim.max_backends) + " backends");
  std::set<std::string> names;
  for (std::size_t i = 0; i < s.backends.size(); ++i) {
    const auto& b = s.backends[i];
    const std::string f = "backends[" + std::to_string(i) + "]";
    if (b.name.empty()) add(f + ".name", "must not be empty");
    else if (!names.insert(b.name).second) add(f + ".name", "duplicate backend name '" + b.name + "'");
    if (std::find(api_kinds.begin(), api_kinds.end(), b.api) == api_kinds.end()) {
      std::string known;
      for (const auto& k : api_kinds) known += (known.empty() ? "" : ", ") + k;
      add(f + ".api", "unknown API kind '" + b.api.substr(0, 64) + "' (known: " + known + ")");
    }
    if (!b.url.empty() && !b.url.starts_with("http://")) add(f + ".url", "must start with http://");
  }

  if (s.prompts.empty()) add("prompts", "at least one prompt is required");
  if (static_cast<int>(s.prompts.size()) > lim.max_prompts)
    add("prompts", "at most " + std::to_string(lim.max_prompts) + " prompts");
  std::set<std::string> seen_prompts;
  for (std::size_t i = 0; i < s.prompts.size(); ++i) {
    if (s.prompts[i].empty()) add("prompts[" + std::to_string(i) + "]", "must not be empty");
    else if (s.prompts[i].find('\0') != std::string::npos)
      add("prompts[" + std::to_string(i) + "]", "must not contain NUL characters");
    else if (!seen_prompts.insert(s.prompts[i]).second)
      add("prompts[" + std::to_string(i) + "]", "duplicate prompt: every prompt must differ (controls compare them)");
    if (s.prompts[i].size() > lim.max_prompt_bytes)
      add("prompts[" + std::to_string(i) + "]", "longer than " + std::to_string(lim.max_prompt_bytes) + " bytes");
  }
  if (s.n_predict < 1 || s.n_predict > lim.max_n_predict)
    add("n_predict", "must be between 1 and " + std::to_string(lim.max_n_predict));
  if (s.top_k < 1 || s.top_k > lim.max_top_k) add("top_k", "must be between 1 and " + std::to_string(lim.max_top_k));
  if (!(s.temperature > 0 && s.temperature <= 10) || !std::isfinite(s.temperature))
    add("temperature", "must be in (0, 10]: it is the temperature of seeded conditions");
  if (!(s.control_temperature > 0 && s.control_temperature <= 10) || s.control_temperature == s.temperature)
    add("control_temperature", "must be in (0, 10] and differ from temperature");

  if (s.conditions.empty()) add("conditions", "at least one condition is required");
  std::set<std::string> cond_names;
  std::size_t requests = 0;
  bool has_control = false;
  for (std::size_t i = 0; i < s.conditions.size(); ++i) {
    const auto& c = s.conditions[i];
    const std::string f = "conditions[" + std::to_string(i) + "]";
    if (c.name.empty()) add(f + ".name", "must not be empty");
    else if (!cond_names.insert(c.name).second) add(f + ".name", "duplicate condition name '" + c.name + "'");
    if (c.replicates < 1 || c.replicates > lim.max_replicates)
      add(f + ".replicates", "must be between 1 and " + std::to_string(lim.max_replicates));
    const bool burst = c.kind == condition_kind::concurrent || c.kind == condition_kind::cross_batch;
    if (burst && (c.concurrency < 2 || c.concurrency > lim.max_concurrency))
      add(f + ".concurrency", "must be between 2 and " + std::to_string(lim.max_concurrency) + " for " +
                                  std::string(to_string(c.kind)));
    if (!burst && c.concurrency != 1) add(f + ".concurrency", "must be 1 for " + std::string(to_string(c.kind)));
    if (c.seeded_replicates < 0 || c.seeded_replicates > lim.max_replicates)
      add(f + ".seeded_replicates", "must be between 0 and " + std::to_string(lim.max_replicates));
    if (c.seeded_replicates != 0 && c.kind != condition_kind::repeat)
      add(f + ".seeded_replicates", "only a repeat condition has seeded replicates");
    if (c.kind == condition_kind::control_prompt && s.prompts.size() < 2)
      add(f + ".kind", "control_prompt needs at least two prompts");
    if ((c.kind == condition_kind::control_seed || c.kind == condition_kind::control_temperature) && !c.seeded)
      add(f + ".seeded", "a seed or temperature control must be seeded (greedy ignores both)");
    has_control = has_control || is_control(c.kind);
    const std::size_t prompts = c.all_prompts ? s.prompts.size() : 1;
    requests += prompts * static_cast<std::size_t>(std::max(0, c.replicates) + std::max(0, c.seeded_replicates)) *
                static_cast<std::size_t>(std::max(1, c.concurrency)) * (c.kind == condition_kind::cache_reuse ? 2 : 1);
  }
  if (!s.conditions.empty() && !has_control)
    add("conditions", "at least one positive control (control_prompt, control_seed or control_temperature) is "
                      "required: without one, an all-identical result cannot be told from a broken comparator");
  requests = (requests + s.prompts.size() * 2) * std::max<std::size_t>(1, s.backends.size());
  if (requests > lim.max_requests)
    add("conditions", "the job would send " + std::to_string(requests) + " requests; the limit is " +
                          std::to_string(lim.max_requests));

  for (std::size_t i = 0; i < s.predictions.size(); ++i) {
    const auto& pr = s.predictions[i];
    const std::string f = "predictions[" + std::to_string(i) + "]";
    if (pr.id.empty()) add(f + ".id", "must not be empty");
    if (pr.conditions.empty()) add(f + ".conditions", "must name at least one condition");
    for (std::size_t j = 0; j < pr.conditions.size(); ++j)
      if (!cond_names.count(pr.conditions[j]))
        add(f + ".conditions[" + std::to_string(j) + "]", "no condition named '" + pr.conditions[j] + "'");
    if (!(pr.at_least >= 0 && pr.at_least <= 1)) add(f + ".at_least", "must be a fraction in [0, 1]");
  }
  for (std::size_t i = 0; i < s.tags.size(); ++i)
    if (s.tags[i].empty() || s.tags[i].size() > 64) add("tags[" + std::to_string(i) + "]", "must be 1 to 64 characters");
  return p;
}

}  // namespace logitaudit::audit
