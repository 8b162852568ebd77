// An audit spec: which servers, which prompts, which conditions, which predictions. The
// `seed-protocol` preset expands to exactly the conditions of the seed audit.
#pragma once

#include <boost/describe/enum.hpp>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "evidence.hpp"
#include "load.hpp"
#include "server_settings.hpp"

namespace logitaudit::audit {

// What a condition changes relative to the solo baseline.
BOOST_DEFINE_ENUM_CLASS(condition_kind,
  repeat,               // serial repeats on the baseline's slot (greedy, and seeded)
  concurrent,           // C identical requests in one burst
  cross_batch,          // the target prompt in one burst with C-1 different prompts
  cache_reuse,          // the prompt cache warmed, then the prompt reused
  control_prompt,       // positive control: a different prompt (must diverge)
  control_seed,         // positive control: a different seed (must diverge)
  control_temperature,  // positive control: a different temperature (must diverge)
  threshold_search,     // the smallest burst width at which streams diverge (search_settings)
  throughput,           // a throughput probe: bursts of different prompts, timed, never compared
  neighbours,           // the target in a burst with C-1 neighbours of a chosen shape (neighbour_settings)
  load,                // probes inside generated background traffic, level by level (load_settings, docs/load.md)
  observer             // serial requests that ask to see more or less of the numbers (n_probs 0, 1, the audit's
                       // top-k, a large one): their token ids must be the baseline's (certify's observer family)
)

// Every kind, in the order the docs, the OpenAPI enum, error messages and the console list
// them: the one table of kinds.
inline constexpr std::array kConditionKinds = {
    condition_kind::repeat,         condition_kind::concurrent,   condition_kind::cross_batch,
    condition_kind::cache_reuse,    condition_kind::control_prompt, condition_kind::control_seed,
    condition_kind::control_temperature, condition_kind::threshold_search, condition_kind::throughput,
    condition_kind::neighbours,     condition_kind::load,           condition_kind::observer};
std::string_view to_string(condition_kind k);
std::optional<condition_kind> parse_condition_kind(std::string_view s);
bool is_control(condition_kind k);
// What an observer request asks to see: n_probs, and whether as probabilities after the
// sampling chain (llama-server's post_sampling_probs) instead of logprobs.
struct observer_ask {
  int n_probs = 0;
  bool post_sampling = false;
};
// The asks of an observer condition, in order: n_probs 0 (no probabilities: the ids alone), 1,
// the audit's top-k and a large one (4x it, at least 20, at most 100; 20 on OpenAI-compatible
// APIs, which cap there), then the top-k after sampling. 0 and post-sampling are llama.cpp's
// native API only (`llama`).
std::vector<observer_ask> observer_asks(int top_k, bool llama);
// The flag a condition's streams get when their condition did not happen (a burst that did
// not batch, a cache that was not reused); none for a kind with nothing to happen.
evidence_flag flag_of(condition_kind k);

// A concurrency-threshold search (docs/frontier.md): a serial reference of the target prompt,
// then for each width, bursts of that many identical requests ("trials"), more while the
// width is undecided (SAME, DIFFERENT or UNKNOWN against the reference, as Chromium's Pinpoint
// decides), up to max_trials.
struct search_settings {
  std::vector<int> widths;  // ascending, each 2..concurrency; empty: every width up to 8, then steps of ~1.5x
  int reference = 8;        // serial repeats the widths are compared with
  int min_trials = 2;       // bursts per width before it may be decided
  int max_trials = 6;       // bursts per width at most (UNKNOWN after that)
  double alpha = 0.01;      // DIFFERENT: Fisher's exact test p below this
  double magnitude = 0.25;  // SAME: a divergence rate this much above the reference's is ruled out (95%)

  bool operator==(const search_settings&) const = default;
};

// The neighbours of a `neighbours` condition (docs/explain.md): what the target shares its
// batch with, so that one property of the batch changes at a time.
BOOST_DEFINE_ENUM_CLASS(neighbour_prompts,
  identical,      // the target's prompt
  same_length,    // the target's words rotated: other content, the same length (checked per burst)
  other_lengths  // the target's prompt repeated 2, 3, ... times: other lengths
)
std::string_view to_string(neighbour_prompts p);
std::optional<neighbour_prompts> parse_neighbour_prompts(std::string_view s);

struct neighbour_settings {
  neighbour_prompts prompts = neighbour_prompts::identical;
  bool target_last = false;    // the target written after its neighbours (so it gets another slot)
  std::vector<int> n_predict;  // per neighbour (concurrency-1 of them); empty: the spec's n_predict
  std::vector<int> join_after; // per neighbour, the target's tokens before it is sent; empty: all at once
  // > 0: each neighbour's prompt is this many token ids (token_prompt) instead of a text: a long
  // prompt whose prefill crosses the server's batch (certify's chunked-prefill family).
  int prompt_tokens = 0;

