// Certify: claims, their schedule families, and the certificate read from judged findings.
#include "certify.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "enum_names.hpp"
#include "findings.hpp"
#include "numbers.hpp"
#include "statistics.hpp"

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

  auto make = [](std::string name, condition_kind kind, std::string family) {
    condition c;
    c.name = std::move(name);
    c.kind = kind;
    c.family = std::move(family);
    return c;
  };
  // Fits `c` into the budget, or records it as left out.
  spec.conditions.clear();
  auto add = [&](condition c) {
    spec.conditions.push_back(c);
    if (make_plan(spec).total_requests() > static_cast<std::size_t>(cs.budget_requests)) {
      spec.conditions.pop_back();
      cs.left_out.push_back(c.name);
    }
  };
  {  // solo and the comparator's control: never left out
    auto solo = make("solo", condition_kind::repeat, "solo");
    solo.replicates = 3;
    solo.seeded_replicates = claim->seeded ? 2 : 0;
    spec.conditions.push_back(solo);
    spec.conditions.push_back(make("control_prompt", condition_kind::control_prompt, ""));
  }
  const auto widths = co_residency_widths(shape.slots);
  for (int w : widths) {
    auto c = make("co_residency_w" + std::to_string(w), condition_kind::concurrent, "co_residency");
    c.concurrency = w;
    c.replicates = 2;
    add(c);
  }
  for (int l : prefix_lengths(shape, spec.n_predict)) {
    auto c = make("prefix_" + std::to_string(l), condition_kind::cache_reuse, "prefix_reuse");
    c.shared_prefix = l;
    c.cache_prompt = claim->cache_prompt;
    add(c);
  }
  {  // a prompt past n_batch where a slot holds one, else past n_ubatch
    const int room = shape.n_ctx - spec.n_predict - 8;
    const int want = shape.n_batch + 8 <= room ? shape.n_batch + 8 : shape.n_ubatch + 8;
    if (want <= room) {
      auto c = make("chunked_prefill_" + std::to_string(want), condition_kind::neighbours, "chunked_prefill");
      c.concurrency = 2;
      c.replicates = 2;
      c.neighbours.prompt_tokens = want;
      c.neighbours.join_after = {std::min(2, spec.n_predict - 1)};  // while the target decodes
      add(c);
    } else {
      cs.left_out.push_back("chunked_prefill: a slot's context (" + std::to_string(shape.n_ctx) +
                            " tokens) holds no prompt past n_ubatch (" + std::to_string(shape.n_ubatch) + ")");
    }
  }
  const int wn = shape.slots <= 1 ? 3 : std::clamp(shape.slots, 2, 4);
  auto neighbours = [&](std::string name, std::string family, bool seeded) {
    auto c = make(std::move(name), condition_kind::neighbours, std::move(family));
    c.concurrency = wn;
    c.seeded = seeded;
    return c;
  };
  {
    auto content = neighbours("neighbours_content", "neighbours", false);
    content.neighbours.prompts = neighbour_prompts::same_length;
    add(content);
    auto lengths = neighbours("neighbours_lengths", "neighbours", false);
    lengths.neighbours.prompts = neighbour_prompts::other_lengths;
    add(lengths);
    auto early = neighbours("neighbours_early_finisher", "neighbours", false);
    early.neighbours.n_predict.assign(static_cast<std::size_t>(wn - 1), spec.n_predict);
    early.neighbours.n_predict[0] = 2;
    add(early);
    auto late = neighbours("neighbours_late_joiner", "neighbours", false);
    late.neighbours.join_after.assign(static_cast<std::size_t>(wn - 1), 0);
    late.neighbours.join_after[0] = std::clamp(spec.n_predict / 2, 0, 4);
    add(late);
    auto order = neighbours("neighbours_order", "neighbours", false);
    order.neighbours.target_last = true;
    add(order);
  }
  if (claim->seeded) {
    for (int w : {widths.front(), widths.back()}) {
      auto c = make("seeded_co_residency_w" + std::to_string(w), condition_kind::concurrent, "seeded");
      c.concurrency = w;
      c.seeded = true;
      add(c);
      if (widths.size() == 1) break;
    }
    auto content = neighbours("seeded_neighbours_content", "seeded", true);
    content.neighbours.prompts = neighbour_prompts::same_length;
    add(content);
    if (const auto lengths = prefix_lengths(shape, spec.n_predict); !lengths.empty()) {
      auto c = make("seeded_prefix_" + std::to_string(lengths[lengths.size() / 2]), condition_kind::cache_reuse, "seeded");
      c.shared_prefix = lengths[lengths.size() / 2];
      c.cache_prompt = claim->cache_prompt;
      c.seeded = true;
      add(c);
    }
  }
  {  // random schedules: the rest of the budget, as probes among seeded traffic that keeps the slots full
    const auto used = static_cast<int>(make_plan(spec).total_requests());
    const int probes = std::min(64, cs.budget_requests - used);
    if (probes >= 4) {
      auto c = make("random", condition_kind::load, "random");
      c.load.arrival = arrival_kind::concurrency;
      c.load.levels = {static_cast<double>(std::max(1, shape.slots - 1))};
      c.load.probes = probes;
      c.load.duration_s = std::clamp(probes * 0.25, 2.0, 30.0);  // a probe every quarter second
      c.load.prompt_tokens = length_mix{{}, {}, 4, std::clamp(shape.n_ctx / 4, 8, 256)};
      c.load.output_tokens = length_mix{{}, {}, 2, std::max(4, spec.n_predict * 2)};
      c.load.max_in_flight = std::max(64, shape.slots * 2);
      c.load.seed = cs.seed;
      spec.conditions.push_back(c);
    } else {
      cs.left_out.push_back("random: the other families used the budget (" + std::to_string(used) + " of " +
                            std::to_string(cs.budget_requests) + " requests)");
    }
  }
  return spec;
}

