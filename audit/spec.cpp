// The presets (one table, kPresets), spec validation and sweep expansion.
#include "spec.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "certify.hpp"
#include "enum_names.hpp"
#include "numbers.hpp"

namespace logitaudit::audit {

std::string_view to_string(condition_kind k) { return enumerator_name(k); }

std::string_view to_string(neighbour_prompts p) { return enumerator_name(p); }

std::string_view to_string(identity_level l) { return enumerator_name(l); }

std::optional<neighbour_prompts> parse_neighbour_prompts(std::string_view s) {
  return parse_by_name(std::array{neighbour_prompts::identical, neighbour_prompts::same_length, neighbour_prompts::other_lengths}, s);
}

std::string neighbour_prompt(const std::string& target, neighbour_prompts kind, std::size_t i) {
  switch (kind) {
    case neighbour_prompts::identical: return target;
    case neighbour_prompts::same_length: {
      // The words rotated by i+1: the same words (so, nearly always, the same token count),
      // another text. A one-word prompt cannot rotate: its characters are reversed instead.
      std::vector<std::string> words;
      std::size_t at = 0;
      while (at < target.size()) {
        const auto next = target.find(' ', at);
        words.push_back(target.substr(at, next == std::string::npos ? std::string::npos : next - at));
        if (next == std::string::npos) break;
        at = next + 1;
      }
      if (words.size() < 2) return std::string(target.rbegin(), target.rend());
      std::rotate(words.begin(), words.begin() + static_cast<std::ptrdiff_t>((i + 1) % words.size()), words.end());
      std::string out;
      for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
      return out;
    }
    case neighbour_prompts::other_lengths: {
      std::string out = target;
      for (std::size_t k = 0; k < i + 1; ++k) out += " " + target;
      return out;
    }
  }
  return target;
}

std::optional<condition_kind> parse_condition_kind(std::string_view s) {
  return parse_by_name(kConditionKinds, s);
}

bool streams_decode_steps(const condition& c) { return c.decode_steps.value_or(c.kind == condition_kind::neighbours); }

evidence_flag flag_of(condition_kind k) {
  switch (k) {
    case condition_kind::concurrent:
    case condition_kind::cross_batch:
    case condition_kind::threshold_search:
    case condition_kind::neighbours: return evidence_flag::not_batched;
    case condition_kind::throughput: return evidence_flag::none;
    case condition_kind::load: return evidence_flag::level_not_reached;
    case condition_kind::cache_reuse: return evidence_flag::not_reused;
    case condition_kind::repeat:
    case condition_kind::control_prompt:
    case condition_kind::control_seed:
    case condition_kind::control_temperature:
    case condition_kind::observer: return evidence_flag::none;
  }
  return evidence_flag::none;
}

std::vector<observer_ask> observer_asks(int top_k, bool llama) {
  std::vector<observer_ask> out;
  // The large ask: 4x the top-k, at least 20; llama.cpp takes up to 100 here, OpenAI-compatible
  // servers cap logprobs at 20 (vLLM, OpenAI), so there it is 20 or the top-k itself.
  const int many = llama ? std::min(100, std::max(20, 4 * top_k)) : std::max(top_k, 20);
  for (int n : {llama ? 0 : -1, 1, top_k, many})
    if (n >= 0 && std::none_of(out.begin(), out.end(), [n](const observer_ask& a) { return a.n_probs == n; }))
      out.push_back({n, false});
  if (llama) out.push_back({std::max(1, top_k), true});
  return out;
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
  // cross-batch, cache reuse and every control; and the observer, cheap (the target prompt
  // once per ask, 5 requests on llama.cpp): asking to see the numbers must not move the tokens.
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
      {"observer", condition_kind::observer, 1, 1, false, false},
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

audit_spec threshold_preset(std::vector<backend_ref> backends) {
  audit_spec s;
  s.preset = "threshold";
  s.backends = std::move(backends);
  s.prompts = default_prompts();
  condition search{"threshold_greedy", condition_kind::threshold_search, 8, 1, false, false};
  s.conditions = {search, {"control_prompt", condition_kind::control_prompt, 1, 1, false, false}};
  return s;
}

audit_spec sweep_preset() {
  audit_spec s;
  s.preset = "sweep";
  s.prompts = default_prompts();
  s.conditions = {
      {"repeat_greedy", condition_kind::repeat, 1, 3, false, false},
      {"concurrent_greedy_c4", condition_kind::concurrent, 4, 2, false, false},
      {"cross_batch", condition_kind::cross_batch, 4, 1, false, false},
      {"cache_reuse", condition_kind::cache_reuse, 1, 1, false, false},
      {"control_prompt", condition_kind::control_prompt, 1, 1, false, false},
  };
  s.sweep = sweep_spec{};
  return s;
}

// Attribution experiments (docs/explain.md): the target at one width (4) beside neighbours that
// differ in one property at a time, with serial repeats to keep repeat-stability apart from
// batch composition, and a positive control.
audit_spec explain_preset(std::vector<backend_ref> backends) {
  audit_spec s;
  s.preset = "explain";
  s.backends = std::move(backends);
  s.prompts = default_prompts();
  const int n = s.n_predict, half = s.n_predict / 2;
  auto neighbours = [](std::string name, neighbour_settings settings) {
    condition c{std::move(name), condition_kind::neighbours, 4, 4, false, false};
    c.neighbours = std::move(settings);
    return c;
  };
  s.conditions = {
      {"repeat_greedy", condition_kind::repeat, 1, 4, false, false},
      neighbours("explain_identical", {}),
      neighbours("explain_same_length", {neighbour_prompts::same_length, false, {}, {}}),
      neighbours("explain_other_lengths", {neighbour_prompts::other_lengths, false, {}, {}}),
      neighbours("explain_early_finisher", {neighbour_prompts::identical, false, {half, n, n}, {}}),
      neighbours("explain_late_joiner", {neighbour_prompts::identical, false, {}, {0, 0, half}}),
      neighbours("explain_order", {neighbour_prompts::same_length, true, {}, {}}),
      {"control_prompt", condition_kind::control_prompt, 1, 1, false, false},
  };
  return s;
}

audit_spec selftest_preset(std::vector<backend_ref> backends) {
  audit_spec s;
  s.preset = "selftest";
  s.backends = std::move(backends);
  s.prompts = default_prompts();
  s.n_predict = 16;
  s.selftest = true;
  s.wait_for_quiet_s = 10;
  s.conditions = {
      {"repeat_greedy", condition_kind::repeat, 1, 2, false, false},
      {"concurrent_greedy_c4", condition_kind::concurrent, 4, 1, false, false},
      {"control_prompt", condition_kind::control_prompt, 1, 1, false, false},
  };
  return s;
}

audit_spec load_curve_preset(std::vector<backend_ref> backends) {
  audit_spec s;
  s.preset = "load-curve";
  s.backends = std::move(backends);
  s.prompts = default_prompts();
  condition load{"load_poisson", condition_kind::load, 1, 1, false, false};
  load.load.arrival = arrival_kind::poisson;
  // Saturation first: the levels are fifths of the way from the synchronous rate to the
  // maximum throughput, so the top one fills the slots (docs/load.md).
  load.load.sweep = true;
  load.load.levels = {0.2, 0.4, 0.6, 0.8, 1.0};
  load.load.slo_ttft_ms = 1000;
  load.load.slo_itl_ms = 100;
  load.load.duration_s = 20;
  load.load.probes = 6;
  load.load.prompt_tokens = {{16, 64, 256}, {}, 0, 0};
  load.load.output_tokens = {{16, 32, 64}, {}, 0, 0};
  s.conditions = {
      {"repeat_greedy", condition_kind::repeat, 1, 4, false, false},
      load,
      {"control_prompt", condition_kind::control_prompt, 1, 1, false, false},
  };
  return s;
}

namespace {

audit_spec certify_preset(std::string_view claim) {
  audit_spec s;
  s.preset = "certify-" + std::string(claim);
  s.prompts = default_prompts();
  s.n_predict = 16;
  s.certify = certify_settings{};
  s.certify->claim = std::string(claim);
  return s;
}

// An advice (docs/advise.md): the sweep preset over the settings that decide identity here (a
// unified KV cache, the server's prompt cache, flash attention) at 4 slots, each configuration
// also measured under the load the user cares about: 4 requests in flight (a closed loop, as
// `vllm bench serve --max-concurrency 4`), 64-token prompts and answers, 8 s.
audit_spec advise_preset() {
  audit_spec s = sweep_preset();
  s.preset = "advise";
  s.n_predict = 16;
  s.sweep->parallel = {4};
  s.sweep->kv_unified = {true, false};
  s.sweep->prompt_cache = {true, false};
  s.sweep->flash_attn = {"off", "on"};
  condition load{"advise_load", condition_kind::load, 1, 1, false, false};
  load.load.arrival = arrival_kind::concurrency;
  load.load.levels = {4};
  load.load.duration_s = 8;
  load.load.probes = 2;
  load.load.prompt_tokens = {{64}, {}, 0, 0};
  load.load.output_tokens = {{64}, {}, 0, 0};
  s.conditions.push_back(load);
  s.advise = advise_settings{};
  return s;
}

constexpr preset_info kPresets[] = {
    {"seed-protocol", "The seed audit: its conditions, positive controls and four predictions", true,
     [] { return seed_protocol({}); }},
    {"threshold", "A concurrency-threshold search up to width 8 (SAME/DIFFERENT/UNKNOWN per width) with a prompt control",
     true, [] { return threshold_preset({}); }},
    {"sweep",
     "The seed's greedy conditions and a throughput probe on managed llama-servers, over a matrix of settings "
     "(give sweep.models and the axes to vary)",
     false, sweep_preset},
    {"explain",
     "Attribution experiments at width 4: identical neighbours, other prompts of the same length, other lengths, a "
     "neighbour that finishes early, one that joins late, the target in another slot; serial repeats and a prompt "
     "control",
     true, [] { return explain_preset({}); }},
    {"selftest",
     "Each backend's selftest (seeded faults on every path, stored) and a short audit that cites it: serial repeats, a "
     "burst of 4 and a prompt control, each solo group after the server went quiet",
     true, [] { return selftest_preset({}); }},
    {"load-curve",
     "Saturation first: the server's synchronous rate and maximum throughput, then probes in Poisson traffic at "
     "fifths of the way between them, the top level filling the slots (prompts of 16/64/256 tokens, answers of "
     "16/32/64), 20 s and 6 probes a level: identity, latency, slot fullness and goodput (TTFT 1 s, ITL 100 ms) per "
     "level (docs/load.md); serial repeats and a prompt control",
     true, [] { return load_curve_preset({}); }},
    {"advise",
     "The fastest configuration of a model certified on this host: a sweep of managed llama-servers (unified KV, "
     "prompt cache, flash attention, the quantisations in sweep.models) measured under a load condition (4 in "
     "flight, 8 s), then certify jobs from the fastest down until one is certified under advise.claim (docs/advise.md)",
     false, advise_preset},
    {"certify-batch-invariant",
     "Certify that neither concurrency, neighbours, arrival timing, a reused prefix nor seeded sampling changes the "
     "numbers: every schedule family, sized from the server (docs/certify.md)",
     true, [] { return certify_preset("batch-invariant"); }},
    {"certify-no-prompt-cache",
     "Certify the llama.cpp maintainers' advice: with cache_prompt off, every schedule family leaves the numbers as they "
     "were (docs/certify.md)",
     true, [] { return certify_preset("no-prompt-cache"); }},
    {"certify-single-slot",
     "Certify a one-slot server (-np 1): whatever arrives beside a request, it gets its solo numbers (docs/certify.md)",
     true, [] { return certify_preset("single-slot"); }},
    {"certify-greedy-text-only",
     "Certify that greedy token ids hold under every schedule family, logprobs free to move (docs/certify.md)", true,
     [] { return certify_preset("greedy-text-only"); }},
};

}  // namespace

std::span<const preset_info> presets() { return kPresets; }

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.name);
  return names;
}