  bool operator==(const neighbour_settings&) const = default;
};

// The prompt of neighbour `i` (0-based) of `target`.
std::string neighbour_prompt(const std::string& target, neighbour_prompts kind, std::size_t i);

struct condition {
  std::string name;           // unique in the spec, e.g. "concurrent_greedy_c4"
  condition_kind kind = condition_kind::repeat;
  int concurrency = 1;        // burst width (concurrent, cross_batch)
  int replicates = 1;         // how many times the condition's group runs
  bool seeded = false;        // sample with the spec's temperature and seed, else greedy
  bool all_prompts = false;   // run for every prompt (else the target prompt, prompts[0])
  int seeded_replicates = 0;  // repeat only: further serial repeats with seeded sampling
  search_settings search;     // threshold_search only; concurrency is its largest width
  neighbour_settings neighbours;  // neighbours only
  load_settings load;             // load only
  // cache_reuse only, > 0: the probe and its warm-up are token prompts (token_prompt) that share
  // exactly this many leading tokens and then part, so the cache can serve that prefix and no
  // more (certify's prefix-reuse family); 0: the target prompt sent twice.
  int shared_prefix = 0;
  bool cache_prompt = true;  // cache_reuse only: false sends the warm-up and probe with cache_prompt off
  // The certify family this condition belongs to (audit/certify.hpp); "" outside a certify job.
  std::string family;
  // Certify's conditional points: the boundary search's candidates (concurrent: widths;
  // cache_reuse: shared prefixes), or a chunked-prefill burst's target lengths (neighbours: the
  // one its first bursts' measured speeds call for). Each point is planned `replicates` times,
  // and the runner sends only those certify asks for (audit::certify_wants); empty: none.
  std::vector<int> points;
  // Burst kinds only: whether the requests stream (SSE, each token's arrival kept) so that the
  // server's decode steps can be reconstructed from their token times, for the attribution of a
  // first difference and for judging a neighbours burst. Unset: streams_decode_steps decides.
  // Streaming perturbs the server it measures (docs/performance.md), so a plain burst does not:
  // its batching evidence is the server's own counters.
  std::optional<bool> decode_steps;

  bool operator==(const condition&) const = default;
};

// Whether condition `c`'s bursts stream for decode steps: as the spec says, else only a
// neighbours condition (its late joiners wait on the first request's tokens, and its judgement
// reads the steps: explain's and certify's neighbours and chunked-prefill families).
bool streams_decode_steps(const condition& c);

BOOST_DEFINE_ENUM_CLASS(identity_level, logit, token)
std::string_view to_string(identity_level l);
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
  std::string url;         // empty: a backend configured in the daemon under `name`, or managed
  std::string api = "llama";  // a backend API kind (clients::api_kinds() knows them)
  std::optional<server_settings> managed;  // the daemon starts this server for the job

  bool operator==(const backend_ref&) const = default;
};

// A certify job (audit/certify.hpp, docs/certify.md): a claim about what must not change the
// numbers, a budget, and what the server says of itself, from which its schedule families are
// sized. Expanded into conditions when the job is created (expand_certify).
struct certify_settings {
  std::string claim = "batch-invariant";  // a row of certify_claims()
  int budget_requests = 400;  // planned requests at most (a random family takes what the others leave)
  int budget_minutes = 0;     // 0: none; else groups not begun by then are skipped (their families not tested)
  std::uint64_t seed = 1;     // of the random schedules
  // What the server says of itself; 0: read when the job is created (a managed server's
  // settings, else the server's /props), with llama-server's defaults for what neither says.
  int slots = 0;
  int n_batch = 0;
  int n_ubatch = 0;
  int n_ctx = 0;  // per slot
  std::string shape_source;  // where the four came from, in words (written at expansion)
  // Written at expansion: the schedules the budget (or the server's context) left out, as
  // condition names, or "family: why" for a family left out whole.
  std::vector<std::string> left_out;
  // The boundary search and the replays (written at expansion; -1: not set, which a spec
  // stored before them reads as none). Each point next to a boundary is tested `repeats`
  // times; the search sends at most `search_requests`; each distinct schedule that moved is
  // replayed `replays` times, `replay_schedules` of them at most.
  int repeats = 3;
  int search_requests = -1;
  int replays = -1;
  int replay_schedules = 8;