std::string_view to_string(certificate_outcome o) { return enumerator_name(o); }
std::optional<certificate_outcome> parse_certificate_outcome(std::string_view s) {
  return parse_by_name(kEnumerators<certificate_outcome>, s);
}
std::string_view to_string(family_status s) { return enumerator_name(s); }
std::optional<family_status> parse_family_status(std::string_view s) { return parse_by_name(kEnumerators<family_status>, s); }

double upper_bound95(int k, int n) { return n > 0 ? clopper_pearson_upper(k, n, 0.95) : -1; }

namespace {

// Per family, what its judged streams showed at each width (co-residency) or prefix length.
struct point {
  int compared = 0, moved = 0;
};

std::string describe(const counterexample& c) {
  std::string s = c.condition + ": ";
  if (c.family == "prefix_reuse" || c.shared_prefix > 0)
    s += "a probe sharing " + std::to_string(c.shared_prefix) + " tokens with its warm-up (the server reused " +
         (c.reused_tokens >= 0 ? std::to_string(c.reused_tokens) : std::string("an unreported number of")) + ")";
  else if (c.requests > 1)
    s += std::to_string(c.client_width) + " requests at once (the server's busy slots per decode " +
         (c.server_width >= 0 ? fixed(c.server_width, 2) : std::string("not reported")) + (c.batched ? "" : "; judged not batched") + ")";
  else
    s += "one request";
  s += ", first difference at token " + std::to_string(c.first_difference);
  if (c.first_token_difference >= 0) s += ", a token changed at " + std::to_string(c.first_token_difference);
  if (c.step_width >= 0) s += ", in a decode step of width " + std::to_string(c.step_width);
  return s;
}

}  // namespace

