// The judgement: every stream against its baseline and its evidence, the tallies, the controls
// and the servers' changes, then the analyses (audit/analysis.hpp) and the sentences.
#include "findings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "analysis.hpp"
#include "controls.hpp"
#include "enum_names.hpp"
#include "harness_power.hpp"
#include "numbers.hpp"
#include "statistics.hpp"
#include "stream_encoding.hpp"

namespace logitaudit::audit {
namespace {

std::string pct(int k, int n) { return share(k, n); }

const condition* find_condition(const audit_spec& spec, const std::string& name) {
  for (const auto& c : spec.conditions)
    if (c.name == name) return &c;
  return nullptr;
}

// The kinds whose requests go in bursts are those whose streams can be flagged not_batched.
bool is_burst_kind(condition_kind k) { return flag_of(k) == evidence_flag::not_batched; }

condition_tally empty_tally(const condition& c) {
  condition_tally t;
  t.condition = c.name;
  t.kind = c.kind;
  t.concurrency = c.concurrency;
  t.seeded = c.seeded;
  return t;
}

void count(condition_tally& t, const run_verdict& v) {
  if (v.failed) ++t.failed;
  else if (v.flag != evidence_flag::none) {
    ++t.flagged;
    t.not_solo += v.flag == evidence_flag::not_solo;
    t.ineffective += v.flag == evidence_flag::control_ineffective;
  }
  else if (v.result) {
    ++t.n;
    t.logit_identical += v.result->logit_identical;
    t.token_identical += v.result->token_identical;
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The batching evidence of one condition's bursts (on one backend, or all when `backend` is empty).
burst_summary summarize_bursts(const audit_plan& plan, const findings& f, const evaluation_evidence& ev,
                               const condition& c, const std::string& backend, int width = 0) {
  burst_summary s;
  s.width = width > 0 ? width : c.concurrency;
  std::vector<double> measured, overlap, expected;
  for (const auto& g : plan.groups) {
    if (g.condition != c.name || (!backend.empty() && g.backend != backend)) continue;
    if (width > 0 && static_cast<int>(g.requests.size()) != width) continue;
    auto v = f.bursts.find(g.index);
    if (v == f.bursts.end()) continue;
    ++s.bursts;
    s.batched += v->second.batched;
    expected.push_back(v->second.expected);
    if (v->second.measured) {
      measured.push_back(*v->second.measured);
      s.measured_by = v->second.measured_by;
    }
    // Whether it streamed: as measured, else as planned (a burst with no stored measurement was
    // still sent one way or the other, and counting it neither way read "k/n streamed").
    bool streamed = g.decode_steps;
    if (auto m = ev.bursts.find(g.index); m != ev.bursts.end()) {
      overlap.push_back(m->second.overlap);
      streamed = m->second.streamed;
    }
    s.streamed = s.streamed.value_or(0) + (streamed ? 1 : 0);
  }
  if (!measured.empty()) s.median_measured = median(measured);
  s.median_overlap = median(overlap);
  s.expected = median(expected);
  return s;
}

struct sums {
  int n = 0, logit = 0, token = 0;
  void add(const condition_tally& t) {
    n += t.n;
    logit += t.logit_identical;
    token += t.token_identical;
  }
};

// "concurrency", "concurrency and cache reuse", "concurrency, cross-batch and cache reuse".
std::string kinds_phrase(const std::vector<condition_kind>& kinds) {
  std::vector<std::string> names;
  for (auto k : {condition_kind::concurrent, condition_kind::cross_batch, condition_kind::cache_reuse})
    if (std::find(kinds.begin(), kinds.end(), k) != kinds.end())
      names.push_back(k == condition_kind::concurrent ? "concurrency" : k == condition_kind::cross_batch ? "cross-batch" : "cache reuse");
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

void write_evidence_sentences(const audit_plan& plan, findings& f) {
  for (const auto& t : f.pooled) {
    const int own = t.flagged - t.not_solo - t.ineffective;  // flagged for the condition's own evidence
    if (own == 0 || flag_of(t.kind) == evidence_flag::none) continue;
    std::string reason;
    for (const auto& v : f.verdicts)
      if (v.condition == t.condition && v.flag == flag_of(t.kind)) {
        reason = v.flag_reason;
        break;
      }
    if (flag_of(t.kind) == evidence_flag::level_not_reached) {
      continue;  // said per level in the curve's sentence
    } else if (flag_of(t.kind) == evidence_flag::not_batched) {
      int bursts = 0, unbatched = 0;
      for (const auto& g : plan.groups)
        if (g.condition == t.condition)
          if (auto b = f.bursts.find(g.index); b != f.bursts.end()) {
            ++bursts;
            unbatched += !b->second.batched;
          }
      f.sentences.push_back("Batching: " + t.condition + " did not batch in " + std::to_string(unbatched) + " of " +
                            plural(bursts, "burst") + " (" + reason + "); its " + plural(t.flagged, "stream") +
                            (t.flagged == 1 ? " is" : " are") + " counted apart, never as having survived " +
                            (t.kind == condition_kind::cross_batch ? "cross-batching." : "concurrency."));
    } else {
      f.sentences.push_back("Cache reuse: " + std::to_string(own) + " of " +
                            plural(t.flagged + t.n + t.failed, "stream") + " of " + t.condition +
                            " reused no cached prompt (" + reason + "); " + (own == 1 ? "it is" : "they are") +
                            " counted apart, never as having survived cache reuse.");
    }
  }
}

// " (to 4 decimals: the logprobs as written)" when a backend's server does not write its
// logprobs bit-exactly: "logit-identical" then means equal to what it writes.
std::string identity_qualifier(const findings& f) {
  std::string q;
  const auto& resolution = section<harness_section>(f).resolution;
  for (const auto& [b, r] : resolution)
    if (!r.qualifier().empty()) q += (q.empty() ? "" : ", ") + (resolution.size() > 1 ? b + " " : "") + r.qualifier();
  return q.empty() ? "" : " (" + q + ": the logprobs as written)";
}

// "3 neighbours of the same length, one finishing after 16 tokens, the target written last".
std::string neighbours_phrase(const condition& c, int n_predict) {
  const auto& n = c.neighbours;
  const int count = c.concurrency - 1;
  std::string s = std::to_string(count) + (count == 1 ? " neighbour " : " neighbours ");
  s += n.prompt_tokens > 0                          ? "with a prompt of " + std::to_string(n.prompt_tokens) + " token ids"
       : n.prompts == neighbour_prompts::identical     ? "with the target's prompt"
       : n.prompts == neighbour_prompts::same_length ? "with other prompts of the same length"
                                                     : "with prompts of other lengths";
  for (std::size_t i = 0; i < n.n_predict.size(); ++i)
    if (n.n_predict[i] != n_predict) s += ", request " + std::to_string(i + 1) + " finishing after " + std::to_string(n.n_predict[i]) + " tokens";
  for (std::size_t i = 0; i < n.join_after.size(); ++i)
    if (n.join_after[i] > 0)
      s += ", request " + std::to_string(i + 1) + " joining after the target's first " + std::to_string(n.join_after[i]) + " tokens";
  if (n.target_last) s += ", the target written last";
  return s;
}

// One sentence per neighbours condition: what the target shared its batch with, how often it
// stayed identical, and where its first differences sit.
void write_neighbour_sentences(const audit_spec& spec, findings& f) {
  for (const auto& t : f.pooled) {
    if (t.kind != condition_kind::neighbours) continue;
    const auto* c = find_condition(spec, t.condition);
    if (!c) continue;
    if (!c->points.empty() && t.n + t.flagged + t.failed == 0) continue;  // conditional, and not needed
    std::string s = "Neighbours (" + t.condition + ": the target beside " + neighbours_phrase(*c, spec.n_predict) +
                    (c->points.empty() ? "" : ", the target decoding longer") + "): ";
    if (t.n == 0) {
      s += "no stream was counted (" + std::to_string(t.flagged) + " flagged, " + std::to_string(t.failed) + " failed).";
      f.sentences.push_back(s);
      continue;
    }
    s += pct(t.logit_identical, t.n) + " logit-identical" + identity_qualifier(f) + ", " + pct(t.token_identical, t.n) +
         " token-identical";
    // Where the first differences sit, against what the condition put there.
    std::map<int, int> at;
    int divergent = 0;
    for (const auto& v : f.verdicts)
      if (v.condition == t.condition && v.counted() && !v.result->logit_identical) {
        ++divergent;
        ++at[v.result->first_logit_difference];
      }
    if (divergent > 0) {
      std::string where;
      for (const auto& [p, k] : at) where += (where.empty() ? "" : ", ") + std::to_string(p) + (k > 1 ? " (" + std::to_string(k) + ")" : "");
      s += "; first logit differences at position " + where;
      std::vector<int> marks;
      for (auto k : c->neighbours.n_predict)
        if (k < spec.n_predict) marks.push_back(k);
      for (auto k : c->neighbours.join_after)
        if (k > 0) marks.push_back(k);
      if (!marks.empty()) {
        int near = 0;
        for (const auto& [p, k] : at)
          for (int m : marks)
            if (std::abs(p - m) <= 1) {
              near += k;
              break;
            }
        s += "; " + std::to_string(near) + " of " + std::to_string(divergent) + " within one position of where a neighbour " +
             (c->neighbours.join_after.empty() ? "finished" : "finished or joined");
      }
    }
    f.sentences.push_back(s + ".");
  }
}

// The sentences of one set of tallies: the pooled ones of an audit of one configuration, or
// one configuration's own (`who`: " (name)") when an audit has several, which must never be
// pooled (a sweep's -kvu configurations beside the others would average to a figure neither has).
void write_context_sentences(const audit_spec& spec, const std::vector<condition_tally>& tallies, const std::string& who,
                             bool general, bool threshold_too, findings& f) {
  sums serial, context, seeded_conc, observer;
  std::vector<condition_kind> context_kinds;
  std::map<int, condition_tally> greedy_levels;  // per burst width, over the conditions at that width
  for (const auto& t : tallies) {
    if (t.kind == condition_kind::repeat) serial.add(t);
    else if (t.control()) continue;
    else if (t.kind == condition_kind::observer) observer.add(t);  // judged by its ids: never pooled with logits
    else if (t.kind == condition_kind::concurrent && t.seeded) seeded_conc.add(t);
    else if (t.kind == condition_kind::threshold_search || t.kind == condition_kind::neighbours) continue;  // own sentences
    else if (!t.seeded) {
      context.add(t);
      if (t.n > 0) context_kinds.push_back(t.kind);
    }
    // A boundary search's streams ran at many widths: its points are the certificate's, not C=its widest.
    const auto* c = find_condition(spec, t.condition);
    if (t.kind == condition_kind::concurrent && !t.seeded && (!c || c->points.empty())) {
      auto& level = greedy_levels[t.concurrency];
      level.concurrency = t.concurrency;
      level.n += t.n;
      level.logit_identical += t.logit_identical;
      level.flagged += t.flagged;
    }
  }
  const std::string backend = who.size() > 3 ? who.substr(2, who.size() - 3) : std::string();
  double min_flip_margin = INFINITY;
  for (const auto& v : f.verdicts)
    if (v.counted() && v.result->baseline_margin_at_flip && (backend.empty() || v.backend == backend)) {
      const auto* c = find_condition(spec, v.condition);
      if (c && !is_control(c->kind) && !c->seeded) min_flip_margin = std::min(min_flip_margin, *v.result->baseline_margin_at_flip);
    }

  auto& s = f.sentences;
  if (!general) serial.n = context.n = seeded_conc.n = observer.n = 0;
  if (!threshold_too) greedy_levels.clear();
  if (serial.n > 0)
    s.push_back("Serial reproducibility" + who + ": " + pct(serial.logit, serial.n) +
                " of serial repeats were logit-identical to their solo baseline" + identity_qualifier(f) +
                (serial.logit == serial.n ? "; run solo with a fixed prompt, parameters and seed, the numbers repeat exactly."
                                          : "; even solo repeats moved, so nothing else in this table can be pinned on load."));
  if (context.n > 0) {
    s.push_back("Execution context" + who + ": under " + kinds_phrase(context_kinds) + ", " + pct(context.logit, context.n) +
                " of greedy streams were logit-identical" + identity_qualifier(f) + " and " + pct(context.token, context.n) + " token-identical" +
                (context.logit < context.n && context.token > context.logit ? "; same text is not same logprobs." : "."));
    if (context.token == context.n)
      s.push_back("Greedy survival" + who + ": the greedy token stream survived every perturbation (" + pct(context.token, context.n) + ").");
    else
      s.push_back("Greedy survival" + who + ": the greedy token stream did not always survive: " +
                  std::to_string(context.n - context.token) + " of " + std::to_string(context.n) +
                  " streams changed tokens" +
                  (std::isfinite(min_flip_margin) ? ", at baseline top1-top2 margins as small as " + fixed(min_flip_margin, 4) + " nats."
                                                  : "."));
  }
  if (observer.n > 0)
    s.push_back("Observer" + who + ": asked for no logprobs, for 1, for the top-k, for many and (llama.cpp) for the top-k after sampling, " +
                pct(observer.token, observer.n) + " of the requests returned their baseline's token ids" +
                (observer.token == observer.n ? "; asking to see the numbers did not change the answer."
                                              : "; asking to see the numbers changed the answer, so logprobs cannot be audited without "
                                                "perturbing what they describe."));
  if (seeded_conc.n > 0)
    s.push_back("Sampling under load" + who + ": seeded sampling under concurrency was " + pct(seeded_conc.token, seeded_conc.n) +
                " token-identical" +
                (seeded_conc.token < seeded_conc.n ? "; a fixed seed is not sufficient for reproducibility under load."
                                                   : "; the sampled tokens survived here."));
  if (!greedy_levels.empty()) {
    std::string levels, unbatched;
    int threshold = -1;
    for (const auto& [width, level] : greedy_levels) {
      const auto* t = &level;
      if (t->n == 0) {
        if (t->flagged > 0) unbatched += (unbatched.empty() ? "" : ", ") + std::string("C=") + std::to_string(t->concurrency);
        continue;
      }
      levels += (levels.empty() ? "" : ", ") + std::string("C=") + std::to_string(t->concurrency) + " " +
                fixed(100.0 * t->logit_identical / t->n, 0) + "%";
      if (threshold < 0 && t->logit_identical == 0) threshold = t->concurrency;
    }
    if (!levels.empty())
      s.push_back("Concurrency threshold" + who + ": logit identity by burst width: " + levels + "; " +
                  (threshold > 0 ? "from C=" + std::to_string(threshold) + " on, no stream was logit-identical"
                                 : "no level lost logit identity entirely") +
                  (unbatched.empty() ? "." : "; " + unbatched + " did not batch: their streams are counted apart and say nothing about batching."));
  }
}

void write_sentences(const audit_spec& spec, const audit_plan& plan, findings& f) {
  sums controls;
  for (const auto& t : f.pooled)
    if (t.control()) controls.add(t);
  // A sweep's backends are configurations of one server: each gets its own sentences. An audit
  // of a few named backends keeps the seed document's pooled sentences, but its concurrency
  // threshold is said per backend (a burst width's share pooled over servers that differ is
  // neither's).
  if (spec.sweep && f.backends.size() > 1) {
    for (const auto& b : f.backends) write_context_sentences(spec, f.per_backend.at(b), " (" + b + ")", true, true, f);
  } else if (f.backends.size() > 1) {
    write_context_sentences(spec, f.pooled, "", true, false, f);
    for (const auto& b : f.backends) write_context_sentences(spec, f.per_backend.at(b), " (" + b + ")", false, true, f);
  } else {
    write_context_sentences(spec, f.pooled, "", true, true, f);
  }
  auto& s = f.sentences;
  write_evidence_sentences(plan, f);
  if (controls.n > 0)
    s.push_back("Positive controls: " + std::to_string(controls.n - controls.token) + "/" + std::to_string(controls.n) +
                " diverged at the token level and " + std::to_string(controls.n - controls.logit) + "/" +
                std::to_string(controls.n) + " at the logit level" +
                (controls.logit == 0 && controls.token == 0
                     ? "; the comparator detects real differences."
                     : controls.logit < controls.n
                           ? "; one that came out identical although it could have diverged is named, but the others "
                             "show that the comparator sees differences."
                           : "; none diverged, so nothing shows that the comparator sees differences."));
}

using run_index = std::map<std::pair<std::size_t, std::size_t>, const observed_run*>;  // by (group, request)

// A solo baseline's stream and digests, or why there is none.
struct base {
  const logit_stream* stream = nullptr;
  stream_digests digests;
  std::string error;
  std::optional<double> company;  // the server's busy slots per decode while it ran
};

std::vector<base> baselines_of(const audit_plan& plan, const run_index& seen) {
  std::vector<base> bases(plan.baselines.size());
  for (std::size_t i = 0; i < plan.baselines.size(); ++i) {
    auto it = seen.find({plan.baselines[i].group, plan.baselines[i].request});
    if (it == seen.end()) bases[i].error = "baseline was not run";
    else if (!it->second->stream) bases[i].error = "baseline failed: " + it->second->error;
    else {
      bases[i].stream = &*it->second->stream;
      bases[i].digests = digest(*bases[i].stream);
      bases[i].company = it->second->company;
    }
  }
  return bases;
}

// A neighbours burst is shaped on purpose (neighbours that finish early or join late), so the
// whole-burst overlap and the average busy slots say little: it happened when every neighbour
// shared at least one decode step with the target, and same-length neighbours had the
// target's prompt length in tokens, as the server counted them.
void judge_neighbours(const request_group& g, const run_index& seen, const burst_measurement* measured,
                      burst_verdict& v) {
  const std::int64_t slots = measured ? measured->server_slots : -1;
  std::vector<const logit_stream*> members;
  std::size_t target = 0;
  for (std::size_t r = 0; r < g.requests.size(); ++r) {
    auto it = seen.find({g.index, r});
    members.push_back(it != seen.end() && it->second->stream ? &*it->second->stream : nullptr);
    if (g.requests[r].compared) target = r;
  }
  std::vector<std::string> why;
  // The server's own count outranks steps read from token times: when no decode of the burst
  // held two requests, nothing was shared, however close a serial server's tokens came (a
  // server that never batched once passed for one, its requests 5 ms apart).
  if (measured && measured->busy_slots_per_decode && *measured->busy_slots_per_decode <= 1.0 + 1e-9) {
    char busy[64];
    std::snprintf(busy, sizeof busy, "%.2f", *measured->busy_slots_per_decode);
    why.push_back(std::string("the server never decoded two requests at once (busy slots per decode ") + busy + ")");
  }
  // Token times a proxy bunched show no shared step whatever the server did: where the server's
  // own count shows its decodes shared (1.5 or more busy slots), that count decides, as it does
  // for a plain burst (the certificate says so). Else the steps decide, as below: a request the
  // server queued looks bunched too, and its steps say truly that it shared none.
  const auto steps = reconstruct_steps(members, slots);
  if (counters_decide(members[target], measured)) {
    // batched, by the server's count
  } else if (steps.clock == step_clock::none) {
    why.push_back("no decode steps: " + steps.why_not);
  } else {
    std::set<int> target_steps;
    for (const auto& p : steps.members[target]) target_steps.insert(p.step);
    for (std::size_t m = 0; m < members.size(); ++m) {
      if (m == target) continue;
      bool shared = false;
      for (const auto& p : steps.members[m]) shared = shared || target_steps.count(p.step) > 0;
      if (!shared) why.push_back("request " + std::to_string(m) + " shared no decode step with the target");
    }
  }
  if (members[target] && g.requests.size() > 1 && g.requests[target].prompt != g.requests[(target + 1) % g.requests.size()].prompt) {
    // Other prompts: same_length neighbours must really have the target's length.
    bool same_length_kind = true;
    for (std::size_t m = 0; m < members.size(); ++m)
      if (m != target && g.requests[m].prompt.size() != g.requests[target].prompt.size()) same_length_kind = false;
    if (same_length_kind) {
      std::string lengths;
      bool equal = true;
      for (std::size_t m = 0; m < members.size(); ++m) {
        if (m == target) continue;
        const auto n = members[m] ? members[m]->prompt_tokens : -1;
        equal = equal && n == members[target]->prompt_tokens;
        lengths += (lengths.empty() ? "" : ", ") + std::to_string(n);
      }
      if (!equal)
        why.push_back("the neighbours' prompts were " + lengths + " tokens long, the target's " +
                      std::to_string(members[target]->prompt_tokens) + ": not the same length");
    }
  }
  v.reason.clear();
  for (std::size_t i = 0; i < why.size(); ++i) v.reason += (i ? "; " : "") + why[i];
  v.batched = why.empty();
}

// Every burst that ran is judged: did the server batch it?
void judge_bursts(const audit_plan& plan, const run_index& seen, const evaluation_evidence& ev, findings& f) {
  for (const auto& g : plan.groups) {
    if (g.mode != group_mode::burst) continue;
    bool ran = false;
    for (std::size_t r = 0; r < g.requests.size(); ++r)
      if (auto it = seen.find({g.index, r}); it != seen.end() && it->second->stream) ran = true;
    if (!ran) continue;
    if (auto m = ev.bursts.find(g.index); m != ev.bursts.end()) f.bursts[g.index] = judge_burst(m->second, ev.thresholds);
    else f.bursts[g.index] = burst_verdict{false, 0, 0, std::nullopt, concurrency_measure::none, 0,
                                           "no measurement of this burst was stored"};
    const auto m = ev.bursts.find(g.index);
    if (g.kind == condition_kind::neighbours)
      judge_neighbours(g, seen, m != ev.bursts.end() ? &m->second : nullptr, f.bursts[g.index]);
  }

}

// A burst member's steps on its verdict: the batch at its first logit difference, and the base
// rates (over its positions after the first) that attribution tests against.
void attach_steps(const run_steps& s, run_verdict& v) {
  if (s.positions.empty()) return;
  v.has_steps = true;
  for (std::size_t p = 1; p < s.positions.size(); ++p) {
    ++v.step_positions;
    v.width_changes += s.positions[p].width != s.positions[p - 1].width;
    bool finish = false, join = false;
    for (const auto& e : s.positions[p].events) (e.what == step_event::kind::finished ? finish : join) = true;
    v.finish_positions += finish;
    v.join_positions += join;
  }
  if (!v.result->logit_identical) v.at_difference = step_at(s, v.result->first_logit_difference);
}

// A burst's decode steps, from its members' token times: the batch each position was in.
std::optional<decode_reconstruction> burst_steps(const request_group& g, const run_index& seen, const evaluation_evidence& ev) {
  if (g.mode != group_mode::burst) return std::nullopt;
  std::vector<const logit_stream*> members;
  for (std::size_t r = 0; r < g.requests.size(); ++r) {
    auto it = seen.find({g.index, r});
    members.push_back(it != seen.end() && it->second->stream ? &*it->second->stream : nullptr);
  }
  const auto m = ev.bursts.find(g.index);
  return reconstruct_steps(members, m != ev.bursts.end() ? m->second.server_slots : -1);
}

// Whether a control that came out identical could have diverged at all.
std::string control_reason(const audit_plan& plan, const request_group& g, const planned_request& req, const base& b,
                           const evaluation_evidence& ev) {
  control_context cc;
  cc.kind = g.kind;
  cc.baseline = b.stream;
  const auto& bref = plan.baselines[static_cast<std::size_t>(req.baseline)];
  cc.baseline_temperature = bref.params.temperature;
  cc.control_temperature = req.params.temperature;
  if (auto fp = ev.fingerprints.find(g.backend); fp != ev.fingerprints.end()) {
    const auto& h = fp->second.before.prompt_token_hashes;
    auto x = h.find(req.prompt), y = h.find(bref.prompt);
    if (x != h.end() && y != h.end()) cc.same_prompt_tokens = x->second == y->second;
  }
  return control_ineffective(cc).value_or("");
}

// Every flag the evidence raises for a compared stream; the one rule that picks among them is
// audit::choose_flag.
raised_flags flags_of(const audit_plan& plan, const request_group& g, const planned_request& req, const base& b,
                      const observed_run& run, const run_verdict& v, const evaluation_evidence& ev, const findings& f) {
  raised_flags raised;
  if (const auto why = not_solo_reason(b.company, b.stream->server.cache_n, ev.thresholds); !why.empty())
    raised.baseline_not_alone = "its solo baseline was not alone: " + why;
  if (g.mode == group_mode::serial && run.company && *run.company > ev.thresholds.max_solo_busy_slots)
    raised.ran_with_company =
        "the server's busy slots per decode were " + fixed(*run.company, 2) + " while it ran: other requests shared its batch";
  if (is_control(g.kind) && (v.result->logit_identical || v.result->token_identical)) {
    raised.control_ineffective = control_reason(plan, g, req, b, ev);
  } else if (g.mode == group_mode::load) {
    auto m = ev.loads.find(g.index);
    if (m == ev.loads.end())
      raised.level_not_reached = "no figures of its load level are stored, so nothing shows the level happened";
    else if (!m->second.reached)
      raised.level_not_reached = "its load level (" + m->second.label + ") was not reached: " + m->second.not_reached;
  } else if (is_burst_kind(g.kind) && g.mode == group_mode::burst) {
    const auto& bv = f.bursts.at(g.index);
    if (!bv.batched) raised.not_batched = bv.reason;
  } else if (g.kind == condition_kind::cache_reuse) {
    const auto rv = judge_cache_reuse(*run.stream, ev.thresholds);
    if (!rv.reused) raised.not_reused = rv.reason;
  }
  return raised;
}

// One compared request against its baseline, flagged when its condition did not happen.
run_verdict judge_run(const audit_plan& plan, const request_group& g, std::size_t r, const run_index& seen,
                      const std::vector<base>& bases, const std::optional<decode_reconstruction>& steps,
                      const evaluation_evidence& ev, const findings& f) {
  const auto& req = g.requests[r];
  run_verdict v;
  v.group = g.index;
  v.request = r;
  v.backend = g.backend;
  v.condition = g.condition;
  auto it = seen.find({g.index, r});
  const auto& b = bases[static_cast<std::size_t>(req.baseline)];
  if (it == seen.end() || !it->second->stream) {
    v.failed = true;
    v.error = it == seen.end() ? "not run" : it->second->error;
    return v;
  }
  if (!b.stream) {
    v.failed = true;
    v.error = b.error;
    return v;
  }
  const auto& stream = *it->second->stream;
  v.result = compare_streams(*b.stream, b.digests, stream, digest(stream));
  if (steps && steps->clock != step_clock::none) attach_steps(steps_of(*steps, r), v);
  const auto raised = flags_of(plan, g, req, b, *it->second, v, ev, f);
  auto chosen = choose_flag(raised);
  v.flag = chosen.flag;
  v.flag_reason = std::move(chosen.reason);
  if (v.flag == evidence_flag::not_solo) v.company = raised.baseline_not_alone.empty() ? it->second->company : b.company;
  return v;
}

// Every compared stream against its baseline, flagged when its condition did not happen.
void judge_runs(const audit_plan& plan, const run_index& seen, const std::vector<base>& bases,
                const evaluation_evidence& ev, findings& f) {
  for (const auto& g : plan.groups) {
    if (g.is_baseline) continue;
    // A search's trials run only while their width is undecided, certify's boundary search
    // and replays only when asked for: one that did not run was not needed, and is no failure.
    if (g.kind == condition_kind::threshold_search || g.conditional) {
      bool any = false;
      for (std::size_t r = 0; r < g.requests.size() && !any; ++r) any = seen.count({g.index, r}) > 0;
      if (!any) continue;
    }
    const auto steps = burst_steps(g, seen, ev);
    for (std::size_t r = 0; r < g.requests.size(); ++r) {
      if (!g.requests[r].compared) continue;
      auto v = judge_run(plan, g, r, seen, bases, steps, ev, f);
      f.failed_runs += v.failed;
      f.flagged_runs += v.flag != evidence_flag::none;
      f.verdicts.push_back(std::move(v));
    }
  }
}

// Each condition's tally per backend and pooled, with its bursts' batching evidence.
void tally_conditions(const audit_spec& spec, const audit_plan& plan, const evaluation_evidence& ev, findings& f) {
  for (const auto& c : spec.conditions) {
    if (c.kind == condition_kind::throughput) continue;  // timed, never compared: see f.throughput
    if (c.kind == condition_kind::load) continue;  // per level, never pooled across them: see f.load_curves
    condition_tally pooled = empty_tally(c);
    for (const auto& b : spec.backends) {
      condition_tally t = empty_tally(c);
      for (const auto& v : f.verdicts)
        if (v.condition == c.name && v.backend == b.name) count(t, v);
      if (is_burst_kind(c.kind)) t.bursts = summarize_bursts(plan, f, ev, c, b.name);
      if (c.kind == condition_kind::threshold_search)
        for (int w : search_widths(c))
          if (auto x = summarize_bursts(plan, f, ev, c, b.name, w); x.bursts > 0) t.widths.push_back(x);
      f.per_backend[b.name].push_back(t);
    }
    for (const auto& v : f.verdicts)
      if (v.condition == c.name) count(pooled, v);
    if (is_burst_kind(c.kind)) pooled.bursts = summarize_bursts(plan, f, ev, c, "");
    if (c.kind == condition_kind::threshold_search)
      for (int w : search_widths(c))
        if (auto x = summarize_bursts(plan, f, ev, c, "", w); x.bursts > 0) pooled.widths.push_back(x);
    f.pooled.push_back(pooled);
  }

}

bool is_control_condition(const findings& f, const std::string& condition) {
  for (const auto& t : f.pooled)
    if (t.condition == condition) return t.control();
  return false;
}

// The seed's falsifier, kept for what it means: the comparator is vacuous when nothing that
// must diverge did. A control that diverged, or a passing selftest of every audited backend's
// path, shows that it sees differences; a control that could not diverge (ineffective) or
// came out identical beside others that diverged is named, and does not void the findings.
void judge_controls(const evaluation_evidence& ev, findings& f) {
  int diverged = 0, judged = 0, ineffective = 0;
  std::vector<std::string> identical;
  for (const auto& t : f.pooled) {
    if (!t.control()) continue;
    judged += t.n;
    diverged += t.n - std::max(t.logit_identical, t.token_identical);
    if (t.logit_identical > 0 || t.token_identical > 0)
      identical.push_back(t.condition + " (" + std::to_string(std::max(t.logit_identical, t.token_identical)) + "/" +
                          std::to_string(t.n) + " identical)");
  }
  for (const auto& v : f.verdicts) {
    ineffective += v.flag == evidence_flag::control_ineffective;
    // A control that had company and still diverged shows the comparator sees differences,
    // though it counts apart: whatever moved it, the comparator saw it move.
    if (v.flag == evidence_flag::not_solo && v.result && !v.result->logit_identical && is_control_condition(f, v.condition))
      ++diverged;
  }
  bool selftested = !f.backends.empty();
  for (const auto& b : f.backends)
    if (auto s = ev.selftests.find(b); s == ev.selftests.end() || !s->second.passed) selftested = false;
  if (diverged > 0 || selftested) return;
  f.valid = false;
  if (!identical.empty()) {
    f.invalid_reason = "invalid: comparator vacuous: no positive control diverged: ";
    for (std::size_t i = 0; i < identical.size(); ++i) f.invalid_reason += (i ? ", " : "") + identical[i];
  } else if (ineffective > 0) {
    f.invalid_reason = "invalid: no positive control could diverge (" + plural(ineffective, "control") +
                       " ineffective) and no passing selftest shows that the comparator sees differences";
  } else if (judged == 0) {
    f.invalid_reason = "invalid: no positive control was judged, so identity cannot be told from a broken comparator";
  }
}

// Both ends taken (a fingerprint that failed is not a change): a server that changed during
// the audit, by a declared field or by its canary's numbers, voids the findings. A backend
// with measured streams and a fingerprint missing could have changed unseen: that voids them
// too, and says which fingerprint is missing.
void judge_server_changes(const audit_plan& plan, const std::vector<observed_run>& runs,
                          const evaluation_evidence& ev, findings& f) {
  for (const auto& [name, fp] : ev.fingerprints) {
    // A canary that could not be read alone is no evidence either way (the harness names it), not a change.
    const bool undecided = fp.after.observed.count("canary_undecided") > 0;
    if (!fp.before.api.empty() && !fp.after.api.empty())
      for (const auto& field : fingerprint_differences(fp.before, fp.after))
        if (field != "canary" || !undecided) f.fingerprint_changes.push_back(name + ": " + field);
  }
  std::set<std::string> measured;
  for (const auto& r : runs)
    if (r.stream && r.group < plan.groups.size()) measured.insert(plan.groups[r.group].backend);
  for (const auto& name : f.backends) {
    if (!measured.count(name)) continue;
    auto it = ev.fingerprints.find(name);
    const bool before = it != ev.fingerprints.end() && !it->second.before.api.empty();
    const bool after = it != ev.fingerprints.end() && !it->second.after.api.empty();
    if (!before) f.missing_fingerprints.push_back("the before fingerprint of " + name);
    if (!after) f.missing_fingerprints.push_back("the after fingerprint of " + name);
  }
  if (!f.fingerprint_changes.empty() && f.valid) {
    f.valid = false;
    f.invalid_reason = "invalid: server changed during the audit: ";
    for (std::size_t i = 0; i < f.fingerprint_changes.size(); ++i)
      f.invalid_reason += (i ? ", " : "") + f.fingerprint_changes[i];
  }
  for (const auto& [name, fp] : ev.fingerprints) {
    const auto& m = fp.before.machine.empty() ? fp.after.machine : fp.before.machine;
    if (!m.empty()) f.machines[name] = m;
  }
  if (!f.missing_fingerprints.empty() && f.valid) {
    f.valid = false;
    f.invalid_reason = "invalid: could not check that the server stayed the same: ";
    for (std::size_t i = 0; i < f.missing_fingerprints.size(); ++i)
      f.invalid_reason += (i ? ", " : "") + f.missing_fingerprints[i];
    f.invalid_reason += f.missing_fingerprints.size() == 1 ? " is not stored" : " are not stored";
  }
}

// The sentences every audit ends with: a server that changed or was not checked, and the
// failures kept out of every tally.
void write_closing_sentences(findings& f) {
  if (!f.fingerprint_changes.empty())
    f.sentences.push_back("Server changed during the audit: " + std::to_string(f.fingerprint_changes.size()) +
                          " fingerprint field(s) differ between start and end (the canary's digests among them when the "
                          "numbers moved); the findings are not trusted.");
  if (!f.missing_fingerprints.empty())
    f.sentences.push_back("Server not checked: " + std::to_string(f.missing_fingerprints.size()) +
                          " fingerprint(s) are not stored, so nothing shows that the server stayed the same "
                          "during the audit; the findings are not trusted.");
  if (f.failed_runs > 0)
    f.sentences.push_back("Failures: " + std::to_string(f.failed_runs) +
                          " compared request(s) failed and are kept out of every tally above.");
}

}  // namespace

findings evaluate(const audit_spec& spec, const audit_plan& plan, const std::vector<observed_run>& runs,
                  const evaluation_evidence& ev) {
  findings f;
  f.thresholds = ev.thresholds;
  for (const auto& b : spec.backends) f.backends.push_back(b.name);
  run_index seen;
  for (const auto& r : runs) seen[{r.group, r.request}] = &r;
  const auto bases = baselines_of(plan, seen);
  // The judgement: every stream, its tallies, the controls and the servers.
  judge_bursts(plan, seen, ev, f);
  judge_runs(plan, seen, bases, ev, f);
  tally_conditions(spec, plan, ev, f);
  judge_controls(ev, f);
  judge_server_changes(plan, runs, ev, f);
  // The analyses, in the list's order; then the sentences.
  const analysis_input in{spec, plan, runs, ev};
  for (const auto* a : analyses()) a->evaluate(in, f);
  write_sentences(spec, plan, f);
  write_neighbour_sentences(spec, f);
  for (const auto* a : analyses()) a->conclude(in, f);
  write_closing_sentences(f);
  return f;
}

}  // namespace logitaudit::audit
