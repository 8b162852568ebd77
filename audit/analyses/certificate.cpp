// The certificate analysis (audit/certify.hpp, docs/certify.md): a certify job's certificate,
// its sentence first among the findings, its part of the report after the verdict, and its
// recount from the recomputed identities.
#include <algorithm>
#include <cmath>
#include <map>

#include "audit/analysis.hpp"
#include "audit/certify.hpp"
#include "audit/findings.hpp"
#include "audit/numbers.hpp"
#include "audit/report_blocks.hpp"

namespace logitaudit::audit {
namespace {

grid family_grid(const certificate& c) {
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
  return g;
}

grid counterexample_grid(const certificate& c) {
  grid x{{"#", "family", "schedule", "sent again", "first difference", "max |delta|", "decode step there"}};
  for (std::size_t i = 0; i < c.counterexamples.size(); ++i) {
    const auto& e = c.counterexamples[i];
    std::string schedule = e.condition + " (group " + std::to_string(e.group) + ", request " + std::to_string(e.request) + "): ";
    if (e.point >= 0) schedule += "the boundary search's point " + std::to_string(e.point) + ": ";
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
    const std::string again = e.replayed > 0 ? std::to_string(e.reproduced) + "/" + std::to_string(e.replayed) +
                                                   (e.reproduced > 0 ? " moved: confirmed" : " moved: not reproduced")
                                             : "not sent again";
    x.push_back({std::to_string(i + 1), e.family, schedule, again,
                 "token " + std::to_string(e.first_difference) +
                     (e.first_token_difference >= 0 ? " (a token changed at " + std::to_string(e.first_token_difference) + ")" : ""),
                 fixed(e.max_abs_delta, 6), step});
  }
  return x;
}

// A certify job's certificate (audit/certify.hpp): the outcome, a row per family, and the
// counterexamples, smallest schedule first.
void certificate_sections(std::string& out, const certificate& c, bool markdown) {
  const std::string title = "Certificate: '" + c.claim + "' on " + c.backend + ": " + std::string(to_string(c.outcome));
  out += markdown ? "### " + title + "\n\n" + c.sentence + "\n\n" : title + "\n " + c.sentence + "\n";
  const std::string shape = "Sized from " + (c.shape_source.empty() ? std::string("the job's settings") : c.shape_source) +
                            ": slots " + std::to_string(c.shape.slots) + ", n_batch " + std::to_string(c.shape.n_batch) +
                            ", n_ubatch " + std::to_string(c.shape.n_ubatch) + ", a slot's context " + std::to_string(c.shape.n_ctx) +
                            "; identity at the " + std::string(to_string(c.level)) + " level.";
  out += markdown ? shape + "\n\n" : " " + shape + "\n";
  const grid g = family_grid(c);
  out += markdown ? "" : "\n";
  markdown ? grid_markdown(out, g) : grid_text(out, g);
  if (c.counterexamples.empty()) return;
  const std::string head = "Counterexamples (" + std::to_string(c.counterexamples_total) +
                           " streams moved; the confirmed by replay first, then the smallest)";
  out += markdown ? "\n#### " + head + "\n\n" : "\n " + head + ":\n";
  const grid x = counterexample_grid(c);
  markdown ? grid_markdown(out, x) : grid_text(out, x);
  const std::string how = "Each counterexample's script: logitaudit counterexamples AUDIT --out DIR (curl and sh, against the server).";
  out += markdown ? "\n" + how + "\n" : " " + how + "\n";
}

// Per family, the streams judged and those that moved (whatever their batching evidence: a
// divergence refutes), from the recomputed identities.
struct recounted_families {
  std::map<std::string, std::pair<int, int>> count;  // family -> judged, moved
  int moved = 0;
};

recounted_families recount_families(const recount_input& in, const certificate& c) {
  std::map<std::string, std::string> family_of;
  for (const auto& x : in.spec.conditions) family_of[x.name] = x.family;
  recounted_families out;
  for (const auto& id : in.judged) {
    auto f = family_of.find(id.condition);
    if (f == family_of.end() || f->second.empty()) continue;
    const bool m = family_moved(f->second, c.level, id.logit, id.token);
    ++out.count[f->second].first;
    out.count[f->second].second += m;
    out.moved += m;
  }
  return out;
}

void check_family(const std::string& at, const family_result& fr, int n, int m, recount_report& rep) {
  if (fr.divergent != m)
    rep.problems.push_back(at + fr.family + ": stored " + std::to_string(fr.divergent) + " streams moved, recomputed " + std::to_string(m));
  if (fr.compared + fr.flagged != n)
    rep.problems.push_back(at + fr.family + ": stored " + std::to_string(fr.compared + fr.flagged) + " judged streams, recomputed " +
                           std::to_string(n));
  if ((fr.status == family_status::refuted) != (m > 0))
    rep.problems.push_back(at + fr.family + ": stored " + std::string(to_string(fr.status)) + " with " + std::to_string(m) +
                           " recomputed streams moved");
  if (fr.status == family_status::passed && fr.compared > 0 && std::abs(fr.bound95 - upper_bound95(fr.divergent, fr.compared)) > 1e-9)
    rep.problems.push_back(at + fr.family + ": stored 95% bound " + std::to_string(fr.bound95) + ", recomputed " +
                           std::to_string(upper_bound95(fr.divergent, fr.compared)));
}

// Each stored schedule's replays and reproductions, recounted from the recomputed identities: its
// groups in plan order, from the first with a stream that moved.
void recount_schedules(const recount_input& in, const certificate& c, const std::string& at, recount_report& rep) {
  std::map<std::string, std::string> family_of;
  for (const auto& x : in.spec.conditions) family_of[x.name] = x.family;
  std::map<std::size_t, bool> moved;  // group -> a stream there moved
  for (const auto& id : in.judged) {
    if (id.group >= in.plan.groups.size()) continue;
    moved[id.group] = moved[id.group] || family_moved(family_of[id.condition], c.level, id.logit, id.token);
  }
  for (const auto& r : c.schedules) {
    int replayed = -1, reproduced = 0;
    for (const auto& [group, m] : moved) {
      const auto& g = in.plan.groups[group];
      if (g.condition != r.condition || g.point != r.point) continue;
      if (replayed < 0) {
        if (m) replayed = 0;
        continue;
      }
      ++replayed;
      reproduced += m;
    }
    if (replayed != r.replayed || reproduced != r.reproduced)
      rep.problems.push_back(at + "schedule " + r.condition + (r.point >= 0 ? " at " + std::to_string(r.point) : "") + ": stored " +
                             std::to_string(r.reproduced) + " of " + std::to_string(r.replayed) + " replays moved, recomputed " +
                             std::to_string(reproduced) + " of " + std::to_string(replayed));
  }
}

// Whether the outcome is one the recounted streams allow.
bool outcome_allowed(const certificate& c, int moved) {
  const bool all_passed = std::all_of(c.families.begin(), c.families.end(),
                                      [](const family_result& f) { return f.status == family_status::passed; });
  const bool all_ran = std::all_of(c.families.begin(), c.families.end(), [](const family_result& f) { return f.not_run == 0; });
  switch (c.outcome) {
    case certificate_outcome::refuted: return moved > 0;
    case certificate_outcome::certified: return moved == 0 && all_passed && all_ran;
    case certificate_outcome::incomplete: return moved == 0 && !(all_passed && all_ran);
    case certificate_outcome::invalid: return true;
  }
  return true;
}

class certificate_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "certificate"; }

