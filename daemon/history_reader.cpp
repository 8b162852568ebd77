// Stored audits -> the history's plain values, on the db thread.
#include "audit/reference.hpp"
#include "history_reader.hpp"

#include "audit/numbers.hpp"
#include "audit/plan.hpp"
#include "db_call.hpp"

namespace logitaudit::daemon {

std::string baseline_label(const storage::run_record& r) {
  std::string label = r.prompt;
  if (r.temperature != 0) label += " [temperature " + audit::fixed(r.temperature, 2) + "]";
  if (r.seed) label += " [seed " + std::to_string(*r.seed) + "]";
  return label;
}

// This backend's streams against the spec's reference, from the stored findings.
std::optional<audit::reference_summary> reference_of(const audit::audit_spec& spec, const storage::job_record& job,
                                                     const std::string& backend) {
  const auto* ref = job.findings ? job.findings->sections.find<audit::reference_findings>() : nullptr;
  if (!ref) return std::nullopt;
  const auto plan = audit::make_plan(spec);
  audit::reference_summary r;
  r.audit = ref->audit;
  for (const auto& v : ref->verdicts) {
    if (v.group >= plan.groups.size() || plan.groups[v.group].backend != backend) continue;
    const bool baseline = plan.groups[v.group].is_baseline;
    if (v.outcome == audit::reference_outcome::not_comparable) {
      ++r.not_comparable;
      r.baselines_not_comparable += baseline;
      continue;
    }
    const bool match = v.outcome == audit::reference_outcome::matches_reference;
    ++r.streams;
    r.streams_matching += match;
    r.baselines += baseline;
    r.baselines_matching += baseline && match;
  }
  if (auto it = ref->fingerprint_differences.find(backend); it != ref->fingerprint_differences.end())
    r.differing_fields = it->second;
  return r;
}

audit::series_audit load_series_audit(storage::store& s, const storage::job_record& job, const std::string& backend,
                                      const audit::evidence_thresholds& evidence) {
  audit::series_audit a;
  a.job = job.id;
  a.time = job.created_at;
  a.status = job.status;
  a.ended = job.status == audit::job_status::done;
  if (job.findings) {
    a.valid = job.findings->valid;
    a.invalid_reason = job.findings->invalid_reason;
  }
  for (auto& r : s.evidence().fingerprint_records(job.id)) {
    if (r.backend != backend) continue;
    (r.phase == audit::fingerprint_phase::before ? a.before : a.after) = std::move(r.fingerprint);
  }
  a.server_changed = a.before && a.after && !a.before->api.empty() && !a.after->api.empty() &&
                     !audit::fingerprint_differences(*a.before, *a.after).empty();

  // The spec names each condition and says which are controls, in its order.
  std::map<std::string, std::size_t> index;
  const auto& spec = job.spec;
  if (spec) {
    for (const auto& c : spec->conditions) {
      index[c.name] = a.conditions.size();
      a.conditions.push_back({c.name, audit::is_control(c.kind), c.kind == audit::condition_kind::repeat});
    }
  }
  if (spec && spec->reference_audit && job.findings) a.reference = reference_of(*spec, job, backend);
  auto counts_of = [&](const std::string& condition) -> audit::condition_counts& {
    auto [it, fresh] = index.try_emplace(condition, a.conditions.size());
    if (fresh) a.conditions.push_back({condition});
    return a.conditions[it->second];
  };
  storage::run_filter filter;
  filter.backend = backend;
  for (const auto& r : s.evidence().runs(job.id, filter)) {
    if (!r.compared) {
      // Uncompared runs that are not baselines (cache primers, cross-batch fillers, neighbours)
      // had a batch or a cache by design; a baseline that had company or a cache says nothing.
      const bool solo = r.condition == audit::kBaselineCondition &&
                        audit::not_solo_reason(r.company, r.server.cache_n, evidence).empty();
      if (solo && r.ok && r.digests) a.baselines[baseline_label(r)] = {r.digests->logit.hex(), r.digests->token.hex()};
      continue;
    }
    auto& c = counts_of(r.condition);
    if (!r.ok || !r.verdict) ++c.failed;
    else if (r.verdict->flag != audit::evidence_flag::none) ++c.flagged;
    else {
      ++c.n;
      c.logit_identical += r.verdict->logit_identical;
      c.token_identical += r.verdict->token_identical;
    }
  }
  for (const auto& b : s.evidence().bursts(job.id)) {
    if (b.backend != backend) continue;
    auto& c = counts_of(b.condition);
    ++c.bursts;
    c.batched += b.verdict && b.verdict->batched;
  }
  // Conditions the spec names that ran nowhere on this backend say nothing.
  std::erase_if(a.conditions, [](const audit::condition_counts& c) { return c.n + c.flagged + c.failed + c.bursts == 0; });
  return a;
}

net::awaitable<std::vector<api::series_view>> history_reader::series(storage::series_filter filter, int audits) {
  auto load = [filter, audits, t = thresholds_, e = evidence_](storage::store& s) {
    std::vector<api::series_view> out;
    for (auto& summary : s.jobs().series(filter)) {
      api::series_view v;
      v.thresholds = t;
      for (const auto& job : s.jobs().series_jobs(summary.key, audits)) {
        v.audits.push_back(load_series_audit(s, job, summary.key.backend, e));
        v.predictions[job.id] = s.jobs().predictions(job.id);
      }
      v.history = audit::analyse_series(v.audits, t);
      v.summary = std::move(summary);
      out.push_back(std::move(v));
    }
    return out;
  };
  co_return co_await on_db(db_, std::move(load));
}

net::awaitable<std::vector<storage::alert_delivery>> history_reader::deliveries(int limit) {
  auto load = [limit](storage::store& s) { return s.alerts().recent(limit); };
  co_return co_await on_db(db_, std::move(load));
}

}  // namespace logitaudit::daemon
