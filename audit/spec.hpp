// An audit spec: which servers, which prompts, which conditions, which predictions. The
// `seed-protocol` preset expands to exactly the conditions of the seed audit.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace logitaudit::audit {

// What a condition changes relative to the solo baseline.
enum class condition_kind {
  repeat,               // serial repeats on the baseline's slot (greedy, and seeded)
  concurrent,           // C identical requests in one burst
  cross_batch,          // the target prompt in one burst with C-1 different prompts
  cache_reuse,          // the prompt cache warmed, then the prompt reused
  control_prompt,       // positive control: a different prompt (must diverge)
  control_seed,         // positive control: a different seed (must diverge)
  control_temperature,  // positive control: a different temperature (must diverge)
};

std::string_view to_string(condition_kind k);
std::optional<condition_kind> parse_condition_kind(std::string_view s);
bool is_control(condition_kind k);

struct condition {
  std::string name;           // unique in the spec, e.g. "concurrent_greedy_c4"
  condition_kind kind = condition_kind::repeat;
  int concurrency = 1;        // burst width (concurrent, cross_batch)
  int replicates = 1;         // how many times the condition's group runs
  bool seeded = false;        // sample with the spec's temperature and seed, else greedy
  bool all_prompts = false;   // run for every prompt (else the target prompt, prompts[0])
  int seeded_replicates = 0;  // repeat only: further serial repeats with seeded sampling

  bool operator==(const condition&) const = default;
};

enum class identity_level { logit, token };
enum class expectation { identical, diverges };

// A pre-registered prediction: over the streams of `conditions`, at least `at_least` of
// them are `expect` at `level`.
struct prediction {
  std::string id;
  std::string statement;  // what it claims, in words
  std::vector<std::string> conditions;
  identity_level level = identity_level::logit;
  expectation expect = expectation::identical;
  double at_least = 1.0;

  bool operator==(const prediction&) const = default;
};

struct backend_ref {
  std::string name;
  std::string url;         // empty: a backend configured in the daemon under `name`
  std::string api = "llama";  // a backend API kind (clients::api_kinds() knows them)

  bool operator==(const backend_ref&) const = default;
};

struct audit_spec {
  std::string preset;  // informational: the preset it was expanded from
  std::vector<backend_ref> backends;
  std::vector<std::string> prompts;  // prompts[0] is the target of single-prompt conditions
  int n_predict = 32;
  int top_k = 5;                     // n_probs
  double temperature = 0.8;          // of seeded conditions
  std::uint64_t seed = 1234;         // of seeded conditions
  double control_temperature = 1.5;  // the control's other temperature
  std::vector<condition> conditions;
  std::vector<prediction> predictions;
  std::vector<std::string> tags;

  bool operator==(const audit_spec&) const = default;
};

// One problem with a spec, naming the field (JSON path, e.g. "conditions[2].concurrency").
struct spec_problem {
  std::string field;
  std::string message;
};

// The seed audit's conditions and its four predictions, for the given backends.
audit_spec seed_protocol(std::vector<backend_ref> backends);

// The default prompts of the seed-protocol preset (prompts[0] is the target).
std::vector<std::string> default_prompts();

// Limits a spec must respect (the daemon's configuration can tighten them).
struct spec_limits {
  int max_prompts = 64;
  int max_n_predict = 4096;
  int max_top_k = 100;
  int max_concurrency = 512;
  int max_replicates = 1000;
  int max_backends = 16;
  std::size_t max_prompt_bytes = 64 * 1024;
  std::size_t max_requests = 100'000;  // planned requests in one job
};

// Every problem at once; empty when the spec can run. `api_kinds` are the backend API kinds
// a backend may name (the programs pass clients::api_kinds().names()).
std::vector<spec_problem> validate(const audit_spec& spec, const spec_limits& limits,
                                   std::span<const std::string> api_kinds);

}  // namespace logitaudit::audit
