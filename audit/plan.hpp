// The plan: a spec expanded into ordered request groups (serial or burst), each tagged with
// its backend, condition and replicate, and every compared request tied to its solo baseline.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include "spec.hpp"

namespace logitaudit::audit {

struct sampling {
  double temperature = 0.0;  // 0: greedy
  std::optional<std::uint64_t> seed;
  bool operator==(const sampling&) const = default;
};

struct planned_request {
  std::string prompt;
  sampling params;
  bool cache_prompt = false;
  std::optional<int> id_slot;  // the fixed slot of serial requests
  bool compared = true;        // cache warm-ups and cross-batch fillers are not compared
  int baseline = -1;           // index into audit_plan::baselines, for compared requests
  std::optional<int> n_predict;  // a neighbour's own length (neighbours conditions); else the plan's
  int join_after_tokens = 0;     // a neighbour written once the target has this many tokens
  std::optional<int> n_probs;    // an observer's own top-k (0: the ids alone); else the plan's
  bool post_sampling = false;    // an observer's: the top-k as probabilities after sampling (llama.cpp)
  bool operator==(const planned_request&) const = default;
};

// serial: one request after another, each alone; burst: all at once; load: probes inside the
// background traffic of one level of a load condition (its `replicate` is the level's index).
enum class group_mode { serial, burst, load };

// The condition name of every baseline group.
inline constexpr const char* kBaselineCondition = "baseline";

struct request_group {
  std::size_t index = 0;
  std::string backend;
  bool is_baseline = false;
  std::string condition;  // kBaselineCondition for baseline groups
  condition_kind kind = condition_kind::repeat;
  int replicate = 0;
  group_mode mode = group_mode::serial;
  std::vector<planned_request> requests;
  // Certify's boundary search and replays: the group runs only when the search asks for it
  // (one that did not run was not needed, and is no failure). `point`: the search's width or
  // shared prefix; `replay`: a copy of its condition's schedule, sent to see it move again.
  bool conditional = false;
  bool replay = false;
  int point = -1;
  bool decode_steps = false;  // a burst that streams for decode steps (streams_decode_steps)
};

// A solo reference stream: one per (backend, prompt, sampling) that some condition needs.
struct baseline_ref {
  std::string backend;
  std::string prompt;
  sampling params;
  std::size_t group = 0;    // the group that produces it
  std::size_t request = 0;  // its request there (a baseline group's only one; a search group's cold probe)
};

struct audit_plan {
  std::vector<request_group> groups;  // in execution order, baselines first per backend
  std::vector<baseline_ref> baselines;
  int n_predict = 32;
  int top_k = 5;
  // The requests the plan sends for certain: a conditional group's (certify's search and
  // replays) count only once they are sent.
  std::size_t total_requests() const;
};

// A prompt of token ids, written "[tokens: 301 302 ...]": sent as the ids themselves (llama's
// /completion and the OpenAI completions API take them), so that a prompt's length and a shared
// prefix are exact in the server's own tokens. nullopt: a text prompt.
std::optional<std::vector<std::int64_t>> prompt_token_ids(std::string_view prompt);
std::string token_prompt(const std::vector<std::int64_t>& ids);
// `n` token ids in [300, 397), a different sequence per `stream`: certify's prompts of exact
// lengths (a vocabulary of 400 or more is assumed).
std::vector<std::int64_t> certify_token_ids(int n, std::uint64_t stream);
// A warm-up and a probe that share exactly `shared` leading token ids, then `tail` ids each
// that differ from the first: what a cache can serve the probe from the warm-up is the prefix.
std::pair<std::string, std::string> shared_prefix_prompts(int shared, int tail = 8);

// The request of its baseline's group that is the baseline of request `request` of group
// `group`: 0 for a baseline group's only one, the last for a search's cold probe; 0 when the
// plan has no such request (a stored run of another plan).
std::size_t baseline_request(const audit_plan& plan, std::size_t group, std::size_t request);

// Expands a validated spec. Pure and deterministic: the same spec gives the same plan.
//  - Baselines are solo, cache_prompt off, on slot 0, so that they are reproducible.
//  - Serial conditions run on slot 0 with cache_prompt off, like their baselines.
//  - Bursts leave the slot to the server (they must spread over slots to batch).
//  - cache_reuse warms slot 0 with cache_prompt on, then sends the same prompt again there.
//  - Groups of one backend are contiguous: nothing else from the job runs on it meanwhile.
audit_plan make_plan(const audit_spec& spec);

// The different prompts batched with the target in a cross-batch burst.
std::string cross_batch_filler(std::size_t i);

}  // namespace logitaudit::audit
