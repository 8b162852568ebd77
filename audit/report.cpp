// Renderers of the findings table.
#include "report.hpp"

#include <algorithm>
#include <cstdio>

#include "attribution.hpp"
#include "numbers.hpp"
#include "report_blocks.hpp"
#include "verdict.hpp"

namespace logitaudit::audit {
namespace {

std::string flag_words(const condition_tally& t) {
  std::string s;
  if (const int own = t.flagged - t.not_solo - t.ineffective; own > 0)
    s = std::to_string(own) + " " + (flag_of(t.kind) == evidence_flag::not_reused ? "not reused" : "not batched");
  if (t.not_solo) s += (s.empty() ? "" : ", ") + std::to_string(t.not_solo) + " not solo";
  if (t.ineffective) s += (s.empty() ? "" : ", ") + std::to_string(t.ineffective) + " ineffective";
  return s;
}

std::string note(const condition_tally& t) {
  if (t.control() && t.n == 0 && t.flagged > 0) return "<- control: " + flag_words(t) + ", not counted";
  // Logits that diverged show the comparator sees the change; the same tokens from a changed
  // prompt are the model's (a trained model's greedy loop can ignore its prompt).
  if (t.control() && t.logit_identical == 0 && t.token_identical > 0)
    return "<- control: logits diverged, tokens identical in " + std::to_string(t.token_identical) + "/" + std::to_string(t.n);
  if (t.control()) return t.logit_identical == 0 ? "<- control: diverged" : "<- CONTROL IDENTICAL";
  std::string apart;
  if (t.failed) apart = std::to_string(t.failed) + " failed";
  if (t.flagged) apart += (apart.empty() ? "" : ", ") + flag_words(t);
  return apart.empty() ? "" : "(" + apart + ", not counted)";
}

const reference_tally* against(const reference_findings* ref, const std::string& condition) {
  if (!ref) return nullptr;
  for (const auto& t : ref->pooled)
    if (t.condition == condition) return &t;
  return nullptr;
}

// "10/16 ( 62%)" of the streams matching the reference bit for bit, "–" for none compared.
std::string reference_cell(const reference_findings* ref, const std::string& condition) {
  const auto* t = against(ref, condition);
  if (!t || t->n == 0) return t && t->not_comparable ? "not comparable" : "-";
  return cell(t->logit_matches, t->n);
}

// The pooled table carries an "against the reference" column when the spec named one.
void table_text(std::string& out, const std::vector<condition_tally>& rows, const reference_findings* ref = nullptr) {
  out += " " + pad("condition", 26) + pad("logit-ident", 17) + pad("token-ident", 17) +
         (ref ? pad("vs reference", 17) : "") + "\n";
  for (const auto& t : rows)
    out += " " + pad(t.condition, 26) + pad(cell(t.logit_identical, t.n), 17) + pad(cell(t.token_identical, t.n), 17) +
           (ref ? pad(t.control() ? "" : reference_cell(ref, t.condition), 17) : "") + note(t) + "\n";
  if (ref) out += " " + pad("solo baselines", 60) + pad(reference_cell(ref, "baseline"), 17) + "\n";
}

const char* level_name(identity_level l) { return l == identity_level::logit ? "logit" : "token"; }
const char* expect_name(expectation e) { return e == expectation::identical ? "identical" : "diverges"; }

std::string outcome_word(const prediction_result& p) {
  switch (p.outcome) {
    case prediction_outcome::held: return "HELD     ";
    case prediction_outcome::failed: return "FAILED   ";
    case prediction_outcome::undecided: return "UNDECIDED";
  }
  return "?";
}

std::string measure_name(concurrency_measure m) {
  switch (m) {
    case concurrency_measure::busy_slots_per_decode: return "busy slots/decode";
    case concurrency_measure::server_timings: return "timed concurrency";
    case concurrency_measure::none: return "not measured";
  }
  return "?";
}

std::string measured_cell(const burst_summary& b) {
  if (!b.median_measured) return "not measured";
  return measure_name(b.measured_by) + " " + fixed(*b.median_measured, 2) + " of " + fixed(b.expected, 0);
}

std::string overlap_cell(const burst_summary& b) { return fixed(100 * b.median_overlap, 0) + "%"; }

bool any_bursts(const std::vector<condition_tally>& rows) {
  for (const auto& t : rows)
    if (t.bursts && t.bursts->bursts > 0) return true;
  return false;
}

void evidence_text(std::string& out, const std::vector<condition_tally>& rows) {
  out += " " + pad("condition", 26) + pad("width", 7) + pad("batched", 9) + pad("server concurrency (median)", 37) +
         "overlap\n";
  for (const auto& t : rows) {
    if (!t.bursts || t.bursts->bursts == 0) continue;
    // A threshold search: a row per width, never one median over widths that differ.
    const std::vector<burst_summary> each = t.widths.empty() ? std::vector<burst_summary>{*t.bursts} : t.widths;
    for (const auto& b : each)
      out += " " + pad(t.condition, 26) + pad(std::to_string(b.width), 7) +
             pad(std::to_string(b.batched) + "/" + std::to_string(b.bursts), 9) + pad(measured_cell(b), 37) +
             overlap_cell(b) + "\n";
  }
}

std::string thresholds_line(const evidence_thresholds& t) {
  return "a burst batched when its server concurrency reached 1 + " + fixed(t.min_batching, 2) +
         " x (expected - 1) and all its requests were in flight together for " + fixed(100 * t.min_overlap, 0) +
         "% of it (evidence.min_batching, evidence.min_overlap)";
}

std::string prediction_counts(const prediction_result& p) {
  std::string s = std::string(level_name(p.claim.level)) + " " + expect_name(p.claim.expect) + " " + std::to_string(p.k) + "/" +
                  std::to_string(p.n) + ", needed " + std::to_string(static_cast<int>(p.claim.at_least * 100 + 0.5)) + "%";
  if (p.flagged) s += "; " + std::to_string(p.flagged) + " counted apart";
  return s;
}

std::string decision_word(search_decision d) {
  switch (d) {
    case search_decision::same: return "SAME";
    case search_decision::different: return "DIFFERENT";
    case search_decision::unknown: return "UNKNOWN";
    case search_decision::not_batched: return "NOT BATCHED";
  }
  return "?";
}

grid search_grid(const search_result& r) {
  grid g{{"width", "trials", "batched", "logit-ident", "95% interval", "logit", "token-ident", "token"}};
  g.push_back({"1 (solo)", "-", "-", pct_cell(r.reference_logit_identical, r.reference_n), "-", "reference",
               pct_cell(r.reference_token_identical, r.reference_n), "reference"});
  for (const auto& w : r.widths)
    g.push_back({std::to_string(w.width), std::to_string(w.trials), std::to_string(w.batched_trials),
                 pct_cell(w.logit_identical, w.n),
                 w.n ? fixed(100 * w.logit_interval.low, 0) + "-" + fixed(100 * w.logit_interval.high, 0) + "%" : "-",
                 decision_word(w.logit) + (w.logit == search_decision::different ? " " + p_text(w.logit_p) : ""),
                 pct_cell(w.token_identical, w.n),
                 decision_word(w.token) + (w.token == search_decision::different ? " " + p_text(w.token_p) : "")});
  return g;
}

std::string threshold_words(const search_result& r) {
  auto t = [](const std::optional<int>& v) { return v ? "C=" + std::to_string(*v) : std::string("none found"); };
  return "logit threshold " + t(r.logit_threshold) + ", token threshold " + t(r.token_threshold);
}

std::string settings_words(const std::optional<server_settings>& m) { return m ? audit::settings_words(*m) : "-"; }

grid frontier_grid(const findings& f) {
  grid g{{"configuration", "logit-ident under load", "token-ident under load", "batched", "tokens/s", "cost", "reproducible"}};
  for (const auto& r : f.frontier)
    g.push_back({r.backend, pct_cell(r.load_logit_identical, r.load_n), pct_cell(r.load_token_identical, r.load_n),
                 std::to_string(r.load_batched) + "/" + std::to_string(r.load_n),
                 r.tokens_per_s ? fixed(*r.tokens_per_s, 1) : "-", r.cost ? fixed(100 * *r.cost, 0) + "%" : "-",
                 std::string(r.reproducible ? "yes" : "no") + (r.note.empty() ? "" : " (" + r.note + ")")});
  return g;
}

std::string ms3(const latency_summary& l) {
  if (l.n == 0) return "-";
  auto v = [](double x) { return fixed(x, x < 10 ? 2 : x < 100 ? 1 : 0); };
  return v(l.p50) + "/" + v(l.p90) + "/" + v(l.p99);
}

grid load_identity_grid(const load_curve& c) {
  grid g{{"level", "reached", "logit-ident", "95% interval", "token-ident", "batch width", "offered req/s", "achieved req/s",
          "served req/s", "output tok/s", "slots full"}};
  for (const auto& l : c.levels) {
    const auto& m = l.measurement;
    g.push_back({m.label, m.reached ? "yes" : "NO", pct_cell(l.logit_identical, l.probes),
                 l.probes ? fixed(100 * l.logit_low, 0) + "-" + fixed(100 * l.logit_high, 0) + "%" : "-",
                 pct_cell(l.token_identical, l.probes), l.probes ? fixed(l.mean_width, 1) : "-", fixed(m.offered_rps, 2),
                 fixed(m.achieved_rps, 2), fixed(m.request_throughput, 2), fixed(m.output_throughput, 0),
                 m.slot_fullness() >= 0 ? fixed(100 * m.slot_fullness(), 0) + "%" : "-"});
  }
  return g;
}

grid load_latency_grid(const load_curve& c) {
  grid g{{"level", "requests", "TTFT ms p50/p90/p99", "ITL ms", "TPOT ms", "E2E ms", "in flight mean/max",
          "arrival lateness us p99", "server tokens", "server in flight", "goodput"}};
  for (const auto& l : c.levels) {
    const auto& m = l.measurement;
    g.push_back({m.label,
                 std::to_string(m.completed) + (m.failed ? " (" + std::to_string(m.failed) + " failed)" : "") +
                     (m.dropped ? " (" + std::to_string(m.dropped) + " dropped)" : ""),
                 ms3(m.ttft_ms), ms3(m.itl_ms), ms3(m.tpot_ms), ms3(m.e2el_ms),
                 fixed(m.mean_in_flight, 1) + "/" + std::to_string(m.max_in_flight), fixed(m.arrival_lateness_us.p99, 0),
                 m.server_tokens_predicted >= 0 ? fixed(m.server_tokens_predicted, 0) + " (ours " + std::to_string(m.output_tokens) + ")"
                                                : "-",
                 m.server_in_flight >= 0 ? fixed(m.server_in_flight, 2) + " (ours " + fixed(m.sampled_in_flight, 2) + ")" : "-",
                 m.goodput >= 0 ? std::to_string(m.within_slo) + "/" + std::to_string(m.completed) + " (" + fixed(m.goodput_rps, 2) + " req/s)"
                                : "-"});
  }
  return g;
}

// The load curves: per backend and condition, identity against the level, then the latencies
// at each level (docs/load.md); a level not reached says why beneath.
void load_sections(std::string& out, const findings& f, bool markdown) {
  for (const auto& c : f.load_curves) {
    const std::string title = "Load curve, " + c.backend + ", " + c.condition + " (" + std::string(to_string(c.arrival)) +
                              " arrivals): probes against their solo baseline, per level";
    out += markdown ? "\n### " + title + "\n\n" : "\n" + title + ":\n";
    if (!c.levels.empty() && c.levels.front().measurement.sweep_max_rps >= 0) {
      const auto& m = c.levels.front().measurement;
      out += std::string(markdown ? "" : " ") + "Saturation first: one request at a time served " + fixed(m.sweep_synchronous_rps, 2) +
             " req/s, every slot full " + fixed(m.sweep_max_rps, 2) +
             " req/s; each level is its fraction of the way between them, the top one the maximum.\n" + (markdown ? "\n" : "");
    }
    markdown ? grid_markdown(out, load_identity_grid(c)) : grid_text(out, load_identity_grid(c));
    out += markdown ? "\n" : "\n Latencies (every request of the level, probes included):\n";
    markdown ? grid_markdown(out, load_latency_grid(c)) : grid_text(out, load_latency_grid(c));
    for (const auto& l : c.levels)
      if (!l.measurement.reached) out += (markdown ? "\n- " : " ") + l.measurement.label + " not reached: " + l.measurement.not_reached + "\n";
  }
}

// Every analysis's part at `place`, in the list's order.
void render_place(std::string& out, const findings& f, report_place place, bool markdown) {
  for (const auto* a : analyses())
    if (a->place() == place) a->render(f, markdown ? report_format::markdown : report_format::text, out);
}

void extra_sections(std::string& out, const findings& f, bool markdown) {
  render_place(out, f, report_place::matrices, markdown);
  for (const auto& r : f.searches) {
    const std::string title = "Threshold search, " + r.backend + ", " + r.condition + ": " + threshold_words(r);
    out += markdown ? "\n### " + title + "\n\n" : "\n" + title + ":\n";
    markdown ? grid_markdown(out, search_grid(r)) : grid_text(out, search_grid(r));
  }
  if (!f.frontier.empty()) {
    std::string title = "Frontier (throughput probe";
    if (!f.throughput.empty())
      title += ": " + std::to_string(f.throughput.front().bursts) + " bursts of " + std::to_string(f.throughput.front().width) +
               " different prompts per configuration";
    title += ")";
    out += markdown ? "\n### " + title + "\n\n" : "\n" + title + ":\n";
    markdown ? grid_markdown(out, frontier_grid(f)) : grid_text(out, frontier_grid(f));
    bool managed = false;
    for (const auto& r : f.frontier) managed = managed || r.settings.has_value();
    if (managed) {
      grid flags{{"configuration", "llama-server flags"}};
      for (const auto& r : f.frontier) flags.push_back({r.backend, settings_words(r.settings)});
      out += markdown ? "\n" : "\n";
      markdown ? grid_markdown(out, flags) : grid_text(out, flags);
    }
  }
}

// Attribution at the first difference, one row per condition and backend (docs/explain.md).
grid attribution_grid(const findings& f) {
  grid g{{"condition", "backend", "divergent", "with steps", "at first token", "later", "at width change",
          "width changes", "p", "at finish", "at join"}};
  for (const auto& t : f.attributions) {
    const bool known = t.no_steps_reason.empty() && t.with_steps > 0;
    const std::string rate = t.positions ? fixed(100.0 * t.width_changes / t.positions, 1) + "% of " + std::to_string(t.positions)
                                         : std::string("-");
    g.push_back({t.condition, t.backend, std::to_string(t.divergent),
                 known ? std::to_string(t.with_steps) : "not known: " + (t.no_steps_reason.empty() ? "no steps" : t.no_steps_reason),
                 known ? std::to_string(t.at_first_token) : "-", known ? std::to_string(t.tested) : "-",
                 known && t.tested ? std::to_string(t.at_width_change) : "-", known && t.tested ? rate : "-",
                 known && t.tested ? p_text(t.p_width_change) : "-", known && t.tested ? std::to_string(t.at_finish) : "-",
                 known && t.tested ? std::to_string(t.at_join) : "-"});
  }
  return g;
}

void attribution_section(std::string& out, const findings& f, bool markdown) {
  if (f.attributions.empty()) return;
  const std::string title =
      "Attribution at the first difference (\"later\": divergent streams whose first difference follows the prompt's step, "
      "tested against the rate of width changes, exact one-sided binomial)";
  out += markdown ? "\n### " + title + "\n\n" : "\n" + title + ":\n";
  markdown ? grid_markdown(out, attribution_grid(f)) : grid_text(out, attribution_grid(f));
}

// The findings' sentences, less those a table above gives (an older audit stored one sentence
// per attribution row).
std::vector<std::string> listed_sentences(const findings& f) {
  std::vector<std::string> out;
  for (const auto& s : f.sentences) {
    const bool tabled = std::any_of(f.attributions.begin(), f.attributions.end(),
                                    [&](const attribution_tally& t) { return attribution_sentence(t) == s; });
    if (!tabled) out.push_back(s);
  }
  return out;
}

// The backends' machines, one line each; "" when no fingerprint named one.
std::string machines_text(const findings& f, const std::string& prefix) {
  std::string out;
  for (const auto& b : f.backends)
    if (auto it = f.machines.find(b); it != f.machines.end()) out += prefix + b + ": " + machine_summary(it->second) + "\n";
  return out;
}

// Per backend, how its server writes logprobs and its path's selftest; "" for audits before
// schema 7 (no resolution was recorded), so that their reports stay what they were.
std::string harness_text(const findings& f, const std::string& prefix) {
  if (f.resolution.empty() && f.selftests.empty()) return "";
  std::string out;
  for (const auto& b : f.backends) {
    std::string line = prefix + b + ": ";
    if (auto r = f.resolution.find(b); r != f.resolution.end()) {
      line += r->second.describe();
      if (!r->second.qualifier().empty()) line += "; \"logit-identical\" here means equal " + r->second.qualifier();
    } else {
      line += "no logprob was read as text";
    }
    if (auto t = f.selftests.find(b); t != f.selftests.end())
      line += "; harness power " + t->second.summary + (t->second.passed ? "" : " (MISSED)") + " (selftest " +
              std::to_string(t->second.id) + ", " + t->second.taken_at + ")";
    else
      line += "; harness power: no selftest of this path";
    out += line + "\n";
  }
  return out;
}

// The CSV cell of a backend's resolution: "float32", "float64", "4 decimals", "6 significant digits".
std::string resolution_cell(const findings& f, const std::string& scope) {
  auto r = f.resolution.find(scope);
  if (r == f.resolution.end()) return "";
  if (r->second.round_trips_float32()) return "float32";
  if (r->second.full_float64()) return "float64";
  return r->second.qualifier().substr(3);
}

std::string power_cell(const findings& f, const std::string& scope) {
  auto t = f.selftests.find(scope);
  if (t == f.selftests.end()) return "none";
  return std::to_string(t->second.caught) + "/" + std::to_string(t->second.faults) + " caught " +
         std::to_string(t->second.equivalents_flagged) + "/" + std::to_string(t->second.equivalents) + " flagged";
}

}  // namespace

// A certify job's certificate (audit/certify.hpp): the outcome, a row per family, and the
// counterexamples, smallest schedule first.
void certificate_sections(std::string& out, const findings& f, bool markdown) {
  if (!f.certificate) return;
  const auto& c = *f.certificate;
  const std::string title = "Certificate: '" + c.claim + "' on " + c.backend + ": " + std::string(to_string(c.outcome));
  out += markdown ? "### " + title + "\n\n" + c.sentence + "\n\n" : title + "\n " + c.sentence + "\n";
  const std::string shape = "Sized from " + (c.shape_source.empty() ? std::string("the job's settings") : c.shape_source) +
                            ": slots " + std::to_string(c.shape.slots) + ", n_batch " + std::to_string(c.shape.n_batch) +
                            ", n_ubatch " + std::to_string(c.shape.n_ubatch) + ", a slot's context " + std::to_string(c.shape.n_ctx) +
                            "; identity at the " + std::string(to_string(c.level)) + " level.";
  out += markdown ? shape + "\n\n" : " " + shape + "\n";
  grid g{{"family", "status", "compared", "moved", "in flight (client)", "batch width (server)", "95% bound", "note"}};
  for (const auto& r : c.families) {
    std::string server = "-";
    if (r.server_width_max >= 0)
      server = r.server_width_min == r.server_width_max ? fixed(r.server_width_max, 2)
                                                        : fixed(r.server_width_min, 2) + "-" + fixed(r.server_width_max, 2);
    if (r.reused_tokens_max >= 0)
      server = (server == "-" ? "" : server + "; ") + "cache served up to " + std::to_string(r.reused_tokens_max) + " tokens";
    g.push_back({r.family, std::string(to_string(r.status)), std::to_string(r.compared), std::to_string(r.divergent),
                 r.client_width_max > 0 ? std::to_string(r.client_width_max) : "-", server,
                 r.bound95 >= 0 && r.status == family_status::passed ? fixed(r.bound95, 3) : "-", r.note.empty() ? "-" : r.note});
  }
  out += markdown ? "" : "\n";
  markdown ? grid_markdown(out, g) : grid_text(out, g);
  if (c.counterexamples.empty()) return;
  out += markdown ? "\n#### Counterexamples (" + std::to_string(c.counterexamples_total) + ", smallest first)\n\n"
                  : "\n Counterexamples (" + std::to_string(c.counterexamples_total) + ", smallest first):\n";
  grid x{{"#", "family", "schedule", "first difference", "max |delta|", "decode step there"}};
  for (std::size_t i = 0; i < c.counterexamples.size(); ++i) {
    const auto& e = c.counterexamples[i];
    std::string schedule = e.condition + " (group " + std::to_string(e.group) + ", request " + std::to_string(e.request) + "): ";
    if (e.shared_prefix > 0)
      schedule += "warm-up then probe sharing " + std::to_string(e.shared_prefix) + " tokens, cache served " +
                  (e.reused_tokens >= 0 ? std::to_string(e.reused_tokens) : std::string("?"));
    else if (e.requests > 1)
      schedule += std::to_string(e.client_width) + " at once, server width " + (e.server_width >= 0 ? fixed(e.server_width, 2) : "?") +
                  (e.batched ? "" : " (not batched)");
    else
      schedule += "alone";
    if (e.seeded) schedule += ", seeded";
    std::string step = e.step_width >= 0 ? "width " + std::to_string(e.step_width) +
                                               (e.step_width_before >= 0 ? " (was " + std::to_string(e.step_width_before) + ")" : "") +
                                               (e.step_events.empty() ? "" : ", " + e.step_events)
                                         : "-";
    x.push_back({std::to_string(i + 1), e.family, schedule,
                 "token " + std::to_string(e.first_difference) +
                     (e.first_token_difference >= 0 ? " (a token changed at " + std::to_string(e.first_token_difference) + ")" : ""),
                 fixed(e.max_abs_delta, 6), step});
  }
  markdown ? grid_markdown(out, x) : grid_text(out, x);
  const std::string how = "Each counterexample's script: logitaudit counterexamples AUDIT --out DIR (curl and sh, against the server).";
  out += markdown ? "\n" + how + "\n" : " " + how + "\n";
}

std::string render_analysis(const findings& f, std::string_view name) {
  std::string out;
  for (const auto* a : analyses())
    if (a->name() == name) a->render(f, report_format::text, out);
  return out;
}

std::string render_text(const findings& f) {
  std::string out = verdict_text(summarize(f)) + "\n";
  if (!f.valid) out += "!! " + f.invalid_reason + "\n\n";
  if (f.certificate) {
    certificate_sections(out, f, false);
    out += "\n";
  }
  if (const auto m = machines_text(f, " "); !m.empty()) out += "Measured on:\n" + m + "\n";
  if (const auto h = harness_text(f, " "); !h.empty()) out += "Oracle resolution and harness power:\n" + h + "\n";
  // A curve is the answer of an audit that has one: it comes first.
  if (!f.load_curves.empty()) {
    load_sections(out, f, false);
    out += "\n";
  }
  out += "Pooled over " + std::to_string(f.backends.size()) + " backend(s)" +
         (f.reference ? "; vs reference: logit-identical to audit " + std::to_string(f.reference->audit) + "'s solo streams"
                      : std::string()) +
         ":\n";
  table_text(out, f.pooled, f.reference ? &*f.reference : nullptr);
  if (f.backends.size() > 1)
    for (const auto& b : f.backends) {
      out += "\n" + b + ":\n";
      table_text(out, f.per_backend.at(b));
    }
  if (any_bursts(f.pooled)) {
    out += "\nBatching evidence (" + thresholds_line(f.thresholds) + "):\n";
    evidence_text(out, f.pooled);
  }
  extra_sections(out, f, false);
  attribution_section(out, f, false);
  out += "\nFindings:\n";
  const auto sentences = listed_sentences(f);
  for (std::size_t i = 0; i < sentences.size(); ++i) out += " " + std::to_string(i + 1) + ". " + sentences[i] + "\n";
  if (!f.predictions.empty()) {
    out += "\nPre-registered predictions:\n";
    for (const auto& p : f.predictions)
      out += " " + p.claim.id + " " + outcome_word(p) + " " + p.claim.statement + " (" + prediction_counts(p) + ")\n";
  }
  return out;
}

std::string render_markdown(const findings& f) {
  std::string out;
  out += verdict_markdown(summarize(f)) + "\n";
  if (!f.valid) out += "> **" + f.invalid_reason + "**\n\n";
  if (f.certificate) {
    certificate_sections(out, f, true);
    out += "\n";
  }
  auto table = [&](const std::vector<condition_tally>& rows, const reference_findings* ref) {
    out += std::string("| condition | logit-ident | token-ident |") + (ref ? " against the reference |" : "") +
           " note |\n| --- | --- | --- |" + (ref ? " --- |" : "") + " --- |\n";
    for (const auto& t : rows)
      out += "| " + t.condition + " | " + cell(t.logit_identical, t.n) + " | " + cell(t.token_identical, t.n) + " | " +
             (ref ? (t.control() ? std::string() : reference_cell(ref, t.condition)) + " | " : "") + note(t) + " |\n";
    if (ref) out += "| solo baselines | | | " + reference_cell(ref, "baseline") + " | |\n";
  };
  if (const auto m = machines_text(f, "- "); !m.empty()) out += "Measured on:\n\n" + m + "\n";
  if (const auto h = harness_text(f, "- "); !h.empty()) out += "Oracle resolution and harness power:\n\n" + h + "\n";
  if (!f.load_curves.empty()) {
    load_sections(out, f, true);
    out += "\n";
  }
  out += "### Pooled over " + std::to_string(f.backends.size()) + " backend(s)\n\n";
  table(f.pooled, f.reference ? &*f.reference : nullptr);
  if (f.backends.size() > 1)
    for (const auto& b : f.backends) {
      out += "\n### " + b + "\n\n";
      table(f.per_backend.at(b), nullptr);
    }
  if (any_bursts(f.pooled)) {
    out += "\n### Batching evidence\n\nMedians per burst; " + thresholds_line(f.thresholds) +
           ".\n\n| condition | width | bursts batched | server concurrency | overlap |\n| --- | --- | --- | --- | --- |\n";
    for (const auto& t : f.pooled) {
      if (!t.bursts || t.bursts->bursts == 0) continue;
      const std::vector<burst_summary> each = t.widths.empty() ? std::vector<burst_summary>{*t.bursts} : t.widths;
      for (const auto& b : each)
        out += "| " + t.condition + " | " + std::to_string(b.width) + " | " + std::to_string(b.batched) + "/" +
               std::to_string(b.bursts) + " | " + measured_cell(b) + " | " + overlap_cell(b) + " |\n";
    }
  }
  extra_sections(out, f, true);
  attribution_section(out, f, true);
  out += "\n### Findings\n\n";
  const auto sentences = listed_sentences(f);
  for (std::size_t i = 0; i < sentences.size(); ++i) out += std::to_string(i + 1) + ". " + sentences[i] + "\n";
  if (!f.predictions.empty()) {
    out += "\n### Pre-registered predictions\n\n| id | claim | level | expect | evidence | needed | result |\n| --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& p : f.predictions)
      out += "| " + p.claim.id + " | " + p.claim.statement + " | " + level_name(p.claim.level) + " | " +
             expect_name(p.claim.expect) + " | " + std::to_string(p.k) + "/" + std::to_string(p.n) +
             (p.flagged ? " (" + std::to_string(p.flagged) + " counted apart)" : "") + " | " +
             std::to_string(static_cast<int>(p.claim.at_least * 100 + 0.5)) + "% | " +
             (p.outcome == prediction_outcome::held ? "held" : p.outcome == prediction_outcome::failed ? "**failed**" : "undecided") +
             " |\n";
  }
  return out;
}

std::string render_csv(const findings& f) {
  // The machine column comes with audits whose fingerprints name their machine (since schema 6), so
  // that the report of an older audit stays what it was.
  const bool machines = !f.machines.empty();
  const bool harness = !f.resolution.empty() || !f.selftests.empty();  // since schema 7
  std::string out =
      "scope,condition,kind,concurrency,seeded,n,logit_identical,token_identical,failed,flagged,bursts,bursts_batched,"
      "median_server_concurrency,measured_by,expected_concurrency,median_overlap" +
      std::string(machines ? ",machine" : "") + std::string(harness ? ",logprob_resolution,harness_power" : "") +
      std::string(f.reference ? ",reference_n,reference_logit_matches,reference_token_matches" : "") + "\n";
  auto rows = [&](const std::string& scope, const std::vector<condition_tally>& ts) {
    std::string machine;
    if (auto it = f.machines.find(scope); machines && it != f.machines.end()) machine = machine_summary(it->second);
    if (machines) {
      std::string quoted;
      for (char c : machine) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
      machine = ",\"" + quoted + "\"";
    }
    if (harness) {
      // Pooled rows: every backend's, joined.
      std::string res, power;
      for (const auto& b : scope == "pooled" ? f.backends : std::vector<std::string>{scope}) {
        res += (res.empty() ? "" : "; ") + resolution_cell(f, b);
        power += (power.empty() ? "" : "; ") + power_cell(f, b);
      }
      machine += "," + res + "," + power;
    }
    // Against the reference: pooled rows only (the reference's tallies are pooled).
    auto reference_columns = [&](const condition_tally& t) -> std::string {
      if (!f.reference) return "";
      const auto* r = scope == "pooled" ? against(&*f.reference, t.condition) : nullptr;
      if (!r) return ",,,";
      return "," + std::to_string(r->n) + "," + std::to_string(r->logit_matches) + "," + std::to_string(r->token_matches);
    };
    for (const auto& t : ts) {
      out += scope + "," + t.condition + "," + std::string(to_string(t.kind)) + "," + std::to_string(t.concurrency) + "," +
             (t.seeded ? "true" : "false") + "," + std::to_string(t.n) + "," + std::to_string(t.logit_identical) + "," +
             std::to_string(t.token_identical) + "," + std::to_string(t.failed) + "," + std::to_string(t.flagged) + ",";
      if (t.bursts)
        out += std::to_string(t.bursts->bursts) + "," + std::to_string(t.bursts->batched) + "," +
               (t.bursts->median_measured ? fixed(*t.bursts->median_measured, 4) : "") + "," +
               std::string(to_string(t.bursts->measured_by)) + "," + fixed(t.bursts->expected, 0) + "," +
               fixed(t.bursts->median_overlap, 4) + machine + reference_columns(t) + "\n";
      else
        out += ",,,,," + machine + reference_columns(t) + "\n";
    }
  };
  rows("pooled", f.pooled);
  for (const auto& b : f.backends) {
    // A load condition's levels, each a row of its backend (never pooled): "load_poisson@2 req/s".
    std::vector<condition_tally> levels;
    for (const auto& c : f.load_curves) {
      if (c.backend != b) continue;
      for (const auto& l : c.levels) {
        condition_tally t;
        t.condition = c.condition + "@" + l.measurement.label;
        t.kind = condition_kind::load;
        t.concurrency = static_cast<int>(l.measurement.level);
        t.n = l.probes;
        t.logit_identical = l.logit_identical;
        t.token_identical = l.token_identical;
        t.failed = l.failed;
        t.flagged = l.flagged;
        levels.push_back(std::move(t));
      }
    }
    auto all = f.per_backend.count(b) ? f.per_backend.at(b) : std::vector<condition_tally>{};
    all.insert(all.end(), levels.begin(), levels.end());
    rows(b, all);
  }
  return out;
}

}  // namespace logitaudit::audit
