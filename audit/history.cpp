// The classification of a series' transitions: digests first (a step or noise), the declared
// fingerprint second (explained or not), the identical-rates inside a segment last.
#include "history.hpp"

#include <algorithm>
#include <set>

#include "enum_names.hpp"
#include "numbers.hpp"

namespace logitaudit::audit {
namespace {

using digest_map = std::map<std::string, baseline_digests>;

bool comparable(const series_audit& a) { return a.ended && !a.server_changed && !a.baselines.empty(); }

const backend_fingerprint* end_of(const series_audit& a) {
  return a.after ? &*a.after : a.before ? &*a.before : nullptr;
}
const backend_fingerprint* start_of(const series_audit& a) {
  return a.before ? &*a.before : a.after ? &*a.after : nullptr;
}

// The fingerprint fields that differ from the end of `a` to the start of `b`.
std::vector<std::string> fields_between(const series_audit& a, const series_audit& b) {
  const auto* x = end_of(a);
  const auto* y = start_of(b);
  if (!x || !y) return {};
  return fingerprint_differences(*x, *y);
}

// "cpu_features: avx2 fma -> avx2 fma avx512f" for each machine fact that differs from the
// end of `a` to the start of `b`.
std::vector<std::string> machine_changes_between(const series_audit& a, const series_audit& b) {
  const auto* x = end_of(a);
  const auto* y = start_of(b);
  std::vector<std::string> out;
  if (!x || !y) return out;
  for (const auto& [key, value] : x->machine)
    if (auto it = y->machine.find(key); it != y->machine.end() && it->second != value)
      out.push_back(key + ": " + value + " -> " + it->second);
  return out;
}

// Stable within itself: its serial repeats all logit-identical to their baseline, and its
// server (canary included) the same at its end as at its start. An audit without repeats
// gives no such evidence.
bool self_consistent(const series_audit& a) {
  if (a.server_changed) return false;
  bool repeats = false;
  for (const auto& c : a.conditions) {
    if (!c.repeat || c.n == 0) continue;
    repeats = true;
    if (c.logit_identical != c.n) return false;
  }
  return repeats;
}

bool all_self_consistent(const std::vector<const series_audit*>& seg, std::size_t from, std::size_t to) {
  for (std::size_t k = from; k <= to && k < seg.size(); ++k)
    if (!self_consistent(*seg[k])) return false;
  return true;
}

std::vector<std::string> declared_only(const std::vector<std::string>& fields) {
  std::vector<std::string> out;
  for (const auto& f : fields)
    if (!declared_category(f).empty()) out.push_back(f);
  return out;
}

// The labels of the baselines both maps have and whose digests differ; `shared` counts the
// baselines both have.
std::vector<std::string> differing(const digest_map& a, const digest_map& b, int& shared) {
  std::vector<std::string> out;
  shared = 0;
  for (const auto& [label, d] : a) {
    auto it = b.find(label);
    if (it == b.end()) continue;
    ++shared;
    if (it->second != d) out.push_back(label);
  }
  return out;
}

bool same_numbers(const digest_map& a, const digest_map& b) {
  int shared = 0;
  return differing(a, b, shared).empty() && shared > 0;
}

struct counts {
  int k = 0, n = 0;
};

counts count_of(const series_audit& a, const std::string& condition, bool logit) {
  for (const auto& c : a.conditions)
    if (c.condition == condition) return {logit ? c.logit_identical : c.token_identical, c.n};
  return {};
}

counts pooled(const std::vector<const series_audit*>& audits, std::size_t from, std::size_t to,
              const std::string& condition, bool logit) {
  counts sum;
  for (std::size_t i = from; i < to; ++i) {
    const auto c = count_of(*audits[i], condition, logit);
    sum.k += c.k;
    sum.n += c.n;
  }
  return sum;
}

double rate(counts c) { return c.n ? static_cast<double>(c.k) / c.n : 0; }

// The non-control conditions of a segment's audits, in first-seen order.
std::vector<std::string> tested_conditions(const std::vector<const series_audit*>& audits) {
  std::vector<std::string> out;
  for (const auto* a : audits)
    for (const auto& c : a->conditions)
      if (!c.control && std::find(out.begin(), out.end(), c.condition) == out.end()) out.push_back(c.condition);
  return out;
}

// Rate shifts inside one segment (its comparable audits in order), attached by the index of
// the audit that ends each tested window.
std::map<std::size_t, std::vector<rate_shift>> rate_shifts_in(const std::vector<const series_audit*>& seg,
                                                              const history_thresholds& t) {
  std::map<std::size_t, std::vector<rate_shift>> out;
  const auto conditions = tested_conditions(seg);
  const std::size_t window = static_cast<std::size_t>(std::max(1, t.rate_window));
  const std::size_t history = static_cast<std::size_t>(std::max(1, t.rate_min_history));
  const std::size_t confirm = static_cast<std::size_t>(std::max(1, t.confirm_after));
  // Where each (condition, level)'s current regime starts: a confirmed shift starts a new one.
  std::map<std::pair<std::string, bool>, std::size_t> regime;
  for (std::size_t j = 0; j < seg.size(); ++j) {
    if (j + 1 < window) continue;
    const std::size_t first = j + 1 - window;
    struct test {
      std::string condition;
      bool logit;
      counts before, after;
      double p;
    };
    std::vector<test> tests;
    for (const auto& c : conditions)
      for (bool logit : {true, false}) {
        const std::size_t start = regime[{c, logit}];
        if (first < start || first - start < history) continue;  // never on a regime's first audits
        const counts before = pooled(seg, start, first, c, logit), after = pooled(seg, first, j + 1, c, logit);
        if (before.n == 0 || after.n == 0) continue;
        tests.push_back({c, logit, before, after,
                         fisher_exact_two_sided(after.k, after.n - after.k, before.k, before.n - before.k)});
      }
    if (tests.empty()) continue;
    std::vector<double> ps;
    for (const auto& x : tests) ps.push_back(x.p);
    const auto qs = benjamini_hochberg(ps);
    for (std::size_t i = 0; i < tests.size(); ++i) {
      if (qs[i] >= t.rate_shift_q) continue;
      const auto& x = tests[i];
      rate_shift s{x.condition, x.logit ? "logit" : "token", x.before.k, x.before.n, x.after.k, x.after.n, x.p, qs[i]};
      const bool up = rate(x.after) > rate(x.before);
      if (j + confirm < seg.size()) {
        // It persists when every following audit stays on the new side and the window with
        // them still differs from the regime before it.
        bool kept = true;
        for (std::size_t f = j + 1; f <= j + confirm; ++f) {
          const auto c = count_of(*seg[f], x.condition, x.logit);
          if (c.n == 0 || (rate(c) > rate(x.before)) != up || rate(c) == rate(x.before)) kept = false;
        }
        const counts longer = pooled(seg, first, j + confirm + 1, x.condition, x.logit);
        kept = kept && fisher_exact_two_sided(longer.k, longer.n - longer.k, x.before.k, x.before.n - x.before.k) <
                           t.rate_shift_q;
        s.state = kept ? change_state::confirmed : change_state::not_persistent;
        if (kept) regime[{x.condition, x.logit}] = first;
      }
      out[j].push_back(s);
    }
  }
  return out;
}

std::string fraction(int k, int n) { return std::to_string(k) + "/" + std::to_string(n); }

// The raw fields in a few words: "prompt_tokens:<prompt>" fields counted, the others named.
std::string details_text(const std::vector<std::string>& fields) {
  std::string out;
  int prompts = 0;
  for (const auto& f : fields) {
    if (f.starts_with("prompt_tokens:")) {
      ++prompts;
      continue;
    }
    out += (out.empty() ? "" : ", ") + f;
  }
  if (prompts) out += (out.empty() ? "" : ", ") + std::string("the tokens of ") + std::to_string(prompts) + " prompt(s)";
  return out;
}

}  // namespace

std::string_view to_string(transition_kind k) { return enumerator_name(k); }

std::string_view to_string(change_state s) { return enumerator_name(s); }

bool rate_shift::upward() const {
  return after_n && before_n && static_cast<double>(after_k) / after_n > static_cast<double>(before_k) / before_n;
}

std::string transition::classification() const {
  if (kind == transition_kind::unchanged &&
      std::any_of(rate_shifts.begin(), rate_shifts.end(),
                  [](const rate_shift& s) { return s.state != change_state::not_persistent; }))
    return "rate_shift";
  return std::string(to_string(kind));
}

std::string transition::sentence() const {
  const std::string of = std::to_string(changed_baselines.size()) + " of " + std::to_string(shared_baselines) +
                         " baseline(s)";
  std::string s;
  switch (kind) {
    case transition_kind::unchanged:
      s = "unchanged: every one of " + std::to_string(shared_baselines) + " shared baseline(s) has the same digests";
      if (!changed_fields.empty())
        s += " although the fingerprint changed (" + details_text(field_details) + ")";
      break;
    case transition_kind::explained: {
      s = changed_baselines.empty() ? "explained: the fingerprint changed and every one of " +
                                          std::to_string(shared_baselines) + " shared baseline(s) kept its digests:"
                                    : "explained: " + of + " changed together with the fingerprint:";
      for (std::size_t i = 0; i < changed_fields.size(); ++i) s += (i ? ", " : " ") + changed_fields[i];
      s += " (" + details_text(field_details) + ")";
      for (std::size_t i = 0; i < machine_changes.size(); ++i) s += (i ? "; " : "; machine: ") + machine_changes[i];
      break;
    }
    case transition_kind::unexplained_step:
      s = "unexplained step (" + std::string(to_string(state.value_or(change_state::suspected))) + "): " + of +
          " changed and no declared field did (build, model identity, quantisation, template, settings, tokenisation)";
      if (canary_changed) s += "; the canary's numbers moved too";
      break;
    case transition_kind::intermittent:
      s = "intermittent: " + of + " moved between values the same fingerprint gave before, and an audit of them was "
          "not stable within itself: solo non-determinism";
      break;
    case transition_kind::reversion:
      s = "reversion: the numbers changed at audit " + std::to_string(reverts) + " and returned at audit " +
          std::to_string(to_job) + " to those of audit " + std::to_string(returned_to) + " (" + of +
          "); every audit was stable within itself: a change and its reversal, not noise";
      break;
    case transition_kind::not_comparable: s = "not comparable: " + reason; break;
  }
  if (revised_at)
    s += "; first classified " + first_classified + ", revised at audit " + std::to_string(revised_at);
  for (const auto& r : rate_shifts)
    s += "; rate shift (" + std::string(to_string(r.state)) + "): " + r.condition + " " + r.level + "-identical " +
         fraction(r.before_k, r.before_n) + " -> " + fraction(r.after_k, r.after_n) + " (p=" + fixed(r.p, 4) +
         ", q=" + fixed(r.q, 4) + ")";
  return s;
}

std::string_view to_string(series_state s) { return enumerator_name(s); }

std::optional<series_state> parse_series_state(std::string_view s) { return parse_by_name(kSeriesStates, s); }

std::string_view to_string(alert_kind k) { return enumerator_name(k); }

std::optional<alert_kind> parse_alert_kind(std::string_view s) { return parse_by_name(kAlertKinds, s); }

namespace {

// The series' state from its latest audits; `comp`: the indices of the comparable ones.
series_state state_of(const std::vector<series_audit>& audits, const std::vector<std::size_t>& comp,
                      const std::vector<transition>& transitions) {
  const series_audit* latest = nullptr;
  for (const auto& a : audits)
    if (a.ended || a.status == job_status::failed || a.status == job_status::interrupted) latest = &a;
  if (!latest) return series_state::no_history;
  if (latest->server_changed) return series_state::server_changed;
  if (!latest->ended) return series_state::failed;
  if (comp.size() < 2) return series_state::no_history;
  // The transition into the latest comparable audit, and the one before it (which the latest
  // may have confirmed).
  std::vector<const transition*> recent;
  for (auto it = transitions.rbegin(); it != transitions.rend() && recent.size() < 2; ++it)
    if (it->kind != transition_kind::not_comparable || it->to_job == audits[comp.back()].job) recent.push_back(&*it);
  auto has_shift = [](const transition* x, change_state s) {
    return x && std::any_of(x->rate_shifts.begin(), x->rate_shifts.end(), [&](const rate_shift& r) { return r.state == s; });
  };
  const transition* last = recent.empty() ? nullptr : recent[0];
  const transition* before = recent.size() > 1 ? recent[1] : nullptr;
  if (before && before->kind == transition_kind::unexplained_step && before->state == change_state::confirmed)
    return series_state::step_confirmed;
  if (last && last->kind == transition_kind::unexplained_step) return series_state::step_suspected;
  if (last && last->kind == transition_kind::intermittent) return series_state::intermittent;
  if (last && last->kind == transition_kind::reversion) return series_state::reverted;
  if (has_shift(before, change_state::confirmed)) return series_state::rate_shift_confirmed;
  if (has_shift(last, change_state::suspected)) return series_state::rate_shift_suspected;
  if (last && last->kind == transition_kind::explained) return series_state::explained_change;
  return series_state::stable;
}

// The same fingerprint gave other numbers. Noise goes back and forth, a step stays, and a
// change that is undone comes back. Back and forth is noise only with evidence of noise: an
// audit that was not stable within itself (repeats that differed, a canary that moved).
void classify_undeclared(const std::vector<const series_audit*>& seg, const series_audit& cur, std::size_t confirm,
                         transition& tr) {
  const auto at = static_cast<std::size_t>(std::find(seg.begin(), seg.end(), &cur) - seg.begin());
  std::optional<std::size_t> seen;  // the latest earlier audit (not the previous) with these numbers
  for (std::size_t k = 0; k + 1 < at; ++k)
    if (same_numbers(seg[k]->baselines, cur.baselines)) seen = k;
  if (seen) {
    if (all_self_consistent(seg, *seen, at)) {
      tr.kind = transition_kind::reversion;
      tr.returned_to = seg[*seen]->job;
    } else {
      tr.kind = transition_kind::intermittent;
    }
    return;
  }
  tr.kind = transition_kind::unexplained_step;
  tr.state = change_state::suspected;
  std::size_t kept = 0;
  std::optional<std::size_t> moved_at;
  for (std::size_t f = at + 1; f < seg.size() && f <= at + confirm; ++f) {
    if (same_numbers(seg[f]->baselines, cur.baselines)) ++kept;
    else if (!moved_at) moved_at = f;
  }
  if (moved_at) {
    // The next audits did not keep it: first a suspected step, revised by the audit that moved.
    tr.revised_at = seg[*moved_at]->job;
    tr.first_classified = "unexplained_step (suspected)";
    if (at > 0 && all_self_consistent(seg, at - 1, *moved_at)) {
      tr.state = change_state::not_persistent;  // a change that did not last (reverted, or changed again)
    } else {
      tr.kind = transition_kind::intermittent;
      tr.state.reset();
    }
  } else if (kept == confirm) {
    tr.state = change_state::confirmed;
  }
}

}  // namespace

namespace {

// The comparable audits split into segments where a declared field changed: each audit's segment,
// and the segments' audits (h.segments gets their summaries).
struct segmented {
  std::vector<std::size_t> comparable;
  std::vector<std::size_t> segment_of;
  std::vector<std::vector<const series_audit*>> segments;
};

segmented segment(const std::vector<series_audit>& audits, series_history& h) {
  segmented out;
  for (std::size_t i = 0; i < audits.size(); ++i)
    if (comparable(audits[i])) out.comparable.push_back(i);
  out.segment_of.assign(audits.size(), 0);
  const auto& comp = out.comparable;
  for (std::size_t c = 0; c < comp.size(); ++c) {
    const auto& a = audits[comp[c]];
    const auto declared = c ? declared_only(fields_between(audits[comp[c - 1]], a)) : std::vector<std::string>{};
    if (c == 0 || !declared.empty()) {
      out.segments.emplace_back();
      h.segments.push_back({a.job, a.job, 0, declared_categories(declared)});
    }
    out.segments.back().push_back(&a);
    h.segments.back().last_job = a.job;
    ++h.segments.back().audits;
    out.segment_of[comp[c]] = out.segments.size() - 1;
  }
  return out;
}

// The transition into an audit that is not comparable, and why.
transition not_comparable_into(const series_audit& prev, const series_audit& cur) {
  transition tr;
  tr.to_job = cur.job;
  tr.from_job = prev.job;
  tr.kind = transition_kind::not_comparable;
  tr.reason = cur.server_changed ? "the server changed during this audit: its numbers are not trusted"
              : !cur.ended       ? "the audit did not end with its baselines (" + std::string(to_string(cur.status)) + ")"
                                 : "the audit has no solo baseline";
  return tr;
}

// The transition between two comparable audits: what changed, and its kind.
transition between(const series_audit& prev, const series_audit& cur, const std::vector<const series_audit*>& seg,
                   const std::map<const series_audit*, std::vector<rate_shift>>& shifts, std::size_t confirm) {
  transition tr;
  tr.to_job = cur.job;
  tr.from_job = prev.job;
  const auto fields = fields_between(prev, cur);
  tr.field_details = declared_only(fields);
  tr.changed_fields = declared_categories(tr.field_details);
  tr.canary_changed = std::find(fields.begin(), fields.end(), "canary") != fields.end();
  tr.machine_changes = machine_changes_between(prev, cur);
  tr.changed_baselines = differing(prev.baselines, cur.baselines, tr.shared_baselines);
  if (auto it = shifts.find(&cur); it != shifts.end()) tr.rate_shifts = it->second;
  if (tr.shared_baselines == 0) {
    tr.kind = transition_kind::not_comparable;
    tr.reason = "no solo baseline in common (did the spec's prompts change?)";
  } else if (tr.changed_baselines.empty()) {
    // Another machine that gives the same numbers is worth saying: the findings travel.
    const bool machine = std::find(tr.changed_fields.begin(), tr.changed_fields.end(), "machine") != tr.changed_fields.end();
    tr.kind = machine ? transition_kind::explained : transition_kind::unchanged;
  } else if (!tr.changed_fields.empty()) {
    tr.kind = transition_kind::explained;
  } else {
    classify_undeclared(seg, cur, confirm, tr);
  }
  return tr;
}

// A reversion names the step it reverts: the last step into the numbers it left.
void name_reverted_steps(std::vector<transition>& transitions) {
  for (std::size_t i = 1; i < transitions.size(); ++i) {
    auto& r = transitions[i];
    if (r.kind != transition_kind::reversion) continue;
    for (std::size_t k = i; k-- > 0;)
      if (transitions[k].kind == transition_kind::unexplained_step && transitions[k].to_job > r.returned_to) {
        r.reverts = transitions[k].to_job;
        break;
      }
  }
}

}  // namespace

series_history analyse_series(const std::vector<series_audit>& audits, const history_thresholds& t) {
  series_history h;
  const auto s = segment(audits, h);
  std::map<const series_audit*, std::vector<rate_shift>> shifts;
  for (const auto& seg : s.segments)
    for (auto& [j, list] : rate_shifts_in(seg, t)) shifts[seg[j]] = std::move(list);
  const std::size_t confirm = static_cast<std::size_t>(std::max(1, t.confirm_after));
  std::optional<std::size_t> last_comparable;
  for (std::size_t i = 0; i < audits.size(); ++i) {
    const auto& cur = audits[i];
    if (i > 0 && !comparable(cur)) {
      h.transitions.push_back(not_comparable_into(audits[i - 1], cur));
      continue;
    }
    if (i > 0 && last_comparable)
      h.transitions.push_back(between(audits[*last_comparable], cur, s.segments[s.segment_of[i]], shifts, confirm));
    if (comparable(cur)) last_comparable = i;
  }
  name_reverted_steps(h.transitions);
  h.state = state_of(audits, s.comparable, h.transitions);
  return h;
}

}  // namespace logitaudit::audit