std::optional<audit_spec> preset(std::string_view name) {
  for (const auto& p : kPresets)
    if (p.name == name) return p.make();
  return std::nullopt;
}

std::vector<int> search_widths(const condition& c) {
  if (!c.search.widths.empty()) return c.search.widths;
  std::vector<int> w;
  for (int i = 2; i <= std::min(8, c.concurrency); ++i) w.push_back(i);
  for (int i = 12; i <= c.concurrency; i = i * 3 / 2 + (i * 3 / 2) % 2) w.push_back(i);
  if (!w.empty() && w.back() != c.concurrency && c.concurrency > 8) w.push_back(c.concurrency);
  return w;
}

audit_spec expand_sweep(audit_spec spec) {
  if (!spec.sweep || !spec.backends.empty()) return spec;
  for (auto& [name, settings] : sweep_configurations(*spec.sweep))
    spec.backends.push_back({name, "", "llama", settings});
  const bool has_probe = std::any_of(spec.conditions.begin(), spec.conditions.end(),
                                     [](const condition& c) { return c.kind == condition_kind::throughput; });
  if (!has_probe)
    spec.conditions.push_back({"throughput_probe", condition_kind::throughput, spec.sweep->probe_width,
                               spec.sweep->probe_bursts, false, false});
  return spec;
}

