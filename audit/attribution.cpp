#include "attribution.hpp"

#include <cstdio>

#include "numbers.hpp"
#include "statistics.hpp"

namespace logitaudit::audit {
namespace {

// Significance for the word "associated": one test per condition, at 5%.
constexpr double kAlpha = 0.05;

std::string rate(int k, int n) { return n > 0 ? fixed(100.0 * k / n, 1) + "%" : std::string("-"); }

std::string p_value_text(double p) {
  if (p < 1e-4) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1e", p);
    return b;
  }
  return fixed(p, 4);
}

}  // namespace

std::vector<attribution_tally> tally_attributions(const audit_spec& spec, const std::vector<run_verdict>& verdicts) {
  std::vector<attribution_tally> out;
  for (const auto& c : spec.conditions) {
    if (flag_of(c.kind) != evidence_flag::not_batched) continue;  // burst kinds only
    for (const auto& b : spec.backends) {
      attribution_tally t;
      t.condition = c.name;
      t.backend = b.name;
      bool any_steps = false;
      for (const auto& v : verdicts) {
        if (v.condition != c.name || v.backend != b.name || !v.counted()) continue;
        any_steps = any_steps || v.has_steps;
        t.positions += v.step_positions;
        t.width_changes += v.width_changes;
        t.finishes += v.finish_positions;
        t.joins += v.join_positions;
        if (v.result->logit_identical) continue;
        ++t.divergent;
        if (!v.at_difference) continue;
        ++t.with_steps;
        if (v.at_difference->width_before < 0) {
          ++t.at_first_token;
          continue;
        }
        ++t.tested;
        t.at_width_change += v.at_difference->width_changed();
        bool finish = false, join = false;
        for (const auto& e : v.at_difference->events) (e.what == step_event::kind::finished ? finish : join) = true;
        t.at_finish += finish;
        t.at_join += join;
      }
      if (t.divergent == 0) continue;
      if (!any_steps)
        t.no_steps_reason = streams_decode_steps(c)
                                ? "the answers were not streamed with per-token times (a kind that cannot stream)"
                                : "the bursts were plain requests (the condition's decode_steps is off: set it to attribute its "
                                  "differences)";
      t.p_width_change = binomial_upper_tail(t.at_width_change, t.tested, t.base_rate());
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::string attribution_sentence(const attribution_tally& t) {
  std::string s = "Attribution (" + t.condition + " on " + t.backend + "): ";
  if (!t.no_steps_reason.empty() || t.with_steps == 0)
    return s + "the decode steps of its " + std::to_string(t.divergent) + " divergent stream(s) are not known (" +
           (t.no_steps_reason.empty() ? std::string("no steps reach their first difference") : t.no_steps_reason) +
           "), so nothing is said of what moved them.";
  s += "of " + std::to_string(t.divergent) + " divergent stream(s), " + std::to_string(t.with_steps) +
       " with decode steps, " + std::to_string(t.at_first_token) +
       " first differ at the first token (decoded in the step that processed the prompts)";
  if (t.tested == 0) return s + "; none later, so no change of the batch precedes a first difference.";
  s += " and " + std::to_string(t.at_width_change) + " of the other " + std::to_string(t.tested) +
       " where the batch width changed; the width changed at " + rate(t.width_changes, t.positions) + " of all " +
       std::to_string(t.positions) + " positions (exact one-sided binomial test against that rate: p = " +
       p_value_text(t.p_width_change) + "): ";
  if (t.at_width_change == 0) s += "no first difference sits at a width change";
  else if (t.p_width_change < kAlpha) s += "first differences sit at width changes more often than chance";
  else s += "no association with width changes is shown";
  s += ". At a neighbour's finish: " + std::to_string(t.at_finish) + " (finishes at " + rate(t.finishes, t.positions) +
       " of positions); at a join: " + std::to_string(t.at_join) + " (joins at " + rate(t.joins, t.positions) + ").";
  return s;
}

std::string describe_divergence_step(const divergence_step& d) {
  std::string s = "width " + std::to_string(d.width);
  if (d.width_before < 0) s += " (the first token)";
  else s += " (was " + std::to_string(d.width_before) + ")";
  const auto ev = describe_events(d.events);
  return s + (ev.empty() ? std::string(": nothing joined or finished") : ": " + ev);
}

}  // namespace logitaudit::audit
