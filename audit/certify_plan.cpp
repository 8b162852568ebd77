// Certify's plan: the claims, their schedule families, and the conditions each family is sized
// to from the server's shape (docs/certify.md). The judge is certify_judge.cpp.
#include "certify.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "enum_names.hpp"
#include "numbers.hpp"

namespace logitaudit::audit {

namespace {

constexpr certify_claim kClaims[] = {
    {"batch-invariant",
     "Neither concurrency, the other prompts in a batch, arrival timing, a reused prompt prefix nor seeded sampling "
     "changes a stream's numbers: every family, bursts counted only when the server batched them",
     true, true, true, identity_level::logit},
    {"no-prompt-cache",
     "As batch-invariant, with every request's cache_prompt off (the llama.cpp maintainers' advice for determinism)",
     true, false, true, identity_level::logit},
    {"single-slot",
     "A server that decodes one request at a time (-np 1) gives every request its solo numbers whatever arrives beside "
     "it or came before it on its slot: every family with cache_prompt off, a burst counted when its requests were in "
     "flight together",
     true, false, false, identity_level::logit},
    {"greedy-text-only",
     "Greedy token ids hold under every family while logprobs may move (the first seed's rule); seeded sampling is not "
     "claimed",
     false, true, true, identity_level::token},
};

}  // namespace

std::span<const certify_claim> certify_claims() { return kClaims; }

const certify_claim* find_claim(std::string_view name) {
  for (const auto& c : kClaims)
    if (c.name == name) return &c;
  return nullptr;
}

std::string certify_family_names() {
  std::string out;
  for (auto f : kCertifyFamilies) out += (out.empty() ? "" : ", ") + std::string(f);
  return out;
}

std::string_view family_aim(std::string_view f) {
  if (f == "solo") return "serial repeats on one slot: the server's own determinism, which every other family presumes";
  if (f == "observer") return "the same requests asking for no, one, the audit's and many top logprobs: asking to see them must not change the tokens";
  if (f == "co_residency") return "identical requests decoded together, from 2 up to the slots and one past every power of two";
  if (f == "prefix_reuse") return "a probe whose prompt shares an exact token prefix with the slot's last one, around block and ubatch boundaries";
  if (f == "chunked_prefill") return "a prompt longer than the batch arriving while the target decodes";
  if (f == "neighbours") return "other content, other lengths, an early finisher, a late joiner, another slot order";
  if (f == "seeded") return "seeded sampling in the families above";
  if (f == "random") return "arrival times and lengths drawn from a seeded generator, with the slots kept full";
  return "";
}

std::vector<int> co_residency_widths(int slots) {
  if (slots <= 1) return {2, 4};
  std::set<int> w;
  for (int i = 2; i <= std::min(slots, 8); ++i) w.insert(i);
  for (int p = 8; p <= slots; p *= 2) {
    w.insert(p);
    if (p + 1 <= slots) w.insert(p + 1);
  }
  w.insert(slots);
  return {w.begin(), w.end()};
}

std::vector<int> prefix_lengths(const certify_shape& s, int n_predict) {
  std::set<int> l = {15, 16, 17, 63, 64, 65, 255, 256, 257};
  for (int d : {-1, 0, 1}) l.insert(s.n_ubatch + d);
  const int room = s.n_ctx - n_predict - 8 - 2;  // the probe's tail, its answer, and a margin
  std::vector<int> out;
  for (int x : l)
    if (x >= 1 && x <= room) out.push_back(x);
  return out;
}

certify_shape shape_of(const certify_settings& c) {
  certify_shape s;
  if (c.slots > 0) s.slots = c.slots;
  if (c.n_batch > 0) s.n_batch = c.n_batch;
  if (c.n_ubatch > 0) s.n_ubatch = c.n_ubatch;
  if (c.n_ctx > 0) s.n_ctx = c.n_ctx;
  return s;
}

namespace {

condition family_condition(std::string name, condition_kind kind, std::string family) {
  condition c;
  c.name = std::move(name);
  c.kind = kind;
  c.family = std::move(family);
  return c;
}

// Adds a certify spec's conditions family by family, each within the budget.
struct family_planner {
  audit_spec& spec;
  certify_settings& cs;
  const certify_claim& claim;
  const certify_shape& shape;