namespace {

std::vector<backend_ref> expanded_backends(const sweep_spec& w) {
  audit_spec bare;
  bare.sweep = w;
  return expand_sweep(std::move(bare)).backends;
}

// What is wrong with one value of `row` ("" when nothing): its bounds, with the configuration's
// where it sets one, and its choices.
std::string setting_problem(const setting_info& row, const setting_value& v, const spec_limits& lim, bool in_sweep = false) {
  if (const int* i = std::get_if<int>(&v)) {
    const int hi = row.max_from == setting_limit::server_parallel  ? lim.max_server_parallel
                   : row.max_from == setting_limit::server_threads ? lim.max_server_threads
                                                                    : row.max;
    return *i < row.min || *i > hi ? "must be between " + std::to_string(row.min) + " and " + std::to_string(hi) : "";
  }
  const auto* text = std::get_if<std::string>(&v);
  if (text && row.form_problem) return row.form_problem(*text);
  // A server may keep a choice's default ("" for the CPU variant); a sweep's axis lists values.
  if (!text || row.choices.empty() || (!in_sweep && v == row.default_value()) ||
      std::find(row.choices.begin(), row.choices.end(), *text) != row.choices.end())
    return "";
  std::string known;
  for (std::size_t i = 0; i < row.choices.size(); ++i) {
    if (row.choices_name.empty())
      known += (i == 0 ? "" : i + 1 == row.choices.size() ? " or " : ", ") + ("\"" + std::string(row.choices[i]) + "\"");
    else known += (i == 0 ? "" : ", ") + std::string(row.choices[i]);
  }
  return row.choices_name.empty() ? "must be " + known : "is not " + std::string(row.choices_name) + " (known: " + known + ")";
}

void validate_settings(const server_settings& m, const spec_limits& lim, const std::string& f,
                       std::vector<spec_problem>& p) {
  for (const auto& row : server_setting_table()) {
    const setting_value v = row.get(m);
    if (row.required && v == setting_value(std::string()))
      p.push_back({f + std::string(row.name), "must name one of the daemon's managed models"});
    else if (auto e = setting_problem(row, v, lim); !e.empty()) p.push_back({f + std::string(row.name), std::move(e)});
  }
  if (m.ubatch <= 65536 && m.ubatch > m.batch) p.push_back({f + "ubatch", "must be between 1 and batch"});
}

}  // namespace

