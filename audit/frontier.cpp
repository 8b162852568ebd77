// Throughput probes and frontier rows.
#include "frontier.hpp"

#include <algorithm>

#include "findings.hpp"

namespace logitaudit::audit {

std::vector<throughput_result> throughput_results(const audit_spec& spec, const audit_plan& plan,
                                                  const std::vector<observed_run>& runs,
                                                  const std::map<std::size_t, burst_measurement>& bursts) {
  std::map<std::size_t, std::vector<const observed_run*>> by_group;
  for (const auto& r : runs) by_group[r.group].push_back(&r);
  std::vector<throughput_result> out;
  for (const auto& b : spec.backends) {
    throughput_result t;
    t.backend = b.name;
    std::int64_t wall_ns = 0;
    for (const auto& g : plan.groups) {
      if (g.backend != b.name || g.kind != condition_kind::throughput) continue;
      t.width = static_cast<int>(g.requests.size());
      auto rs = by_group.find(g.index);
      auto m = bursts.find(g.index);
      if (rs == by_group.end() || m == bursts.end() || rs->second.size() != g.requests.size()) continue;
      long long tokens = 0;
      bool whole = true;
      for (const auto* r : rs->second) {
        if (!r->stream) whole = false;
        else tokens += static_cast<long long>(r->stream->tokens.size());
      }
      if (!whole) continue;  // a burst with a failed request measures nothing
      ++t.bursts;
      t.requests += static_cast<int>(g.requests.size());
      t.tokens += tokens;
      wall_ns += m->second.wall_ns;
    }
    if (t.width == 0) continue;  // this backend has no probe
    t.seconds = static_cast<double>(wall_ns) / 1e9;
    if (t.seconds > 0) {
      t.tokens_per_s = static_cast<double>(t.tokens) / t.seconds;
      t.requests_per_s = t.requests / t.seconds;
    }
    out.push_back(t);
  }
  return out;
}

std::vector<frontier_row> frontier_rows(const audit_spec& spec, const audit_plan&, const findings& f) {
  std::vector<frontier_row> rows;
  if (!spec.sweep && section<frontier_section>(f).throughput.empty()) return rows;
  double fastest = 0;
  for (const auto& t : section<frontier_section>(f).throughput) fastest = std::max(fastest, t.tokens_per_s);
  for (const auto& b : spec.backends) {
    frontier_row r;
    r.backend = b.name;
    r.settings = b.managed;
    for (const auto& v : f.verdicts) {
      if (v.backend != b.name) continue;
      if (v.failed) {
        ++r.failed;
        continue;
      }
      if (!v.result) continue;
      const condition* c = nullptr;
      for (const auto& x : spec.conditions)
        if (x.name == v.condition) c = &x;
      if (!c || is_control(c->kind)) continue;
      const bool load = c->kind == condition_kind::concurrent || c->kind == condition_kind::cross_batch ||
                        (c->kind == condition_kind::threshold_search && v.flag == evidence_flag::none &&
                         f.bursts.count(v.group));
      if (load) {
        ++r.load_n;
        r.load_logit_identical += v.result->logit_identical;
        r.load_token_identical += v.result->token_identical;
        r.load_batched += v.flag == evidence_flag::none;
      } else if (c->kind == condition_kind::repeat || c->kind == condition_kind::threshold_search) {
        ++r.serial_n;
        r.serial_logit_identical += v.result->logit_identical;
      } else if (c->kind == condition_kind::cache_reuse) {
        ++r.cache_n;
        r.cache_logit_identical += v.result->logit_identical;
      }
    }
    for (const auto& t : section<frontier_section>(f).throughput)
      if (t.backend == b.name && t.bursts > 0) {
        r.tokens_per_s = t.tokens_per_s;
        r.requests_per_s = t.requests_per_s;
        if (fastest > 0) r.cost = 1 - t.tokens_per_s / fastest;
      }
    const bool all_identical = r.load_logit_identical == r.load_n && r.serial_logit_identical == r.serial_n &&
                               r.cache_logit_identical == r.cache_n;
    r.reproducible = r.load_n > 0 && r.failed == 0 && all_identical;
    if (r.failed > 0) r.note = std::to_string(r.failed) + " compared requests failed";
    else if (r.load_n == 0) r.note = "nothing ran under load";
    else if (r.serial_logit_identical < r.serial_n) r.note = "serial repeats moved";
    else if (r.load_logit_identical < r.load_n) r.note = "logits moved under load";
    else if (r.cache_logit_identical < r.cache_n) r.note = "logits moved on cache reuse";
    else if (r.load_batched == 0) r.note = "identical, but no burst batched: the server took them one at a time";
    else if (r.load_batched < r.load_n) r.note = "identical; some bursts did not batch";
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace logitaudit::audit