  // Fits `c` into the budget, or records it as left out.
  void add(condition c) {
    spec.conditions.push_back(c);
    if (make_plan(spec).total_requests() > static_cast<std::size_t>(cs.budget_requests)) {
      spec.conditions.pop_back();
      cs.left_out.push_back(c.name);
    }
  }

  // Solo and the comparator's control: never left out.
  void solo() {
    auto s = family_condition("solo", condition_kind::repeat, "solo");
    s.replicates = 3;
    s.seeded_replicates = claim.seeded ? 2 : 0;
    spec.conditions.push_back(s);
    spec.conditions.push_back(family_condition("control_prompt", condition_kind::control_prompt, ""));
  }

  // The observer: the solo requests again, greedy and seeded, asking to see more or less of
  // the numbers (observer_asks); their token ids must be the baseline's.
  void observer() {
    auto c = family_condition("observer", condition_kind::observer, "observer");
    c.replicates = 1;
    c.seeded_replicates = claim.seeded ? 1 : 0;
    add(c);
  }

  void co_residency() {
    for (int w : co_residency_widths(shape.slots)) {
      auto c = family_condition("co_residency_w" + std::to_string(w), condition_kind::concurrent, "co_residency");
      c.concurrency = w;
      c.replicates = 2;
      add(c);
    }
  }

  void prefix_reuse() {
    for (int l : prefix_lengths(shape, spec.n_predict)) {
      auto c = family_condition("prefix_" + std::to_string(l), condition_kind::cache_reuse, "prefix_reuse");
      c.shared_prefix = l;
      c.cache_prompt = claim.cache_prompt;
      add(c);
    }
  }

  // A prompt past n_batch where a slot holds one, else past n_ubatch, arriving while the target decodes.
  void chunked_prefill() {
    const int room = shape.n_ctx - spec.n_predict - 8;
    const int want = shape.n_batch + 8 <= room ? shape.n_batch + 8 : shape.n_ubatch + 8;
    if (want > room) {
      cs.left_out.push_back("chunked_prefill: a slot's context (" + std::to_string(shape.n_ctx) +
                            " tokens) holds no prompt past n_ubatch (" + std::to_string(shape.n_ubatch) + ")");
      return;
    }
    auto c = family_condition("chunked_prefill_" + std::to_string(want), condition_kind::neighbours, "chunked_prefill");
    c.concurrency = 2;
    c.replicates = 2;
    c.neighbours.prompt_tokens = want;
    c.neighbours.join_after = {std::min(2, spec.n_predict - 1)};
    add(c);
    if (spec.conditions.back().name != c.name) return;
    // A target at the spec's length can finish before the long prompt is in (a fast model,
    // many slots): the same burst with a longer target, sized from what the first bursts
    // measured (certify_wants), each length conditional and outside the budget.
    auto sized = c;
    sized.name = "chunked_prefill_sized";
    for (int t = 16; t <= std::min(4096, shape.n_ctx / 2); t *= 2)
      if (t > spec.n_predict) sized.points.push_back(t);
    if (!sized.points.empty()) spec.conditions.push_back(sized);
  }

  condition neighbours_of(std::string name, std::string family, bool seeded) const {
    auto c = family_condition(std::move(name), condition_kind::neighbours, std::move(family));
    c.concurrency = shape.slots <= 1 ? 3 : std::clamp(shape.slots, 2, 4);
    c.seeded = seeded;
    return c;
  }