namespace {

// The sweep's matrix: its models, each axis's values in range, the probe, and no backends of
// its own besides those it expands to.
void validate_sweep(const audit_spec& s, const spec_limits& lim, std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
  {
    const auto& w = *s.sweep;
    const std::size_t size = sweep_size(w);
    if (w.models.empty()) add("sweep.models", "at least one model is required");
    if (size > static_cast<std::size_t>(lim.max_sweep_configurations))
      add("sweep", "the matrix has " + (size == SIZE_MAX ? std::string("too many") : std::to_string(size)) +
                       " configurations; the limit is " + std::to_string(lim.max_sweep_configurations));
    for (const auto& row : server_setting_table()) {
      const auto values = row.axis(w);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::string field = "sweep." + std::string(row.axis_name()) + "[" + std::to_string(i) + "]";
        if (row.required && values[i] == setting_value(std::string())) add(field, "must not be empty");
        else if (auto e = setting_problem(row, values[i], lim, true); !e.empty()) add(field, std::move(e));
      }
    }
    if (w.probe_width < 1 || w.probe_width > lim.max_concurrency)
      add("sweep.probe_width", "must be between 1 and " + std::to_string(lim.max_concurrency));
    if (w.probe_bursts < 1 || w.probe_bursts > lim.max_replicates)
      add("sweep.probe_bursts", "must be between 1 and " + std::to_string(lim.max_replicates));
    if (size <= static_cast<std::size_t>(lim.max_sweep_configurations) && !s.backends.empty() &&
        s.backends != expanded_backends(*s.sweep))
      add("backends", "a sweep starts its own servers, one per configuration: leave backends out");
  }
}

// The backends: how many, named once each, a registered API kind, an http(s) URL, managed
// settings in range. `sweep_problems`: the sweep had problems of its own (it expands to none).
void validate_backends(const audit_spec& s, const spec_limits& lim, std::span<const std::string> api_kinds,
                       bool sweep_problems, std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
  std::size_t unmanaged = 0;
  for (const auto& b : s.backends) unmanaged += !b.managed;
  // A sweep with problems of its own expands to nothing: say those, not the consequence.
  if (s.backends.empty() && !(s.sweep && sweep_problems))
    add("backends", s.sweep ? "the sweep has no configuration" : "at least one backend is required");
  if (static_cast<int>(unmanaged) > lim.max_backends)
    add("backends", "at most " + std::to_string(lim.max_backends) + " backends");
  if (s.backends.size() - unmanaged > static_cast<std::size_t>(lim.max_sweep_configurations))
    add("backends", "at most " + std::to_string(lim.max_sweep_configurations) + " managed backends");
  std::set<std::string> names;
  for (std::size_t i = 0; i < s.backends.size(); ++i) {
    const auto& b = s.backends[i];
    const std::string f = "backends[" + std::to_string(i) + "]";
    if (b.name.empty()) add(f + ".name", "must not be empty");
    else if (b.name.size() > 128 || std::any_of(b.name.begin(), b.name.end(), [](char ch) {
               return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
             }))
      add(f + ".name", "must be 1 to 128 characters, none of them control characters");
    else if (!names.insert(b.name).second) add(f + ".name", "duplicate backend name '" + b.name + "'");
    if (std::find(api_kinds.begin(), api_kinds.end(), b.api) == api_kinds.end()) {
      std::string known;
      for (const auto& k : api_kinds) known += (known.empty() ? "" : ", ") + k;
      add(f + ".api", "unknown API kind '" + b.api.substr(0, 64) + "' (known: " + known + ")");
    }
    if (!b.url.empty() && !b.url.starts_with("http://") && !b.url.starts_with("https://"))
      add(f + ".url", "must start with http:// or https://");
    if (b.managed) {
      if (!b.url.empty()) add(f + ".url", "a managed backend has no url: the daemon starts its server");
      if (b.api != "llama") add(f + ".api", "a managed backend is a llama-server (api \"llama\")");
      validate_settings(*b.managed, lim, f + ".managed.", p);
    }
  }

}

// The prompts (each different, in size) and the sampling settings.
void validate_prompts(const audit_spec& s, const spec_limits& lim, std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
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
  if (s.wait_for_quiet_s < 0 || s.wait_for_quiet_s > 600)
    add("wait_for_quiet_s", "must be between 0 (do not wait) and 600 seconds");
  if (s.n_predict < 1 || s.n_predict > lim.max_n_predict)
    add("n_predict", "must be between 1 and " + std::to_string(lim.max_n_predict));
  if (s.top_k < 1 || s.top_k > lim.max_top_k) add("top_k", "must be between 1 and " + std::to_string(lim.max_top_k));
  if (!(s.temperature > 0 && s.temperature <= 10) || !std::isfinite(s.temperature))
    add("temperature", "must be in (0, 10]: it is the temperature of seeded conditions");
  if (!(s.control_temperature > 0 && s.control_temperature <= 10) || s.control_temperature == s.temperature)
    add("control_temperature", "must be in (0, 10] and differ from temperature");

}