  bool operator==(const certify_settings&) const = default;
};

// An advise job (docs/advise.md): the job is a sweep of managed servers whose load condition
// ranks the configurations; after it, certify jobs of its own try them from the fastest down
// under `claim` and stop at the first certified. The advice is the job's findings.
struct advise_settings {
  std::string claim = "batch-invariant";  // a row of certify_claims()
  int certify_requests = 200;   // per certify job
  double certify_minutes = 30;  // the certify phase's budget: configurations not begun by then are not tried

  bool operator==(const advise_settings&) const = default;
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
  std::optional<sweep_spec> sweep;  // expanded into managed backends when the job is created
  // A reference audit (any audit of this database, imported or local): every stream is also
  // judged against its solo stream for the same request (audit/reference.hpp).
  std::optional<std::int64_t> reference_audit;
  // Each backend's selftest (seeded faults, clients/selftest.hpp) runs before its groups and is
  // stored, so that this audit cites a harness power measured in it.
  bool selftest = false;
  // Before each solo group, wait for the server to be idle (no request processing), at most
  // this long (0: do not wait); how long it waited and how often it gave up is reported.
  int wait_for_quiet_s = 0;
  // A certify job: its claim, budget and the server's shape; its conditions are the families
  // expand_certify makes (each with its `family`).
  std::optional<certify_settings> certify;
  std::optional<advise_settings> advise;  // with a sweep and a load condition

  bool operator==(const audit_spec&) const = default;
};

// One problem with a spec, naming the field (JSON path, e.g. "conditions[2].concurrency").
struct spec_problem {
  std::string field;
  std::string message;
};

// The seed audit's conditions and its four predictions, for the given backends.
audit_spec seed_protocol(std::vector<backend_ref> backends);

// The threshold-search preset: a greedy search up to width 8, with a prompt control.
audit_spec threshold_preset(std::vector<backend_ref> backends);
audit_spec explain_preset(std::vector<backend_ref> backends);
// The selftest preset: every backend's selftest, stored, and a short audit that cites it (serial
// repeats, one burst, a prompt control), each solo group after the server went quiet.
audit_spec selftest_preset(std::vector<backend_ref> backends);
// The load-curve preset: probes in Poisson traffic at 0.5, 1, 2, 4 and 8 requests/s, with
// serial repeats and a prompt control (docs/load.md).
audit_spec load_curve_preset(std::vector<backend_ref> backends);

// The sweep preset: the seed's greedy conditions under load, a probe, and a prompt control,
// over the matrix the submission gives (an empty matrix until then).
audit_spec sweep_preset();

// A preset: a named spec to start from. Its table (kPresets in spec.cpp) is the only list of
// them: the spec reader, GET /v1/presets, the OpenAPI document and both CLIs read it, so a new
// preset is a row there and the function that builds its spec (which spec.cpp can keep to
// itself).
struct preset_info {
  std::string_view name;
  std::string_view description;  // one sentence, for GET /v1/presets
  bool runs_as_is;               // false: a submission must add to it (a sweep's matrix)
  audit_spec (*make)();
};
std::span<const preset_info> presets();  // in the order GET /v1/presets lists them
std::vector<std::string> preset_names();
std::optional<audit_spec> preset(std::string_view name);  // nullopt: no preset of that name

// The widths a search visits: its own list, else 2..min(8, concurrency), then ~1.5x steps.
std::vector<int> search_widths(const condition& c);

// The spec with its sweep expanded: one managed backend per configuration and a throughput
// probe condition (named "throughput_probe") when there is none. A spec without a sweep, or
// one already expanded, comes back unchanged.
audit_spec expand_sweep(audit_spec spec);

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
  int max_sweep_configurations = 32;   // managed servers one sweep may start
  int max_server_threads = 64;         // a managed server's -t
  int max_server_parallel = 64;        // a managed server's -np
};

// Every problem at once; empty when the spec can run. `api_kinds` are the backend API kinds
// a backend may name (the programs pass clients::api_kinds().names()).
std::vector<spec_problem> validate(const audit_spec& spec, const spec_limits& limits,
                                   std::span<const std::string> api_kinds);

}  // namespace logitaudit::audit