  // Last of the analyses that judge: it reads the validity, the server's changes and the load curves.
  void evaluate(const analysis_input& in, findings& f) const override {
    if (auto c = certify(in.spec, in.plan, in.runs, f, in.evidence.bursts, in.evidence.thresholds))
      f.sections.put<certificate>() = std::move(*c);
  }

  void conclude(const analysis_input&, findings& f) const override {
    if (const auto* c = f.sections.find<certificate>()) f.sentences.insert(f.sentences.begin(), c->sentence);
  }

  report_place place() const override { return report_place::lead; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    if (const auto* c = f.sections.find<certificate>()) {
      certificate_sections(out, *c, fmt == report_format::markdown);
      out += "\n";
    }
  }

  void recount(const recount_input& in, recount_report& rep) const override {
    const auto* c = in.stored.sections.find<certificate>();
    if (!c) return;
    const std::string at = in.at() + "certificate ";
    auto x = recount_families(in, *c);
    for (const auto& fr : c->families) check_family(at, fr, x.count[fr.family].first, x.count[fr.family].second, rep);
    if (c->counterexamples_total != x.moved)
      rep.problems.push_back(at + "counts " + std::to_string(c->counterexamples_total) + " counterexamples, recomputed " +
                             std::to_string(x.moved));
    recount_schedules(in, *c, at, rep);
    if (!outcome_allowed(*c, x.moved))
      rep.problems.push_back(at + "says " + std::string(to_string(c->outcome)) + " with " + std::to_string(x.moved) +
                             " recomputed streams moved");
  }
};

}  // namespace

const analysis& certificate_analysis() {
  static const certificate_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