// A mix of lengths: values (and weights) or a range, each within [1, most].
void validate_mix(const length_mix& m, const std::string& f, int most, std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
  const std::string range = "must be between 1 and " + std::to_string(most);
  if (m.uniform() || m.min != 0 || m.max != 0) {
    if (m.min < 1 || m.min > most) add(f + ".min", range);
    if (m.max < 1 || m.max > most) add(f + ".max", range);
    if (m.max <= m.min) add(f + ".max", "must be greater than min");
    return;
  }
  if (m.values.empty()) add(f, "must list at least one length, or give {\"min\", \"max\"}");
  if (m.values.size() > 1000) add(f, "at most 1000 lengths");
  for (std::size_t j = 0; j < m.values.size() && j < 1000; ++j)
    if (m.values[j] < 1 || m.values[j] > most) add(f + ".values[" + std::to_string(j) + "]", range);
  if (!m.weights.empty() && m.weights.size() != m.values.size())
    add(f + ".weights", "must have one weight per value (" + std::to_string(m.values.size()) + ")");
  double total = 0;
  for (std::size_t j = 0; j < m.weights.size(); ++j) {
    if (!(m.weights[j] >= 0) || !std::isfinite(m.weights[j])) add(f + ".weights[" + std::to_string(j) + "]", "must be a finite number >= 0");
    else total += m.weights[j];
  }
  if (!m.weights.empty() && !(total > 0)) add(f + ".weights", "must not all be 0");
}