  void neighbours() {
    const auto others = static_cast<std::size_t>(neighbours_of("", "", false).concurrency - 1);
    auto content = neighbours_of("neighbours_content", "neighbours", false);
    content.neighbours.prompts = neighbour_prompts::same_length;
    add(content);
    auto lengths = neighbours_of("neighbours_lengths", "neighbours", false);
    lengths.neighbours.prompts = neighbour_prompts::other_lengths;
    add(lengths);
    auto early = neighbours_of("neighbours_early_finisher", "neighbours", false);
    early.neighbours.n_predict.assign(others, spec.n_predict);
    early.neighbours.n_predict[0] = 2;
    add(early);
    auto late = neighbours_of("neighbours_late_joiner", "neighbours", false);
    late.neighbours.join_after.assign(others, 0);
    late.neighbours.join_after[0] = std::clamp(spec.n_predict / 2, 0, 4);
    add(late);
    auto order = neighbours_of("neighbours_order", "neighbours", false);
    order.neighbours.target_last = true;
    add(order);
  }

  void seeded() {
    if (!claim.seeded) return;
    const auto widths = co_residency_widths(shape.slots);
    for (int w : {widths.front(), widths.back()}) {
      auto c = family_condition("seeded_co_residency_w" + std::to_string(w), condition_kind::concurrent, "seeded");
      c.concurrency = w;
      c.seeded = true;
      add(c);
      if (widths.size() == 1) break;
    }
    auto content = neighbours_of("seeded_neighbours_content", "seeded", true);
    content.neighbours.prompts = neighbour_prompts::same_length;
    add(content);
    if (const auto lengths = prefix_lengths(shape, spec.n_predict); !lengths.empty()) {
      auto c = family_condition("seeded_prefix_" + std::to_string(lengths[lengths.size() / 2]), condition_kind::cache_reuse, "seeded");
      c.shared_prefix = lengths[lengths.size() / 2];
      c.cache_prompt = claim.cache_prompt;
      c.seeded = true;
      add(c);
    }
  }

  // Random schedules: the rest of the budget, as probes among seeded traffic that keeps the slots full.
  void random() {
    const auto used = static_cast<int>(make_plan(spec).total_requests());
    const int probes = std::min(64, cs.budget_requests - used);
    if (probes < 4) {
      cs.left_out.push_back("random: the other families used the budget (" + std::to_string(used) + " of " +
                            std::to_string(cs.budget_requests) + " requests)");
      return;
    }
    auto c = family_condition("random", condition_kind::load, "random");
    c.load.arrival = arrival_kind::concurrency;
    c.load.levels = {static_cast<double>(std::max(1, shape.slots - 1))};
    c.load.probes = probes;
    c.load.duration_s = std::clamp(probes * 0.25, 2.0, 30.0);  // a probe every quarter second
    c.load.prompt_tokens = length_mix{{}, {}, 4, std::clamp(shape.n_ctx / 4, 8, 256)};
    c.load.output_tokens = length_mix{{}, {}, 2, std::max(4, spec.n_predict * 2)};
    c.load.max_in_flight = std::max(64, shape.slots * 2);
    c.load.seed = cs.seed;
    spec.conditions.push_back(c);
  }
};

}  // namespace

audit_spec expand_certify(audit_spec spec, const certify_shape& shape) {
  if (!spec.certify) return spec;
  for (const auto& c : spec.conditions)
    if (!c.family.empty()) return spec;
  auto& cs = *spec.certify;
  const certify_claim* claim = find_claim(cs.claim);
  if (!claim) return spec;
  cs.slots = shape.slots;
  cs.n_batch = shape.n_batch;
  cs.n_ubatch = shape.n_ubatch;
  cs.n_ctx = shape.n_ctx;
  cs.left_out.clear();
  spec.conditions.clear();
  family_planner p{spec, cs, *claim, shape};
  p.solo();
  p.observer();
  p.co_residency();
  p.prefix_reuse();
  p.chunked_prefill();
  p.neighbours();
  p.seeded();
  p.random();
  // The boundary search and the replays: conditional, so outside the budget of requests above.
  if (cs.search_requests < 0) cs.search_requests = cs.budget_requests / 2;
  if (cs.replays < 0) cs.replays = 5;
  for (auto& c : boundary_search_conditions(spec, shape)) spec.conditions.push_back(std::move(c));
  return spec;
}

}  // namespace logitaudit::audit