std::optional<certificate> certify(const audit_spec& spec, const audit_plan& plan, const std::vector<observed_run>& runs,
                                   const findings& f, const std::map<std::size_t, burst_measurement>& bursts,
                                   const evidence_thresholds& t) {
  if (!spec.certify) return std::nullopt;
  const auto& cs = *spec.certify;
  const certify_claim* claim = find_claim(cs.claim);
  if (!claim) claim = &kClaims[0];
  certificate cert;
  cert.claim = std::string(claim->name);
  cert.level = claim->level;
  cert.backend = spec.backends.empty() ? "" : spec.backends.front().name;
  cert.shape = shape_of(cs);
  cert.shape_source = cs.shape_source;

  std::map<std::string, const condition*> by_name;
  std::map<std::string, int> conditions_of;  // family -> planned conditions
  for (const auto& c : spec.conditions) {
    by_name[c.name] = &c;
    if (!c.family.empty()) ++conditions_of[c.family];
  }
  std::map<std::pair<std::size_t, std::size_t>, const observed_run*> run_at;
  for (const auto& r : runs) run_at[{r.group, r.request}] = &r;
  std::map<std::pair<std::string, std::size_t>, const load_level_finding*> level_of;  // by group
  for (const auto& lc : f.load_curves)
    for (const auto& l : lc.levels) level_of[{lc.condition, l.group}] = &l;

  std::map<std::string, family_result> fams;
  std::map<std::string, std::map<int, point>> points;  // family -> width or prefix -> point
  std::map<std::string, int> moved_counted;            // family -> moved streams among the compared ones
  for (const auto& v : f.verdicts) {
    auto it = by_name.find(v.condition);
    if (it == by_name.end() || it->second->family.empty() || v.group >= plan.groups.size()) continue;
    const condition& c = *it->second;
    const request_group& g = plan.groups[v.group];
    auto& fr = fams[c.family];
    if (v.failed) {
      ++fr.failed;
      continue;
    }
    if (!v.result) continue;
    const bool moved = claim->level == identity_level::logit ? !v.result->logit_identical : !v.result->token_identical;
    // Whether its condition happened, as the claim defines it.
    bool happened = v.flag == evidence_flag::none;
    if (v.flag == evidence_flag::not_batched && !claim->needs_batching)  // in flight together, decoded apart
      if (auto m = bursts.find(v.group); m != bursts.end() && m->second.overlap >= t.min_overlap) happened = true;
    if (v.flag == evidence_flag::not_reused && !c.cache_prompt) happened = true;  // the claim sends no cache
    const burst_verdict* bv = nullptr;
    if (auto b = f.bursts.find(v.group); b != f.bursts.end()) bv = &b->second;
    double server = -1;
    if (bv && bv->measured) server = *bv->measured;
    if (g.mode == group_mode::load) {
      if (auto l = level_of.find({c.name, v.group}); l != level_of.end()) {
        server = l->second->measurement.server_busy_slots_per_decode >= 0 ? l->second->measurement.server_busy_slots_per_decode
                                                                          : l->second->mean_width;
        // Random schedules test batching only where the probes shared a batch.
        if (claim->needs_batching && l->second->mean_width <= 1.05 && server <= 1.05) happened = false;
      }
    }
    int client = g.mode == group_mode::burst ? static_cast<int>(g.requests.size()) : 1;
    if (g.mode == group_mode::load)  // the generator's requests in flight, probes among them
      if (auto l = level_of.find({c.name, v.group}); l != level_of.end()) client = std::max(1, l->second->measurement.max_in_flight);
    if (g.mode != group_mode::serial) {
      fr.client_width_max = std::max(fr.client_width_max, client);
      if (server >= 0) {
        fr.server_width_min = fr.server_width_min < 0 ? server : std::min(fr.server_width_min, server);
        fr.server_width_max = std::max(fr.server_width_max, server);
      }
    }
    int reused = -1;
    if (c.kind == condition_kind::cache_reuse)
      if (auto r = run_at.find({v.group, v.request}); r != run_at.end() && r->second->stream)
        reused = static_cast<int>(r->second->stream->server.cache_n);
    if (reused >= 0) fr.reused_tokens_max = std::max(fr.reused_tokens_max, reused);
    // A prefix is where the server's cache served from: what it says it served when it sent the
    // cache, else what the probe shares with its warm-up.
    const int at = c.kind != condition_kind::cache_reuse ? client : c.cache_prompt && reused >= 0 ? reused : c.shared_prefix;
    if (c.kind == condition_kind::cache_reuse && c.cache_prompt && reused > c.shared_prefix) ++fr.served_beyond;
    auto& pt = points[c.family][at];
    if (happened) {
      ++fr.compared;
      ++pt.compared;
      moved_counted[c.family] += moved;
    } else {
      ++fr.flagged;
    }
    if (!moved) continue;
    ++fr.divergent;
    ++pt.moved;
    counterexample x;
    x.family = c.family;
    x.condition = c.name;
    x.group = v.group;
    x.request = v.request;
    x.requests = g.mode == group_mode::load ? client : static_cast<int>(g.requests.size());
    x.client_width = client;
    x.server_width = server;
    x.batched = bv && bv->batched;
    x.shared_prefix = c.shared_prefix;
    x.reused_tokens = reused;
    x.seeded = c.seeded;
    x.first_difference = v.result->first_logit_difference;
    x.first_token_difference = v.result->token_identical ? -1 : v.result->first_token_difference;
    x.max_abs_delta = v.result->max_abs_delta;
    if (v.at_difference) {
      x.step_width = v.at_difference->width;
      x.step_width_before = v.at_difference->width_before;
      x.step_events = describe_events(v.at_difference->events);
    }
    cert.counterexamples.push_back(std::move(x));
  }

  // Planned groups of a family that left nothing (the budget's minutes skipped them).
  std::set<std::size_t> ran;
  for (const auto& r : runs) ran.insert(r.group);
  std::map<std::string, int> not_run;
  for (const auto& g : plan.groups)
    if (auto it = by_name.find(g.condition); !g.is_baseline && it != by_name.end() && !it->second->family.empty() && !ran.count(g.index))
      ++not_run[it->second->family];
  for (std::string_view name : kCertifyFamilies) {
    if (name == "seeded" && !claim->seeded) continue;
    family_result fr = fams.count(std::string(name)) ? fams[std::string(name)] : family_result{};
    fr.family = std::string(name);
    const auto& pts = points[fr.family];
    if (fr.divergent > 0) {
      fr.status = family_status::refuted;
      for (const auto& [at, p] : pts)
        if (p.moved > 0) {
          fr.boundary = at;
          break;
        }
      for (const auto& [at, p] : pts)
        if (at < fr.boundary && p.compared > 0 && p.moved == 0) fr.held_below = at;
      if (fr.family == "co_residency" || fr.family == "prefix_reuse") {
        const std::string unit = fr.family == "co_residency" ? "requests at once" : "prompt tokens served from the cache";
        std::string moved_at, held_at;
        for (const auto& [at, p] : pts) {
          if (p.moved == 0 && p.compared == 0) continue;  // nothing counted there: neither moved nor held
          auto& list = p.moved > 0 ? moved_at : held_at;
          list += list.empty() ? std::to_string(at) : ", " + std::to_string(at);
        }
        fr.note = "moved at " + moved_at + (held_at.empty() ? "" : "; held at " + held_at) + ". ";
        fr.note += "Diverges from " + std::to_string(fr.boundary) + " " + unit +
                  (fr.held_below >= 0 ? "; held at " + std::to_string(fr.held_below) : "; nothing smaller held") +
                  (fr.held_below >= 0 && fr.held_below + 1 == fr.boundary ? " (the exact boundary)"
                                                                          : fr.held_below >= 0 ? " (the boundary lies between)" : "");
      }
    } else if (fr.compared > 0) {
      fr.status = family_status::passed;
    } else if (conditions_of[fr.family] == 0) {
      fr.status = family_status::not_planned;
      for (const auto& l : cs.left_out)
        if (l.starts_with(fr.family + ":")) fr.note = l.substr(fr.family.size() + 2);
      if (fr.note.empty()) fr.note = "left out: the budget (" + std::to_string(cs.budget_requests) + " requests) ran out";
    } else {
      fr.status = family_status::not_tested;
      if (fr.failed == 0 && fr.flagged == 0) fr.note = "none of its schedules ran (the budget's minutes ran out before them)";
      else if (fr.failed > 0 && fr.flagged == 0) fr.note = "every request failed";
      else if (fr.family == "prefix_reuse" || (fr.family == "seeded" && fr.reused_tokens_max == 0))
        fr.note = "the server never served a prefix from its cache";
      else
        fr.note = "no burst batched: the server's busy slots per decode " +
                  (fr.server_width_max >= 0 ? "reached at most " + fixed(fr.server_width_max, 2) : std::string("were not reported")) +
                  " with up to " + std::to_string(fr.client_width_max) + " requests in flight";
    }
    if (fr.compared > 0) fr.bound95 = upper_bound95(moved_counted[fr.family], fr.compared);
    fr.not_run = not_run[fr.family];
    if (fr.not_run > 0 && fr.status != family_status::not_planned)
      fr.note += std::string(fr.note.empty() ? "" : "; ") + std::to_string(fr.not_run) +
                 " of its schedules did not run (the budget's minutes ran out)";
    if (fr.served_beyond > 0)
      fr.note += std::string(fr.note.empty() ? "" : "; ") + std::to_string(fr.served_beyond) +
                 " probe(s) were served more than their shared prefix: the server's prompt cache held them from an earlier "
                 "request (llama-server's --cache-ram)";
    // Conditions the budget left out of a tested family: said, not hidden.
    int left = 0;
    for (const auto& l : cs.left_out)
      if (auto it = by_name.find(l); it == by_name.end() && l.find(':') == std::string::npos) {
        const bool mine = (fr.family == "co_residency" && l.starts_with("co_residency_")) ||
                          (fr.family == "prefix_reuse" && l.starts_with("prefix_")) ||
                          (fr.family == "neighbours" && l.starts_with("neighbours_")) ||
                          (fr.family == "chunked_prefill" && l.starts_with("chunked_prefill_")) ||
                          (fr.family == "seeded" && l.starts_with("seeded_"));
        left += mine;
      }
    if (left > 0 && fr.status != family_status::not_planned)
      fr.note += std::string(fr.note.empty() ? "" : "; ") + std::to_string(left) + " of its schedules left out by the budget";
    cert.families.push_back(std::move(fr));
  }

  std::stable_sort(cert.counterexamples.begin(), cert.counterexamples.end(), [](const auto& a, const auto& b) {
    return std::tuple(a.requests, a.client_width, a.shared_prefix, a.first_difference) <
           std::tuple(b.requests, b.client_width, b.shared_prefix, b.first_difference);
  });
  cert.counterexamples_total = static_cast<int>(cert.counterexamples.size());
  if (cert.counterexamples.size() > 20) cert.counterexamples.resize(20);

  int passed = 0, refuted = 0, untested = 0, streams = 0;
  double worst = 0;
  std::string untested_names, refuted_names;
  for (const auto& fr : cert.families) {
    streams += fr.compared;
    if (fr.status == family_status::passed && fr.not_run == 0) {
      ++passed;
      worst = std::max(worst, fr.bound95);
    } else if (fr.status == family_status::refuted) {
      ++refuted;
      refuted_names += (refuted_names.empty() ? "" : ", ") + fr.family;
    } else {
      ++untested;
      untested_names += (untested_names.empty() ? "" : ", ") + fr.family;
    }
  }
  const std::string who = "'" + cert.claim + "' on " + cert.backend;
  if (!f.valid || !f.fingerprint_changes.empty() || !f.missing_fingerprints.empty()) {
    cert.outcome = certificate_outcome::invalid;
    cert.sentence = "Not certified: " + who + " cannot be judged: " +
                    (!f.valid ? f.invalid_reason
                              : !f.fingerprint_changes.empty() ? std::string("the server changed during the run")
                                                               : std::string("a fingerprint is missing")) +
                    ".";
  } else if (!cert.counterexamples.empty()) {
    cert.outcome = certificate_outcome::refuted;
    cert.sentence = "Refuted: " + who + ": " + std::to_string(cert.counterexamples_total) + " stream(s) moved in " +
                    std::to_string(refuted) + " famil" + (refuted == 1 ? "y" : "ies") + " (" + refuted_names +
                    "); the smallest counterexample is " + describe(cert.counterexamples.front()) + ".";
    for (const auto& fr : cert.families)
      if (fr.status == family_status::refuted && fr.boundary >= 0 && (fr.family == "co_residency" || fr.family == "prefix_reuse"))
        cert.sentence += " " + std::string(fr.family == "co_residency" ? "Co-residency" : "Prefix reuse") + " " + fr.note + ".";
  } else if (untested == 0) {
    cert.outcome = certificate_outcome::certified;
    cert.sentence = "Certified: " + who + ": " + std::to_string(streams) + " streams over " + std::to_string(passed) +
                    " families, none moved; at 95% confidence no family's divergence rate exceeds " + fixed(worst, 3) + ".";
  } else {
    cert.outcome = certificate_outcome::incomplete;
    cert.sentence = "Not certified: " + who + ": nothing moved in " + std::to_string(streams) + " streams, but " +
                    std::to_string(untested) + " famil" + (untested == 1 ? "y was" : "ies were") + " not tested (" +
                    untested_names + ").";
  }
  return cert;
}

}  // namespace logitaudit::audit