// A load condition's settings (docs/load.md): every level, the arrival's parameters, the mixes,
// the trace and its limits.
void validate_load(const condition& c, const std::string& f, const spec_limits& lim,
                   std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
  const auto& l = c.load;
  if (c.replicates != 1) add(f + ".replicates", "must be 1 for load (its levels are load.levels)");
  if (l.levels.empty() || l.levels.size() > 32) add(f + ".load.levels", "must list 1 to 32 levels");
  for (std::size_t j = 0; j < l.levels.size() && j < 32; ++j) {
    const std::string at = f + ".load.levels[" + std::to_string(j) + "]";
    const double v = l.levels[j];
    if (!std::isfinite(v)) add(at, "must be a finite number");
    else if (l.sweep && !(v > 0 && v <= 1))
      add(at, "must be a fraction in (0, 1] of the way from the synchronous rate to the maximum throughput (sweep)");
    else if (l.sweep) {
    } else if (l.arrival == arrival_kind::concurrency && (v < 1 || v > lim.max_concurrency || v != std::floor(v)))
      add(at, "must be a whole number of requests in flight, 1 to " + std::to_string(lim.max_concurrency));
    else if (l.arrival == arrival_kind::trace && !(v >= 0.01 && v <= 100))
      add(at, "must be a speed from 0.01 to 100 (1: the trace as recorded)");
    else if (l.arrival != arrival_kind::concurrency && l.arrival != arrival_kind::trace && !(v > 0 && v <= 10'000))
      add(at, "must be a rate in (0, 10000] requests/s");
    if (j > 0 && std::isfinite(v) && v <= l.levels[j - 1]) add(at, "levels must ascend");
  }
  if (l.sweep && (l.arrival == arrival_kind::concurrency || l.arrival == arrival_kind::trace))
    add(f + ".load.sweep", "a sweep sets rates: its arrival must be constant, poisson or gamma");
  if (l.sweep && !(l.calibration_s >= 1 && l.calibration_s <= 600)) add(f + ".load.calibration_s", "must be between 1 and 600 seconds");
  if (!(l.slo_ttft_ms >= 0 && l.slo_ttft_ms <= 3'600'000)) add(f + ".load.slo_ttft_ms", "must be between 0 (none) and 3600000 ms");
  if (!(l.slo_itl_ms >= 0 && l.slo_itl_ms <= 3'600'000)) add(f + ".load.slo_itl_ms", "must be between 0 (none) and 3600000 ms");
  if (!(l.burstiness > 0 && l.burstiness <= 100)) add(f + ".load.burstiness", "must be in (0, 100] (1: Poisson)");
  if (l.arrival != arrival_kind::gamma && l.burstiness != 1.0) add(f + ".load.burstiness", "only gamma arrivals have a burstiness");
  if (l.arrival != arrival_kind::trace && !(l.duration_s >= 1 && l.duration_s <= 3600))
    add(f + ".load.duration_s", "must be between 1 and 3600 seconds");
  if (l.probes < 1 || l.probes > 100) add(f + ".load.probes", "must be between 1 and 100");
  if (l.max_in_flight < 1 || l.max_in_flight > 4096) add(f + ".load.max_in_flight", "must be between 1 and 4096");
  if (l.arrival == arrival_kind::concurrency)
    for (double v : l.levels)
      if (v > l.max_in_flight) {
        add(f + ".load.max_in_flight", "must be at least the largest concurrency level");
        break;
      }
  validate_mix(l.prompt_tokens, f + ".load.prompt_tokens", kMaxLoadPromptTokens, p);
  validate_mix(l.output_tokens, f + ".load.output_tokens", lim.max_n_predict, p);
  if (l.arrival == arrival_kind::trace) {
    if (l.trace.empty()) add(f + ".load.trace", "a trace arrival needs the trace: [{\"at_ms\", \"prompt_tokens\", \"output_tokens\"}, ...]");
    if (l.trace.size() > kMaxTraceEntries)
      add(f + ".load.trace", "at most " + std::to_string(kMaxTraceEntries) + " requests (this one has " + std::to_string(l.trace.size()) + ")");
    double last = 0;
    int problems = 0;
    for (std::size_t j = 0; j < l.trace.size() && j < kMaxTraceEntries && problems < 20; ++j) {
      const auto& e = l.trace[j];
      const std::string at = f + ".load.trace[" + std::to_string(j) + "]";
      const auto before = p.size();
      if (!std::isfinite(e.at_ms) || e.at_ms < 0 || e.at_ms > kMaxTraceMs)
        add(at + ".at_ms", "must be between 0 and " + fixed(kMaxTraceMs, 0) + " ms");
      else if (e.at_ms < last) add(at + ".at_ms", "offsets must not decrease (the one before is " + fixed(last, 3) + ")");
      else last = e.at_ms;
      if (e.prompt_tokens < 1 || e.prompt_tokens > kMaxLoadPromptTokens)
        add(at + ".prompt_tokens", "must be between 1 and " + std::to_string(kMaxLoadPromptTokens));
      if (e.output_tokens < 1 || e.output_tokens > lim.max_n_predict)
        add(at + ".output_tokens", "must be between 1 and " + std::to_string(lim.max_n_predict));
      if (e.hash_ids.size() > static_cast<std::size_t>(kMaxLoadPromptTokens))
        add(at + ".hash_ids", "at most " + std::to_string(kMaxLoadPromptTokens) + " blocks");
      problems += p.size() > before;
    }
    if (l.block_size < 1 || l.block_size > kMaxLoadPromptTokens)
      add(f + ".load.block_size", "must be between 1 and " + std::to_string(kMaxLoadPromptTokens));
  } else if (!l.trace.empty()) {
    add(f + ".load.trace", "only a trace arrival has a trace");
  }
}

// A threshold search's settings (its kind's), or none for any other kind.
void validate_search(const condition& c, const std::string& f, const spec_limits& lim, std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
  if (c.kind != condition_kind::threshold_search) {
    if (c.search != search_settings{}) add(f + ".search", "only a threshold_search condition has search settings");
    return;
  }
  const auto& q = c.search;
  if (c.replicates != 1) add(f + ".replicates", "must be 1 for threshold_search (its trials are search.min_trials..max_trials)");
  int last = 1;
  for (std::size_t j = 0; j < q.widths.size(); ++j) {
    if (q.widths[j] <= last || q.widths[j] > c.concurrency)
      add(f + ".search.widths[" + std::to_string(j) + "]", "widths must ascend, each from 2 to concurrency");
    last = q.widths[j];
  }
  if (q.reference < 2 || q.reference > lim.max_replicates)
    add(f + ".search.reference", "must be between 2 and " + std::to_string(lim.max_replicates));
  if (q.max_trials < 1 || q.max_trials > lim.max_replicates)
    add(f + ".search.max_trials", "must be between 1 and " + std::to_string(lim.max_replicates));
  if (q.min_trials < 1 || q.min_trials > q.max_trials) add(f + ".search.min_trials", "must be between 1 and max_trials");
  if (!(q.alpha > 0 && q.alpha < 0.5)) add(f + ".search.alpha", "must be in (0, 0.5)");
  if (!(q.magnitude > 0 && q.magnitude <= 1)) add(f + ".search.magnitude", "must be in (0, 1]");
}

// A neighbours condition's settings (its kind's), or none for any other kind.
void validate_neighbours(const audit_spec& s, const condition& c, const std::string& f, const spec_limits& lim,
                         std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
  if (c.kind != condition_kind::neighbours) {
    if (c.neighbours != neighbour_settings{}) add(f + ".neighbours", "only a neighbours condition has neighbour settings");
    return;
  }
  const auto& n = c.neighbours;
  const std::size_t count = static_cast<std::size_t>(std::max(0, c.concurrency - 1));
  const std::string per_neighbour = "must have one entry per neighbour (concurrency - 1 = " + std::to_string(count) + ")";
  if (!n.n_predict.empty() && n.n_predict.size() != count) add(f + ".neighbours.n_predict", per_neighbour);
  for (std::size_t j = 0; j < n.n_predict.size(); ++j)
    if (n.n_predict[j] < 1 || n.n_predict[j] > lim.max_n_predict)
      add(f + ".neighbours.n_predict[" + std::to_string(j) + "]", "must be between 1 and " + std::to_string(lim.max_n_predict));
  if (!n.join_after.empty() && n.join_after.size() != count) add(f + ".neighbours.join_after", per_neighbour);
  for (std::size_t j = 0; j < n.join_after.size(); ++j)
    if (n.join_after[j] < 0 || n.join_after[j] >= s.n_predict)
      add(f + ".neighbours.join_after[" + std::to_string(j) + "]",
          "must be between 0 and n_predict - 1 (" + std::to_string(s.n_predict - 1) + "): the target's tokens before the neighbour is sent");
  const bool late = std::any_of(n.join_after.begin(), n.join_after.end(), [](int k) { return k > 0; });
  if (late && n.target_last) add(f + ".neighbours.target", "a neighbour that joins late needs the target first (it waits on the target's tokens)");
  if (late && c.seeded) add(f + ".seeded", "a late joiner is for greedy requests");
}

// What every condition's kind allows of its other settings: prefix, cache, family, load,
// concurrency, seeded replicates, the controls' needs.
void validate_kind_settings(const audit_spec& s, const condition& c, const std::string& f, const spec_limits& lim,
                            std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
  const bool burst = flag_of(c.kind) == evidence_flag::not_batched;  // its requests go in bursts
  if (c.kind == condition_kind::throughput && (c.concurrency < 1 || c.concurrency > lim.max_concurrency))
    add(f + ".concurrency", "must be between 1 and " + std::to_string(lim.max_concurrency) + " for throughput");
  if (c.shared_prefix < 0 || (c.shared_prefix > 0 && c.kind != condition_kind::cache_reuse))
    add(f + ".shared_prefix", "only a cache_reuse condition shares a prefix (a positive number of tokens)");
  if (!c.cache_prompt && c.kind != condition_kind::cache_reuse) add(f + ".cache_prompt", "only a cache_reuse condition sets cache_prompt");
  if (c.decode_steps && !burst)
    add(f + ".decode_steps", "only a burst condition (concurrent, cross_batch, neighbours, threshold_search) chooses whether it streams");
  if (c.decode_steps == false && c.kind == condition_kind::neighbours)
    add(f + ".decode_steps", "a neighbours condition needs its decode steps: its late joiners wait on the target's tokens");
  if (!c.family.empty() && std::find(kCertifyFamilies.begin(), kCertifyFamilies.end(), c.family) == kCertifyFamilies.end())
    add(f + ".family", "must be one of the certify families (" + certify_family_names() + ")");
  // Conditional points are certify's own (written when a certify job is created): each a width a
  // burst can have, a shared prefix, or the target's length in a chunked-prefill burst.
  if (!c.points.empty()) {
    const bool chunked = c.kind == condition_kind::neighbours && c.family == "chunked_prefill";
    if (!s.certify || (c.kind != condition_kind::concurrent && c.kind != condition_kind::cache_reuse && !chunked))
      add(f + ".points",
          "only a certify job's concurrent, cache_reuse or chunked_prefill condition has conditional points");
    const int most = c.kind == condition_kind::concurrent ? lim.max_concurrency : 1 << 20;
    for (int point : c.points)
      if (point < 1 || point > most) {
        add(f + ".points", "each must be between 1 and " + std::to_string(most));
        break;
      }
  }
  if (c.kind == condition_kind::load) validate_load(c, f, lim, p);
  else if (c.load != load_settings{}) add(f + ".load", "only a load condition has load settings");
  if (burst && (c.concurrency < 2 || c.concurrency > lim.max_concurrency))
    add(f + ".concurrency", "must be between 2 and " + std::to_string(lim.max_concurrency) + " for " + std::string(to_string(c.kind)));
  if (!burst && c.kind != condition_kind::throughput && c.concurrency != 1) add(f + ".concurrency", "must be 1 for " + std::string(to_string(c.kind)));
  if (c.seeded_replicates < 0 || c.seeded_replicates > lim.max_replicates)
    add(f + ".seeded_replicates", "must be between 0 and " + std::to_string(lim.max_replicates));
  if (c.seeded_replicates != 0 && c.kind != condition_kind::repeat && c.kind != condition_kind::observer)
    add(f + ".seeded_replicates", "only a repeat or observer condition has seeded replicates");
  if (c.kind == condition_kind::control_prompt && s.prompts.size() < 2) add(f + ".kind", "control_prompt needs at least two prompts");
  if ((c.kind == condition_kind::control_seed || c.kind == condition_kind::control_temperature) && !c.seeded)
    add(f + ".seeded", "a seed or temperature control must be seeded (greedy ignores both)");
}

// The requests a condition sends (a load condition's probes: its background is bounded by
// max_in_flight and time).
std::size_t requests_of(const audit_spec& s, const condition& c) {
  const std::size_t prompts = c.all_prompts ? s.prompts.size() : 1;
  if (c.kind == condition_kind::threshold_search) {
    std::size_t per = static_cast<std::size_t>(std::max(0, c.search.reference));
    for (int w : search_widths(c)) per += static_cast<std::size_t>(std::max(0, w)) * std::max(0, c.search.max_trials);
    return prompts * per;
  }
  if (c.kind == condition_kind::load) return c.load.levels.size() * static_cast<std::size_t>(std::max(0, c.load.probes));
  if (c.kind == condition_kind::observer)
    return prompts * static_cast<std::size_t>(std::max(0, c.replicates) + std::max(0, c.seeded_replicates)) * observer_asks(s.top_k, true).size();
  return prompts * static_cast<std::size_t>(std::max(0, c.replicates) + std::max(0, c.seeded_replicates)) *
         static_cast<std::size_t>(std::max(1, c.concurrency)) * (c.kind == condition_kind::cache_reuse ? 2 : 1);
}

// The conditions: each kind's settings, at least one positive control, and the requests the
// job would send within the limit. Returns the conditions' names.
std::set<std::string> validate_conditions(const audit_spec& s, const spec_limits& lim, std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
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
    validate_search(c, f, lim, p);
    validate_neighbours(s, c, f, lim, p);
    validate_kind_settings(s, c, f, lim, p);
    has_control = has_control || is_control(c.kind);
    requests += requests_of(s, c);
  }
  if (!s.conditions.empty() && !has_control)
    add("conditions", "at least one positive control (control_prompt, control_seed or control_temperature) is "
                      "required: without one, an all-identical result cannot be told from a broken comparator");
  requests = (requests + s.prompts.size() * 2) * std::max<std::size_t>(1, s.backends.size());
  if (requests > lim.max_requests)
    add("conditions", "the job would send " + std::to_string(requests) + " requests; the limit is " +
                          std::to_string(lim.max_requests));
  return cond_names;
}

// The predictions name known conditions; the tags are short.
void validate_predictions(const audit_spec& s, const std::set<std::string>& cond_names, std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
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
}

// What is wrong with a claim that names none of certify_claims(): the claims there are.
std::string unknown_claim(const std::string& claim) {
  std::string names;
  for (const auto& k : certify_claims()) names += (names.empty() ? "" : ", ") + std::string(k.name);
  return "unknown claim '" + claim.substr(0, 100) + "'; the claims are: " + names;
}

// A certify job's settings; a spec not yet expanded is then judged as what it expands to with
// the shape its settings state (or its managed server's slots).
std::optional<audit_spec> validate_certify(const audit_spec& s, const spec_limits& lim, std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
  const auto& c = *s.certify;
  if (!find_claim(c.claim)) add("certify.claim", unknown_claim(c.claim));
  if (c.budget_requests < 1 || static_cast<std::size_t>(c.budget_requests) > lim.max_requests)
    add("certify.budget_requests", "must be between 1 and " + std::to_string(lim.max_requests));
  if (c.budget_minutes < 0 || c.budget_minutes > 1440) add("certify.budget_minutes", "must be between 0 (none) and 1440");
  for (auto [v, name] : {std::pair{c.slots, "slots"}, {c.n_batch, "n_batch"}, {c.n_ubatch, "n_ubatch"}, {c.n_ctx, "n_ctx"}})
    if (v < 0 || v > (1 << 24)) add(std::string("certify.") + name, "must be between 0 (read from the server) and 16777216");
  if (s.backends.size() != 1 || s.sweep)
    add("backends", "a certify job certifies one backend: give exactly one (a sweep is not certified)");
  const bool expanded = std::any_of(s.conditions.begin(), s.conditions.end(), [](const condition& x) { return !x.family.empty(); });
  if (!expanded && !s.conditions.empty())
    add("conditions", "a certify job makes its own conditions from its claim: leave conditions out");
  if (!p.empty() || expanded) return std::nullopt;
  auto shape = shape_of(c);
  if (c.slots <= 0 && s.backends.front().managed) shape.slots = s.backends.front().managed->parallel;
  return expand_certify(s, shape);
}

// An advise job's settings: a sweep to rank, one load condition to rank it by, and no certify
// of its own (its certify jobs are made as it runs).
void validate_advise(const audit_spec& s, const spec_limits& lim, std::vector<spec_problem>& p) {
  auto add = [&](std::string field, std::string msg) { p.push_back({std::move(field), std::move(msg)}); };
  const auto& a = *s.advise;
  if (!find_claim(a.claim)) add("advise.claim", unknown_claim(a.claim));
  if (a.certify_requests < 20 || static_cast<std::size_t>(a.certify_requests) > lim.max_requests)
    add("advise.certify_requests", "must be between 20 and " + std::to_string(lim.max_requests));
  if (!(a.certify_minutes >= 1 && a.certify_minutes <= 1440)) add("advise.certify_minutes", "must be between 1 and 1440");
  if (!s.sweep) add("sweep", "an advise job sweeps managed servers of its models: give sweep.models");
  if (s.certify) add("certify", "an advise job makes its own certify jobs: leave certify out");
  const auto loads = std::count_if(s.conditions.begin(), s.conditions.end(), [](const condition& c) { return c.kind == condition_kind::load; });
  if (loads != 1)
    add("conditions", "an advise job ranks its configurations by one load condition (the preset's: advise_load); it has " +
                          std::to_string(loads));
}

}  // namespace

