// Width decisions and the search's state from judged streams.
#include "search.hpp"

#include <array>

#include "enum_names.hpp"
#include "findings.hpp"

namespace logitaudit::audit {

std::string_view to_string(search_decision d) { return enumerator_name(d); }

std::optional<search_decision> parse_search_decision(std::string_view s) {
  return parse_by_name(std::array{search_decision::unknown, search_decision::same, search_decision::different,
                                  search_decision::not_batched},
                       s);
}

search_decision decide_width(int ref_identical, int ref_n, int identical, int n, int trials, int batched_trials,
                             const search_settings& s, double* p_out) {
  if (p_out) *p_out = 1;
  if (batched_trials == 0)
    return trials >= s.max_trials ? search_decision::not_batched : search_decision::unknown;
  if (trials < s.min_trials || n == 0 || ref_n == 0) return search_decision::unknown;
  // Columns: identical, diverged; rows: the reference, this width.
  const double p = fisher_exact_two_sided(ref_identical, ref_n - ref_identical, identical, n - identical);
  if (p_out) *p_out = p;
  const double ref_rate = static_cast<double>(ref_n - ref_identical) / ref_n;
  const double rate = static_cast<double>(n - identical) / n;
  if (p < s.alpha && rate > ref_rate) return search_decision::different;
  // SAME when the data rule out (95%) a divergence rate `magnitude` above the reference's.
  const double upper = jeffreys_interval(n - identical, n, 0.90).high;  // one-sided 95%
  if (upper - ref_rate < s.magnitude) return search_decision::same;
  return search_decision::unknown;
}

namespace {

struct width_counts {
  int trials = 0, batched = 0, n = 0, logit = 0, token = 0;
};

// The counts of one (backend, condition): the reference, and each width in plan order.
struct search_counts {
  int ref_n = 0, ref_logit = 0, ref_token = 0;
  std::map<int, width_counts> widths;
};

search_counts count_search(const audit_plan& plan, const findings& f, const std::string& backend,
                           const std::string& condition, std::size_t before_group = SIZE_MAX) {
  std::map<std::size_t, std::vector<const run_verdict*>> by_group;
  for (const auto& v : f.verdicts)
    if (v.backend == backend && v.condition == condition) by_group[v.group].push_back(&v);
  search_counts c;
  for (const auto& g : plan.groups) {
    if (g.backend != backend || g.condition != condition || g.index >= before_group) continue;
    auto vs = by_group.find(g.index);
    if (vs == by_group.end()) continue;  // not run: decided before it
    if (g.mode == group_mode::serial) {
      for (const auto* v : vs->second)
        if (v->counted()) {
          ++c.ref_n;
          c.ref_logit += v->result->logit_identical;
          c.ref_token += v->result->token_identical;
        }
      continue;
    }
    auto& w = c.widths[static_cast<int>(g.requests.size())];
    bool ran = false;
    for (const auto* v : vs->second) ran = ran || !v->failed;
    if (!ran) continue;
    ++w.trials;
    auto b = f.bursts.find(g.index);
    if (b == f.bursts.end() || !b->second.batched) continue;
    ++w.batched;
    for (const auto* v : vs->second)
      if (v->counted()) {
        ++w.n;
        w.logit += v->result->logit_identical;
        w.token += v->result->token_identical;
      }
  }
  return c;
}

search_width decide(int width, const width_counts& w, const search_counts& c, const search_settings& s) {
  search_width out;
  out.width = width;
  out.trials = w.trials;
  out.batched_trials = w.batched;
  out.n = w.n;
  out.logit_identical = w.logit;
  out.token_identical = w.token;
  out.logit_interval = jeffreys_interval(w.logit, w.n);
  out.token_interval = jeffreys_interval(w.token, w.n);
  out.logit = decide_width(c.ref_logit, c.ref_n, w.logit, w.n, w.trials, w.batched, s, &out.logit_p);
  out.token = decide_width(c.ref_token, c.ref_n, w.token, w.n, w.trials, w.batched, s, &out.token_p);
  return out;
}

}  // namespace

std::vector<search_result> threshold_searches(const audit_spec& spec, const audit_plan& plan, const findings& f) {
  std::vector<search_result> out;
  for (const auto& c : spec.conditions) {
    if (c.kind != condition_kind::threshold_search) continue;
    for (const auto& b : spec.backends) {
      const auto counts = count_search(plan, f, b.name, c.name);
      search_result r;
      r.backend = b.name;
      r.condition = c.name;
      r.reference_n = counts.ref_n;
      r.reference_logit_identical = counts.ref_logit;
      r.reference_token_identical = counts.ref_token;
      for (int width : search_widths(c)) {
        auto it = counts.widths.find(width);
        const auto w = decide(width, it == counts.widths.end() ? width_counts{} : it->second, counts, c.search);
        if (w.trials == 0) continue;
        if (w.logit == search_decision::different && !r.logit_threshold) r.logit_threshold = width;
        if (w.token == search_decision::different && !r.token_threshold) r.token_threshold = width;
        r.widths.push_back(w);
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

bool search_needs(const audit_spec& spec, const audit_plan& plan, const findings& so_far, const request_group& g) {
  if (g.kind != condition_kind::threshold_search || g.mode != group_mode::burst) return true;
  const condition* c = nullptr;
  for (const auto& x : spec.conditions)
    if (x.name == g.condition) c = &x;
  if (!c) return true;
  const int width = static_cast<int>(g.requests.size());
  const auto counts = count_search(plan, so_far, g.backend, g.condition, g.index);
  auto it = counts.widths.find(width);
  const width_counts w = it == counts.widths.end() ? width_counts{} : it->second;
  if (w.trials >= c->search.max_trials) return false;
  if (w.trials < c->search.min_trials) return true;
  return !decide(width, w, counts, c->search).decided();
}

}  // namespace logitaudit::audit
