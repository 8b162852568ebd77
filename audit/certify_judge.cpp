// Certify's judge: the certificate read back from a certify job's judged findings. Per family,
// the streams compared and moved, the batch widths the client produced and the server
// reported, a 95% bound, and where the family began to move; then the outcome and its
// sentence. The plan is certify_plan.cpp.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "certify.hpp"
#include "decode_steps.hpp"
#include "enum_names.hpp"
#include "findings.hpp"
#include "fingerprint.hpp"
#include "load.hpp"
#include "numbers.hpp"
#include "statistics.hpp"

namespace logitaudit::audit {

std::string_view to_string(certificate_outcome o) { return enumerator_name(o); }
std::optional<certificate_outcome> parse_certificate_outcome(std::string_view s) {
  return parse_by_name(kEnumerators<certificate_outcome>, s);
}
std::string_view to_string(family_status s) { return enumerator_name(s); }
std::optional<family_status> parse_family_status(std::string_view s) { return parse_by_name(kEnumerators<family_status>, s); }

bool family_moved(std::string_view family, identity_level level, bool logit_identical, bool token_identical) {
  return level == identity_level::logit && family != "observer" ? !logit_identical : !token_identical;
}

double upper_bound95(int k, int n) { return n > 0 ? clopper_pearson_upper(k, n, 0.95) : -1; }

namespace {

// One group's judged streams: where it ran, whether one moved, whether its condition happened.
struct trial {
  std::string family, condition;
  int point = -1;  // a boundary search's planned point
  int at = 0;      // where the judge places it: requests at once, or tokens the cache served
  bool moved = false, counted = false, replay = false;
  std::size_t requests = 0;
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

// What the judge reads of a certify job, indexed once.
struct certify_inputs {
  const audit_spec& spec;
  const audit_plan& plan;
  const findings& f;
  const certify_claim& claim;
  const std::map<std::size_t, burst_measurement>& bursts;
  const evidence_thresholds& t;
  std::map<std::string, const condition*> by_name;
  std::map<std::string, int> conditions_of;  // family -> planned conditions
  std::map<std::pair<std::size_t, std::size_t>, const observed_run*> run_at;
  std::map<std::pair<std::string, std::size_t>, const load_level_finding*> level_of;  // by condition and group
  std::map<std::string, std::string> settings;  // the server's own (certificate::settings)
};

// What the judge gathers from the streams, family by family.
struct family_streams {
  std::map<std::string, family_result> results;
  std::map<std::string, std::map<int, boundary_point>> points;  // family -> width or prefix -> point
  std::map<std::string, int> moved_counted;                     // family -> moved streams among the compared ones
  std::map<std::size_t, trial> trials;                           // by group, in plan order
  std::vector<counterexample> counterexamples;
  std::map<std::string, std::map<std::string, int>> not_counted;  // family -> why a stream's condition did not happen -> streams
  std::map<std::string, std::set<std::size_t>> bunched;           // family -> bursts whose token times a proxy bunched
};

// One judged stream's schedule as the client made it and the server reported it.
struct stream_schedule {
  bool happened = false;  // its condition happened, as the claim defines it
  double server = -1;     // busy slots per decode (or a load level's mean width); -1: not reported
  int client = 1;         // requests in flight
  int reused = -1;        // prompt tokens the server served from its cache
  const burst_verdict* burst = nullptr;
  std::string why_not;    // when it did not happen: why, in the judgement's own words
};

stream_schedule schedule_of(const certify_inputs& in, const condition& c, const request_group& g, const run_verdict& v) {
  stream_schedule s;
  s.happened = v.flag == evidence_flag::none;
  s.why_not = v.flag_reason;
  if (v.flag == evidence_flag::not_batched && !in.claim.needs_batching) {
    // The claim's own rule: its requests were in flight together, decoded apart or not: at
    // some moment the server held them all. One slot takes four requests one after another, so
    // they are all in flight only until the first is answered (a quarter of the burst): any
    // such moment counts, as it does for a neighbours burst shaped to overlap in part.
    if (auto m = in.bursts.find(v.group); m != in.bursts.end()) {
      s.happened = m->second.overlap > 0;
      s.why_not = "its requests were never all in flight together (the claim's rule)";
    }
  }
  if (v.flag == evidence_flag::not_reused && !c.cache_prompt) s.happened = true;  // the claim sends no cache
  if (auto b = in.f.bursts.find(v.group); b != in.f.bursts.end()) s.burst = &b->second;
  if (s.burst && s.burst->measured) s.server = *s.burst->measured;
  s.client = g.mode == group_mode::burst ? static_cast<int>(g.requests.size()) : 1;
  if (g.mode == group_mode::load)
    if (auto l = in.level_of.find({c.name, v.group}); l != in.level_of.end()) {
      const auto& m = l->second->measurement;
      s.server = m.server_busy_slots_per_decode >= 0 ? m.server_busy_slots_per_decode : l->second->mean_width;
      // Random schedules test batching only where the probes shared a batch.
      if (in.claim.needs_batching && l->second->mean_width <= 1.05 && s.server <= 1.05) {
        s.happened = false;
        s.why_not = "its probes shared no batch (mean width " + fixed(l->second->mean_width, 2) + ")";
      }
      s.client = std::max(1, m.max_in_flight);  // the generator's requests in flight, probes among them
    }
  if (c.kind == condition_kind::cache_reuse)
    if (auto r = in.run_at.find({v.group, v.request}); r != in.run_at.end() && r->second->stream)
      s.reused = static_cast<int>(r->second->stream->server.cache_n);
  return s;
}

counterexample counterexample_of(const condition& c, const request_group& g, const run_verdict& v, const stream_schedule& s) {
  counterexample x;
  x.family = c.family;
  x.condition = c.name;
  x.group = v.group;
  x.request = v.request;
  x.requests = g.mode == group_mode::load ? s.client : static_cast<int>(g.requests.size());
  x.client_width = s.client;
  x.server_width = s.server;
  x.batched = s.burst && s.burst->batched;
  x.shared_prefix = c.shared_prefix;
  x.reused_tokens = s.reused;
  x.seeded = c.seeded;
  x.first_difference = v.result->first_logit_difference;
  x.first_token_difference = v.result->token_identical ? -1 : v.result->first_token_difference;
  x.max_abs_delta = v.result->max_abs_delta;
  if (v.at_difference) {
    x.step_width = v.at_difference->width;
    x.step_width_before = v.at_difference->width_before;
    x.step_events = describe_events(v.at_difference->events);
  }
  return x;
}

// Counts one judged stream into its family: compared or counted apart, moved or held, the
// widths it ran at, and a counterexample when it moved.
void judge_stream(const certify_inputs& in, const run_verdict& v, family_streams& out) {
  auto it = in.by_name.find(v.condition);
  if (it == in.by_name.end() || it->second->family.empty() || v.group >= in.plan.groups.size()) return;
  const condition& c = *it->second;
  const request_group& g = in.plan.groups[v.group];
  auto& fr = out.results[c.family];
  if (v.failed) {
    ++fr.failed;
    return;
  }
  if (!v.result) return;
  const bool moved = family_moved(c.family, in.claim.level, v.result->logit_identical, v.result->token_identical);
  const auto s = schedule_of(in, c, g, v);
  if (g.mode != group_mode::serial) {
    fr.client_width_max = std::max(fr.client_width_max, s.client);
    if (s.server >= 0) {
      fr.server_width_min = fr.server_width_min < 0 ? s.server : std::min(fr.server_width_min, s.server);
      fr.server_width_max = std::max(fr.server_width_max, s.server);
    }
  }
  if (s.reused >= 0) fr.reused_tokens_max = std::max(fr.reused_tokens_max, s.reused);
  // A prefix is where the server's cache served from: what it says it served when it sent the
  // cache, else what the probe shares with its warm-up.
  const bool cached = c.kind == condition_kind::cache_reuse;
  const int shared = g.point >= 0 && cached ? g.point : c.shared_prefix;  // a search's probe shares its point
  const int at = !cached ? s.client : c.cache_prompt && s.reused >= 0 ? s.reused : shared;
  if (cached && c.cache_prompt && s.reused > shared) ++fr.served_beyond;
  auto& pt = out.points[c.family][at];
  pt.at = at;
  auto& t = out.trials[g.index];
  t = {c.family, c.name, g.point, at, t.moved || moved, t.counted || s.happened, g.replay, g.requests.size()};
  if (s.happened) {
    ++fr.compared;
    ++pt.compared;
    out.moved_counted[c.family] += moved;
  } else {
    ++fr.flagged;
    ++out.not_counted[c.family][s.why_not.empty() ? "its condition did not happen" : s.why_not];
  }
  if (g.kind == condition_kind::neighbours)
    if (auto r = in.run_at.find({v.group, v.request}); r != in.run_at.end() && r->second->stream) {
      const auto m = in.bursts.find(v.group);
      if (counters_decide(&*r->second->stream, m == in.bursts.end() ? nullptr : &m->second)) out.bunched[c.family].insert(v.group);
    }
  if (!moved) return;
  ++fr.divergent;
  ++pt.moved;
  if (g.replay) return;  // a replay's stream counts, but its schedule is listed once
  auto x = counterexample_of(c, g, v, s);
  x.point = g.point;
  if (cached) x.shared_prefix = shared;
  out.counterexamples.push_back(std::move(x));
}

// Each group's trial at its point; each schedule that moved (a condition, or a search's point)
// with its trials after the first that moved; the requests the boundary search sent.
void tally_trials(family_streams& s, certificate& cert) {
  std::map<std::pair<std::string, int>, schedule_replay> by_key;
  std::vector<std::pair<std::string, int>> order;
  for (const auto& [group, t] : s.trials) {
    auto& p = s.points[t.family][t.at];
    ++p.trials;
    p.moved_trials += t.moved;
    if (t.point >= 0 && t.family != "chunked_prefill") cert.search_requests += static_cast<int>(t.requests);
    const std::pair key{t.condition, t.point};
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      if (t.moved) {
        by_key[key] = {t.family, t.condition, t.point, 0, 0};
        order.push_back(key);
      }
      continue;
    }
    ++it->second.replayed;
    it->second.reproduced += t.moved;
  }
  for (const auto& k : order) cert.schedules.push_back(by_key[k]);
  auto rate = [](const schedule_replay& r) { return r.replayed > 0 ? static_cast<double>(r.reproduced) / r.replayed : 0.0; };
  std::stable_sort(cert.schedules.begin(), cert.schedules.end(), [&](const auto& a, const auto& b) {
    return std::tuple(!a.confirmed(), -rate(a), -a.replayed) < std::tuple(!b.confirmed(), -rate(b), -b.replayed);
  });
  for (auto& x : s.counterexamples)
    if (auto it = by_key.find({x.condition, x.point}); it != by_key.end() && it->second.replayed > 0) {
      x.replayed = it->second.replayed;
      x.reproduced = it->second.reproduced;
    }
}

// A refuted family's boundary (co-residency and prefix reuse): the smallest point that moved,
// the largest below it that held, whether the two are neighbours each tried `repeats` times
// (exact), else why the search stopped short; and every point that moved or held, as it was
// (a boundary need not be monotone).
void find_boundary(family_result& fr, const std::map<int, boundary_point>& pts, const certify_inputs& in, int search_requests) {
  for (const auto& [at, p] : pts)
    if (p.moved > 0) {
      fr.boundary = at;
      break;
    }
  for (const auto& [at, p] : pts)
    if (at < fr.boundary && p.compared > 0 && p.moved == 0) fr.held_below = at;
  if (fr.family != "co_residency" && fr.family != "prefix_reuse") return;
  const std::string unit = fr.family == "co_residency" ? "requests at once" : "prompt tokens served from the cache";
  std::string moved_at, held_at;
  for (const auto& [at, p] : pts) {
    if (p.moved == 0 && p.compared == 0) continue;  // nothing counted there: neither moved nor held
    auto& list = p.moved > 0 ? moved_at : held_at;
    list += list.empty() ? std::to_string(at) : ", " + std::to_string(at);
  }
  const int floor = fr.family == "co_residency" ? 1 : 0;
  fr.exact = fr.boundary == floor + 1 || (fr.held_below >= 0 && fr.held_below + 1 == fr.boundary);
  const auto& cs = *in.spec.certify;
  const bool searched = std::any_of(in.spec.conditions.begin(), in.spec.conditions.end(),
                                    [&](const condition& c) { return c.family == fr.family && !c.points.empty(); });
  auto tried = [&](int at) {
    auto it = pts.find(at);
    const auto& p = it == pts.end() ? boundary_point{} : it->second;
    return std::to_string(p.moved_trials) + " of " + std::to_string(p.trials);
  };
  std::string how;
  if (fr.exact) {
    how = "exact: " + std::to_string(fr.boundary) + " moved in " + tried(fr.boundary) + " trials" +
          (fr.held_below >= 0 ? ", " + std::to_string(fr.held_below) + " moved in " + tried(fr.held_below) : "");
    const int repeats = std::max(1, cs.repeats);
    const bool budget_out = search_requests + (fr.family == "co_residency" ? fr.boundary : 3) > cs.search_requests;
    for (int at : {fr.held_below, fr.boundary})
      if (at > floor && pts.count(at) && pts.at(at).trials < repeats) {
        how += "; " + std::to_string(at) + " was tried fewer than " + std::to_string(repeats) + " times: " +
               (budget_out ? std::string("the search's budget ran out")
                           : fr.family == "prefix_reuse" ? std::string("a probe the cache served beyond its shared prefix "
                                                                       "counts where the cache served it")
                                                         : std::string("no trial of it was left in the plan"));
        break;
      }
  } else if (!searched) {
    how = "the boundary lies between; no boundary search was planned";
  } else if (const int next = fr.family == "co_residency" ? (std::max(fr.held_below, floor) + fr.boundary) / 2 : 3;
             search_requests + next > cs.search_requests) {
    how = "the boundary lies between: the search's budget (" + std::to_string(cs.search_requests) + " requests) stopped it";
  } else {
    how = "the boundary lies between: the search found no untried point there (a point it tried was not counted, or "
          "moved out of order)";
  }
  fr.search = how;
  fr.note = "moved at " + moved_at + (held_at.empty() ? "" : "; held at " + held_at) + ". ";
  fr.note += "Moves from " + std::to_string(fr.boundary) + " " + unit +
             (fr.held_below >= 0 ? "; held at " + std::to_string(fr.held_below) : "; nothing smaller held") + " (" + how + ")";
}

// Why a family that moved nothing has no verdict: not planned, or planned but not tested.
void explain_untested(family_result& fr, const certify_inputs& in, const std::map<std::string, int>& reasons) {
  const auto& cs = *in.spec.certify;
  if (!in.conditions_of.count(fr.family)) {
    fr.status = family_status::not_planned;
    for (const auto& l : cs.left_out)
      if (l.starts_with(fr.family + ":")) fr.note = l.substr(fr.family.size() + 2);
    if (fr.note.empty()) fr.note = "left out: the budget (" + std::to_string(cs.budget_requests) + " requests) ran out";
    return;
  }
  fr.status = family_status::not_tested;
  if (fr.failed == 0 && fr.flagged == 0) {
    fr.note = "none of its schedules ran (the budget's minutes ran out before them)";
    return;
  }
  if (fr.failed > 0 && fr.flagged == 0) {
    fr.note = "every request failed";
    return;
  }
  // The judgement's own reason, the commonest among its streams: the note never concludes
  // other than the evidence that decided.
  std::pair<std::string, int> top{"its condition did not happen", 0};
  for (const auto& [why, n] : reasons)
    if (n > top.second) top = {why, n};
  fr.note = "not counted: " + top.first + " (" + std::to_string(top.second) + " of " + std::to_string(fr.flagged) +
            " streams)";
  if (fr.server_width_max >= 0 || fr.client_width_max > 0)
    fr.note += "; the server's busy slots per decode " +
               (fr.server_width_max >= 0 ? "reached at most " + fixed(fr.server_width_max, 2) : std::string("were not reported")) +
               " with up to " + std::to_string(fr.client_width_max) + " requests in flight";
}

void add_note(family_result& fr, const std::string& more) { fr.note += std::string(fr.note.empty() ? "" : "; ") + more; }

// Conditions the budget left out of a family: said, not hidden.
int left_out_of(const family_result& fr, const certify_inputs& in) {
  int left = 0;
  for (const auto& l : in.spec.certify->left_out)
    if (!in.by_name.count(l) && l.find(':') == std::string::npos) {
      const bool mine = (fr.family == "co_residency" && l.starts_with("co_residency_")) ||
                        (fr.family == "prefix_reuse" && l.starts_with("prefix_")) ||
                        (fr.family == "neighbours" && l.starts_with("neighbours_")) ||
                        (fr.family == "chunked_prefill" && l.starts_with("chunked_prefill_")) ||
                        (fr.family == "seeded" && l.starts_with("seeded_"));
      left += mine;
    }
  return left;
}

// A refuted family names the server setting it isolates, as the server was run: prefix reuse
// the prompt cache, co-residency a unified KV cache when it was on.
void isolate_setting(family_result& fr, const std::map<std::string, std::string>& settings) {
  auto at = [&](const char* k) {
    auto it = settings.find(k);
    return it == settings.end() ? std::string() : it->second;
  };
  if (fr.family == "prefix_reuse") {
    add_note(fr, "the setting it isolates: the prompt cache (the server's cache_prompt: " +
                     (at("server_cache_prompt").empty() ? std::string("not read") : at("server_cache_prompt")) +
                     "; its cache in RAM, --cache-ram: " +
                     (at("server_cache_ram").empty() ? std::string("not read") : at("server_cache_ram")) + ")");
  } else if (fr.family == "co_residency" && server_setting_value(at("server_kv_unified")) == "on") {
    add_note(fr, "the server ran with a unified KV cache (" + at("server_kv_unified") +
                     "): co-resident requests share one KV buffer; --no-kv-unified gives each slot its own");
  }
}

family_result judge_family(std::string_view name, const certify_inputs& in, family_streams& s, int not_run, int search_requests) {
  family_result fr = s.results.count(std::string(name)) ? s.results[std::string(name)] : family_result{};
  fr.family = std::string(name);
  if (fr.family == "co_residency" || fr.family == "prefix_reuse")
    for (const auto& [at, p] : s.points[fr.family])
      if (p.trials > 0) fr.points.push_back(p);
  if (fr.divergent > 0) {
    fr.status = family_status::refuted;
    find_boundary(fr, s.points[fr.family], in, search_requests);
  } else if (fr.compared > 0) {
    fr.status = family_status::passed;
  } else {
    explain_untested(fr, in, s.not_counted[fr.family]);
  }
  if (fr.status == family_status::refuted) isolate_setting(fr, in.settings);
  if (const auto& b = s.bunched[fr.family]; !b.empty())
    add_note(fr, std::to_string(b.size()) + " burst(s) reached the client with their token times bunched (a proxy that "
                                             "buffers the answers): their batching was judged by the server's busy slots "
                                             "per decode");
  if (fr.compared > 0) fr.bound95 = upper_bound95(s.moved_counted[fr.family], fr.compared);
  fr.not_run = not_run;
  const bool planned = fr.status != family_status::not_planned;
  if (fr.not_run > 0 && planned)
    add_note(fr, std::to_string(fr.not_run) + " of its schedules did not run (the budget's minutes ran out)");
  if (fr.served_beyond > 0)
    add_note(fr, std::to_string(fr.served_beyond) +
                     " probe(s) were served more than their shared prefix: the server's prompt cache held them from an "
                     "earlier request (llama-server's --cache-ram)");
  if (const int left = left_out_of(fr, in); left > 0 && planned)
    add_note(fr, std::to_string(left) + " of its schedules left out by the budget");
  return fr;
}

// Chunked prefill's first bursts, when none of them counted: how long the target must decode to
// outlive the long prompt's arrival and prefill. Per burst, the time from the long prompt's
// write to its first token, twice over, in the target's own time per token (the server's
// timings, else its token times), plus the tokens it had before the write and 8 decode steps to
// share. The largest over the bursts; -1 when the bursts counted, or measured nothing.
struct chunk_sizing {
  bool needed = false;
  int target = -1;
  double decode_ms = -1, arrival_ms = -1;
};

chunk_sizing size_chunked(const certify_inputs& in, const family_streams& s) {
  chunk_sizing out;
  bool measured_any = false, any_measure = false;  // a first burst ran; one of them gave a measure
  for (const auto& [group, t] : s.trials)
    if (t.family == "chunked_prefill" && t.point < 0 && t.counted) return out;
  for (const auto& g : in.plan.groups) {
    auto c = in.by_name.find(g.condition);
    if (c == in.by_name.end() || c->second->family != "chunked_prefill" || g.point >= 0 || g.mode != group_mode::burst) continue;
    const observed_run* target = nullptr;
    for (std::size_t i = 0; i < g.requests.size(); ++i) {
      auto r = in.run_at.find({g.index, i});
      if (r == in.run_at.end() || !r->second->stream) continue;
      if (g.requests[i].compared) target = r->second;
    }
    if (!target) continue;
    measured_any = true;
    const auto& ts = *target->stream;
    double d = ts.server.predicted_n > 0 && ts.server.predicted_ms > 0 ? ts.server.predicted_ms / static_cast<double>(ts.server.predicted_n) : -1;
    if (d <= 0 && ts.client.token_ns.size() > 1)
      d = static_cast<double>(ts.client.token_ns.back() - ts.client.token_ns.front()) / 1e6 /
          static_cast<double>(ts.client.token_ns.size() - 1);
    for (std::size_t i = 0; i < g.requests.size(); ++i) {
      auto r = in.run_at.find({g.index, i});
      if (g.requests[i].compared || r == in.run_at.end() || !r->second->stream) continue;
      const auto& n = r->second->stream->client;
      const std::int64_t first = !n.token_ns.empty() ? n.token_ns.front() : n.first_byte_ns;
      if (d <= 0 || n.write_ns <= 0 || first <= n.write_ns) continue;
      any_measure = true;
      const double arrival = static_cast<double>(first - n.write_ns) / 1e6;
      const int want = g.requests[i].join_after_tokens + static_cast<int>(std::ceil(2 * arrival / d)) + 8;
      // A target that already decoded that long was not too short: its burst failed otherwise.
      if (want <= static_cast<int>(ts.tokens.size())) continue;
      if (want > out.target) out = {true, want, d, arrival};
    }
  }
  // Bursts that ran but gave no measure: the longest planned target, said as such.
  if (measured_any && out.target < 0 && !any_measure) out.needed = true;
  return out;
}

const condition* sized_condition(const certify_inputs& in) {
  for (const auto& [name, c] : in.by_name)
    if (c->family == "chunked_prefill" && !c->points.empty()) return c;
  return nullptr;
}

// The sized bursts in the family's note: what was measured, and the length it called for.
void note_sizing(family_result& fr, const chunk_sizing& z, const certify_inputs& in, const family_streams& s) {
  const auto* sized = sized_condition(in);
  if (!sized) {
    add_note(fr, "its first bursts did not count, and no longer target was planned (a slot's context of " +
                     std::to_string(in.spec.certify->n_ctx) + " tokens leaves no room past the spec's length)");
    return;
  }
  fr.sized_target = std::max(z.target, 0);
  int sized_ran = 0, sized_counted = 0, at = -1;
  for (const auto& [group, t] : s.trials)
    if (t.family == "chunked_prefill" && t.point >= 0) {
      ++sized_ran;
      sized_counted += t.counted;
      at = t.point;
    }
  std::string why = "its first bursts (the target " + std::to_string(in.spec.n_predict) + " tokens) did not count";
  if (z.target < 0) {
    add_note(fr, why + "; its decode speed could not be measured, so the sized bursts take the longest target planned");
    return;
  }
  why += ": the long prompt's first token came " + fixed(z.arrival_ms, 1) + " ms after its write, at " + fixed(z.decode_ms, 2) +
         " ms a token for the target, so the target needs " + std::to_string(z.target) + " tokens";
  if (sized->points.back() < z.target)
    why += " (more than the longest planned, " + std::to_string(sized->points.back()) + ")";
  if (sized_ran == 0) why += "; no sized burst ran (the budget's minutes)";
  else
    why += "; sized bursts at " + std::to_string(at) + " tokens: " + std::to_string(sized_counted) + " of " +
           std::to_string(sized_ran) + " counted";
  add_note(fr, why);
}

// "4 schedules confirmed by replay (5/5, 5/5, 4/5, 2/5); 1 not reproduced (0/5); 12 seen once".
std::string replay_summary(const certificate& cert) {
  std::string confirmed, failed;
  int n_confirmed = 0, n_failed = 0, once = 0;
  for (const auto& r : cert.schedules) {
    const std::string rate = std::to_string(r.reproduced) + "/" + std::to_string(r.replayed);
    if (r.confirmed()) confirmed += (n_confirmed++ ? ", " : "") + rate;
    else if (r.replayed > 0) failed += (n_failed++ ? ", " : "") + rate;
    else ++once;
  }
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  if (n_confirmed > 0)
    add(std::to_string(n_confirmed) + " schedule" + (n_confirmed == 1 ? "" : "s") + " confirmed by replay (" + confirmed + ")");
  if (n_failed > 0) add(std::to_string(n_failed) + " not reproduced when sent again (" + failed + ")");
  if (once > 0) add(std::to_string(once) + " seen once, not sent again");
  return out.empty() ? "no schedule of its own moved" : out;
}

void decide(certificate& cert, const findings& f);

// The outcome and its sentence, from the families and the findings' validity; then the
// server's own settings, as they were read.
void conclude(certificate& cert, const findings& f) {
  decide(cert, f);
  const auto brief = server_settings_brief(cert.settings);
  cert.sentence += brief.empty() ? " The server's own settings were not read (its process is not visible from this host: "
                                   "only its API's account, the shape above)."
                                 : " The server ran with " + brief + ".";
}

// The outcome and the sentence that says it.
void decide(certificate& cert, const findings& f) {
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
                    (!f.valid                          ? f.invalid_reason
                     : !f.fingerprint_changes.empty() ? std::string("the server changed during the run")
                                                      : std::string("a fingerprint is missing")) +
                    ".";
  } else if (cert.counterexamples_total > 0) {
    cert.outcome = certificate_outcome::refuted;
    cert.sentence = "Refuted: " + who + ": " + replay_summary(cert) + "; " + std::to_string(cert.counterexamples_total) +
                    " stream(s) moved in " + std::to_string(refuted) + " famil" + (refuted == 1 ? "y" : "ies") + " (" +
                    refuted_names + ")" +
                    (cert.counterexamples.empty() ? "" : "; the first counterexample is " + describe(cert.counterexamples.front())) +
                    ".";
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
}

certify_inputs index_inputs(const audit_spec& spec, const audit_plan& plan, const std::vector<observed_run>& runs,
                            const findings& f, const certify_claim& claim,
                            const std::map<std::size_t, burst_measurement>& bursts, const evidence_thresholds& t) {
  certify_inputs in{spec, plan, f, claim, bursts, t, {}, {}, {}, {}};
  for (const auto& c : spec.conditions) {
    in.by_name[c.name] = &c;
    if (!c.family.empty()) ++in.conditions_of[c.family];
  }
  for (const auto& r : runs) in.run_at[{r.group, r.request}] = &r;
  for (const auto& lc : section<load_section>(f).curves)
    for (const auto& l : lc.levels) in.level_of[{lc.condition, l.group}] = &l;
  return in;
}

}  // namespace

std::optional<certificate> certify(const audit_spec& spec, const audit_plan& plan, const std::vector<observed_run>& runs,
                                   const findings& f, const std::map<std::size_t, burst_measurement>& bursts,
                                   const evidence_thresholds& t) {
  if (!spec.certify) return std::nullopt;
  const certify_claim* claim = find_claim(spec.certify->claim);
  if (!claim) claim = &certify_claims()[0];
  auto in = index_inputs(spec, plan, runs, f, *claim, bursts, t);
  family_streams streams;
  for (const auto& v : f.verdicts) judge_stream(in, v, streams);
  // Planned groups of a family that left nothing (the budget's minutes skipped them).
  std::set<std::size_t> ran;
  for (const auto& r : runs) ran.insert(r.group);
  std::map<std::string, int> not_run;
  for (const auto& g : plan.groups)
    if (auto it = in.by_name.find(g.condition);
        !g.is_baseline && !g.conditional && it != in.by_name.end() && !it->second->family.empty() && !ran.count(g.index))
      ++not_run[it->second->family];

  certificate cert;
  cert.claim = std::string(claim->name);
  cert.level = claim->level;
  cert.backend = spec.backends.empty() ? "" : spec.backends.front().name;
  cert.shape = shape_of(*spec.certify);
  cert.shape_source = spec.certify->shape_source;
  if (auto m = f.machines.find(cert.backend); m != f.machines.end())
    for (const auto& [k, v] : m->second)
      if (k.starts_with("server_") && k != "server_executable" && k != "server_executable_sha256" && k != "server_process")
        cert.settings[k] = v;
  tally_trials(streams, cert);
  in.settings = cert.settings;
  const auto sizing = size_chunked(in, streams);
  for (std::string_view name : kCertifyFamilies)
    if (name != "seeded" || claim->seeded) {
      cert.families.push_back(judge_family(name, in, streams, not_run[std::string(name)], cert.search_requests));
      if (name == "chunked_prefill" && sizing.needed) note_sizing(cert.families.back(), sizing, in, streams);
    }
  cert.counterexamples = std::move(streams.counterexamples);
  // The confirmed first, the highest rate first; then the smallest schedule.
  auto rate = [](const counterexample& x) { return x.replayed > 0 ? static_cast<double>(x.reproduced) / x.replayed : -1.0; };
  std::stable_sort(cert.counterexamples.begin(), cert.counterexamples.end(), [&](const auto& a, const auto& b) {
    return std::tuple(a.reproduced == 0, -rate(a), a.requests, a.client_width, a.shared_prefix, a.first_difference) <
           std::tuple(b.reproduced == 0, -rate(b), b.requests, b.client_width, b.shared_prefix, b.first_difference);
  });
  for (const auto& fr : cert.families) cert.counterexamples_total += fr.divergent;
  if (cert.counterexamples.size() > 20) cert.counterexamples.resize(20);
  conclude(cert, f);
  return cert;
}

}  // namespace logitaudit::audit