std::vector<spec_problem> validate(const audit_spec& spec, const spec_limits& lim, std::span<const std::string> api_kinds) {
  std::vector<spec_problem> p;
  if (spec.advise) validate_advise(spec, lim, p);
  if (spec.certify) {
    const auto expanded = validate_certify(spec, lim, p);
    if (!p.empty()) return p;
    if (expanded) return validate(*expanded, lim, api_kinds);
  }
  // A sweep not yet expanded is judged as the spec it expands to, once its matrix is sound.
  const bool unexpanded = spec.sweep && spec.backends.empty();
  const audit_spec expanded = unexpanded && sweep_size(*spec.sweep) <= static_cast<std::size_t>(lim.max_sweep_configurations) &&
                                      !spec.sweep->models.empty() &&
                                      std::none_of(spec.sweep->models.begin(), spec.sweep->models.end(),
                                                   [](const std::string& m) { return m.empty(); })
                                  ? expand_sweep(spec)
                                  : audit_spec{};
  const audit_spec& s = expanded.backends.empty() ? spec : expanded;
  if (s.sweep) validate_sweep(s, lim, p);
  const bool sweep_problems = !p.empty();
  validate_backends(s, lim, api_kinds, sweep_problems, p);
  validate_prompts(s, lim, p);
  const auto cond_names = validate_conditions(s, lim, p);
  validate_predictions(s, cond_names, p);
  return p;
}

}  // namespace logitaudit::audit
