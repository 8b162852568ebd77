// verify: digests from bytes, identity from digests, predictions from identity.
#include "verify.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "audit/evidence.hpp"
#include "audit/findings.hpp"
#include "audit/numbers.hpp"
#include "audit/plan.hpp"
#include "audit/search.hpp"
#include "audit/stream_encoding.hpp"
#include "storage/documents.hpp"

namespace logitaudit::cli {
namespace {

// Hex of a stored 16-byte digest blob (any other length is shown as it is, in hex).
std::string hex(const std::vector<std::uint8_t>& b) {
  audit::digest128 d;
  if (b.size() != 16) return "(" + std::to_string(b.size()) + " bytes)";
  std::copy(b.begin(), b.end(), d.bytes);
  return d.hex();
}

std::vector<std::uint8_t> bytes_of(const audit::digest128& d) { return {d.bytes, d.bytes + 16}; }

std::string name_of(std::int64_t job, const storage::run_record& r) {
  return "job " + std::to_string(job) + " run " + std::to_string(r.id) + " (group " + std::to_string(r.group) +
         " request " + std::to_string(r.request) + ", " + r.backend + "/" + r.condition + ")";
}

// A stream's digests as recomputed from its stored encoding.
struct recomputed {
  std::vector<std::uint8_t> token, logit;
  bool valid = false;
};

// A judged stream: its identity with its baseline, from the recomputed digests.
struct identity {
  std::string condition;
  bool logit = false, token = false;
  bool counted = true;  // its stored verdict carries no evidence flag
  std::size_t group = 0;
  audit::evidence_flag flag = audit::evidence_flag::none;
};

// What one job's checks share.
struct job_evidence {
  std::int64_t job = 0;
  std::vector<storage::run_record> runs;
  std::map<std::size_t, bool> burst_batched;  // a burst's stored verdict: batched or not
};

// 1. Digests, recomputed from the stored encoding.
std::map<std::int64_t, recomputed> recompute_digests(storage::store& store, const job_evidence& e, verify_report& rep) {
  const auto job = e.job;
  std::map<std::int64_t, const storage::run_record*> by_id;
  for (const auto& r : e.runs) by_id[r.id] = &r;
  std::map<std::int64_t, recomputed> digests;  // by run id
  for (const auto& st : store.evidence().stored_streams(job)) {
    ++rep.streams;
    const auto& r = *by_id.at(st.run);
    if (!st.pruned_at.empty() && st.encoding.empty()) {
      // Pruned by the retention policy: the digests and verdicts stay, and are what is checked.
      ++rep.pruned;
      digests[st.run] = recomputed{st.token_digest, st.logit_digest, true};
      continue;
    }
    auto d = audit::digest_canonical(st.encoding);
    if (!d) {
      rep.problems.push_back(name_of(job, r) + (st.encoding.empty() ? ": the stored encoding is empty, and no retention "
                                                                        "pruned it: its bytes are lost"
                                                                      : ": the stored encoding does not decode"));
      continue;
    }
    recomputed c{bytes_of(d->token), bytes_of(d->logit), true};
    if (c.logit != st.logit_digest)
      rep.problems.push_back(name_of(job, r) + ": logit digest stored " + hex(st.logit_digest) + ", recomputed " + hex(c.logit));
    if (c.token != st.token_digest)
      rep.problems.push_back(name_of(job, r) + ": token digest stored " + hex(st.token_digest) + ", recomputed " + hex(c.token));
    digests[st.run] = std::move(c);
  }
  return digests;
}

// 2. Identity verdicts, from the recomputed digests against the baseline's; `finished`: the
// job's stored verdicts are compared too.
std::vector<identity> judge_identities(const job_evidence& e, const std::map<std::int64_t, recomputed>& known, bool finished,
                                       verify_report& rep) {
  const auto job = e.job;
  static const recomputed none;  // a stream whose encoding did not decode is not judged
  auto digest_of = [&](std::int64_t run) -> const recomputed& {
    auto it = known.find(run);
    return it == known.end() ? none : it->second;
  };
  std::map<std::pair<std::size_t, std::size_t>, const storage::run_record*> by_position;
  for (const auto& r : e.runs) by_position[{r.group, r.request}] = &r;
  std::vector<identity> judged;
  for (const auto& r : e.runs) {
    if (!r.compared || !r.ok || !r.baseline_group) continue;
    auto base = by_position.find({static_cast<std::size_t>(*r.baseline_group), 0});
    if (base == by_position.end() || !base->second->ok) continue;  // not judged: its baseline failed
    const auto& mine = digest_of(r.id);
    const auto& theirs = digest_of(base->second->id);
    if (!mine.valid || !theirs.valid) continue;
    identity id{r.condition, mine.logit == theirs.logit, mine.token == theirs.token, true, r.group};
    if (!finished) {
      judged.push_back(id);
      continue;
    }
    ++rep.verdicts;
    if (!r.verdict) {
      rep.problems.push_back(name_of(job, r) + ": no stored verdict for a judged stream");
      continue;
    }
    const auto& v = *r.verdict;
    id.counted = v.flag == audit::evidence_flag::none;
    id.flag = v.flag;
    judged.push_back(id);
    if (v.logit_identical != id.logit || v.token_identical != id.token)
      rep.problems.push_back(name_of(job, r) + ": stored verdict logit " + (v.logit_identical ? "identical" : "differs") +
                             "/token " + (v.token_identical ? "identical" : "differs") + ", recomputed logit " +
                             (id.logit ? "identical" : "differs") + "/token " + (id.token ? "identical" : "differs"));
  }

  return judged;
}

// 2b. Each stored verdict's flag, from the evidence stored beside it, under the one precedence
// the writer uses (audit::choose_flag): not_solo from the baseline's and the request's own
// company and cache, not_batched from the burst's stored verdict. The flags that rest on what
// verify does not recompute (control_ineffective, level_not_reached, not_reused) enter as
// stored, under the same precedence.
void verify_flags(const job_evidence& e, const audit::audit_plan& plan, const audit::findings& stored, verify_report& rep) {
  const auto& t = stored.thresholds;
  std::map<std::pair<std::size_t, std::size_t>, const storage::run_record*> by_position;
  for (const auto& r : e.runs) by_position[{r.group, r.request}] = &r;
  for (const auto& r : e.runs) {
    if (!r.compared || !r.ok || !r.baseline_group || !r.verdict || r.group >= plan.groups.size()) continue;
    auto base = by_position.find({static_cast<std::size_t>(*r.baseline_group), 0});
    if (base == by_position.end() || !base->second->ok) continue;
    const auto& g = plan.groups[r.group];
    const auto& v = *r.verdict;
    audit::raised_flags raised;
    raised.baseline_not_alone = audit::not_solo_reason(base->second->company, base->second->server.cache_n, t);
    if (g.mode == audit::group_mode::serial && r.company && *r.company > t.max_solo_busy_slots)
      raised.ran_with_company = "busy slots per decode " + audit::fixed(*r.company, 2);
    if (g.mode == audit::group_mode::burst && audit::flag_of(g.kind) == audit::evidence_flag::not_batched)
      if (auto b = e.burst_batched.find(r.group); b == e.burst_batched.end() || !b->second) raised.not_batched = "stored not batched";
    const std::string as_stored = "as stored";
    if (v.flag == audit::evidence_flag::control_ineffective) raised.control_ineffective = as_stored;
    if (v.flag == audit::evidence_flag::level_not_reached) raised.level_not_reached = as_stored;
    if (v.flag == audit::evidence_flag::not_reused) raised.not_reused = as_stored;
    const auto want = audit::choose_flag(raised);
    if (want.flag == v.flag) continue;
    rep.problems.push_back(name_of(e.job, r) + ": its verdict is flagged '" + std::string(audit::to_string(v.flag)) +
                           "', but its stored evidence gives '" + std::string(audit::to_string(want.flag)) + "'" +
                           (want.reason.empty() || want.reason == as_stored ? "" : " (" + want.reason + ")"));
  }
}

// 3. Predictions, from the recomputed identities.
void verify_predictions(storage::store& store, std::int64_t job, const audit::audit_spec& spec,
                        const std::vector<identity>& judged, verify_report& rep) {
  std::map<std::string, storage::prediction_record> stored_p;
  for (const auto& p : store.jobs().predictions(job)) stored_p[p.id] = p;
  for (const auto& p : spec.predictions) {
    ++rep.predictions;
    const std::set<std::string> names(p.conditions.begin(), p.conditions.end());
    int k = 0, n = 0;
    for (const auto& id : judged) {
      if (!names.count(id.condition) || !id.counted) continue;
      ++n;
      const bool identical = p.level == audit::identity_level::logit ? id.logit : id.token;
      k += identical == (p.expect == audit::expectation::identical);
    }
    const std::string outcome(audit::to_string(audit::decide(p, k, n)));  // the writer's own rule
    auto s = stored_p.find(p.id);
    if (s == stored_p.end()) {
      rep.problems.push_back("job " + std::to_string(job) + " prediction " + p.id + ": not stored");
      continue;
    }
    const std::string stored_outcome(audit::to_string(s->second.outcome));
    if (s->second.k != k || s->second.n != n || stored_outcome != outcome)
      rep.problems.push_back("job " + std::to_string(job) + " prediction " + p.id + ": stored " + stored_outcome + " " +
                             std::to_string(s->second.k) + "/" + std::to_string(s->second.n) + ", recomputed " + outcome +
                             " " + std::to_string(k) + "/" + std::to_string(n));
  }

}

// 4. Threshold searches, recounted from the recomputed identities and the stored burst
// verdicts, and decided again.
void verify_searches(const job_evidence& e, const audit::audit_spec& spec, const audit::audit_plan& plan,
                     const audit::findings& stored_findings, const std::vector<identity>& judged, verify_report& rep) {
  const auto job = e.job;
  const auto& burst_batched = e.burst_batched;
  std::map<std::size_t, std::vector<const identity*>> by_group;
  for (const auto& id : judged) by_group[id.group].push_back(&id);
  const std::string at = "job " + std::to_string(job) + " ";
  for (const auto& stored : stored_findings.searches) {
    const audit::condition* c = nullptr;
    for (const auto& x : spec.conditions)
      if (x.name == stored.condition) c = &x;
    if (!c) {
      rep.problems.push_back(at + "search " + stored.condition + ": no such condition in the spec");
      continue;
    }
    int ref_n = 0, ref_logit = 0, ref_token = 0;
    std::map<int, std::array<int, 5>> widths;  // trials, batched trials, n, logit, token
    for (const auto& g : plan.groups) {
      if (g.backend != stored.backend || g.condition != stored.condition) continue;
      auto ids = by_group.find(g.index);
      if (ids == by_group.end()) continue;
      if (g.mode == audit::group_mode::serial) {
        for (const auto* id : ids->second) {
          ++ref_n;
          ref_logit += id->logit;
          ref_token += id->token;
        }
        continue;
      }
      auto& w = widths[static_cast<int>(g.requests.size())];
      ++w[0];
      auto b = burst_batched.find(g.index);
      if (b == burst_batched.end() || !b->second) continue;
      ++w[1];
      for (const auto* id : ids->second) {
        ++w[2];
        w[3] += id->logit;
        w[4] += id->token;
      }
    }
    const std::string name = at + "search " + stored.backend + "/" + stored.condition;
    if (stored.reference_n != ref_n || stored.reference_logit_identical != ref_logit)
      rep.problems.push_back(name + ": reference stored " + std::to_string(stored.reference_logit_identical) + "/" +
                             std::to_string(stored.reference_n) + ", recounted " + std::to_string(ref_logit) + "/" +
                             std::to_string(ref_n));
    for (const auto& w : stored.widths) {
      ++rep.verdicts;
      const auto& c5 = widths[w.width];
      const auto logit = audit::decide_width(ref_logit, ref_n, c5[3], c5[2], c5[0], c5[1], c->search);
      const auto token = audit::decide_width(ref_token, ref_n, c5[4], c5[2], c5[0], c5[1], c->search);
      if (w.trials != c5[0] || w.batched_trials != c5[1] || w.n != c5[2] || w.logit_identical != c5[3] ||
          w.token_identical != c5[4] || w.logit != logit || w.token != token)
        rep.problems.push_back(name + " width " + std::to_string(w.width) + ": stored " + std::to_string(w.logit_identical) +
                               "/" + std::to_string(w.n) + " in " + std::to_string(w.trials) + " trials, " +
                               std::string(audit::to_string(w.logit)) + "/" + std::string(audit::to_string(w.token)) +
                               "; recounted " + std::to_string(c5[3]) + "/" + std::to_string(c5[2]) + " in " +
                               std::to_string(c5[0]) + " trials, " + std::string(audit::to_string(logit)) + "/" +
                               std::string(audit::to_string(token)));
    }
  }
}

// 5. Throughput probes, from the stored token counts and bursts.
void verify_throughput(storage::store& store, const job_evidence& e, const audit::audit_plan& plan,
                       const audit::findings& stored_findings, verify_report& rep) {
  const auto job = e.job;
  const auto& runs = e.runs;
  const std::string at = "job " + std::to_string(job) + " ";
  if (!stored_findings.throughput.empty()) {
    std::map<std::size_t, std::int64_t> wall;
    for (const auto& b : store.evidence().bursts(job)) wall[b.group] = b.measurement.wall_ns;
    for (const auto& t : stored_findings.throughput) {
      long long tokens = 0;
      std::int64_t ns = 0;
      std::map<std::size_t, std::pair<int, long long>> groups;  // ok runs, tokens
      for (const auto& r : runs)
        if (r.backend == t.backend && r.condition != "baseline")
          for (const auto& g : plan.groups)
            if (g.index == r.group && g.kind == audit::condition_kind::throughput) {
              auto& e = groups[r.group];
              e.first += r.ok;
              e.second += r.token_count;
            }
      for (const auto& [group, e] : groups)
        if (static_cast<std::size_t>(e.first) == plan.groups[group].requests.size() && wall.count(group)) {
          tokens += e.second;
          ns += wall[group];
        }
      const double tps = ns > 0 ? static_cast<double>(tokens) / (static_cast<double>(ns) / 1e9) : 0;
      if (tokens != t.tokens || std::abs(tps - t.tokens_per_s) > 1e-6 * std::max(1.0, tps))
        rep.problems.push_back(at + "throughput of " + t.backend + ": stored " + std::to_string(t.tokens) + " tokens at " +
                               std::to_string(t.tokens_per_s) + "/s, recomputed " + std::to_string(tokens) + " at " +
                               std::to_string(tps) + "/s");
    }
  }
}

// 6. Each analysis's recount (audit/analysis.hpp), from the stored runs with their recomputed
// digests and the identities judged from them.
audit::recounted_run recounted_of(const storage::run_record& r, const std::map<std::int64_t, recomputed>& digests) {
  audit::recounted_run x;
  x.id = r.id;
  x.group = r.group;
  x.request = r.request;
  x.replicate = r.replicate;
  x.backend = r.backend;
  x.condition = r.condition;
  x.prompt = r.prompt;
  x.temperature = r.temperature;
  x.seed = r.seed;
  x.ok = r.ok;
  x.compared = r.compared;
  x.baseline_group = r.baseline_group;
  x.company = r.company;
  x.cache_n = r.server.cache_n;
  x.token_count = r.token_count;
  x.has_verdict = r.verdict.has_value();
  if (r.verdict) x.flag = r.verdict->flag;
  if (auto d = digests.find(r.id); d != digests.end() && d->second.valid) {
    x.logit_digest = hex(d->second.logit);
    x.token_digest = hex(d->second.token);
  }
  return x;
}

void recount_analyses(storage::store& store, const job_evidence& e, const audit::audit_spec& spec, const audit::audit_plan& plan,
                      const audit::findings& stored, const std::map<std::int64_t, recomputed>& digests,
                      const std::vector<identity>& judged, verify_report& rep) {
  audit::recount_input in{.job = e.job, .spec = spec, .plan = plan, .stored = stored};
  for (const auto& r : e.runs) in.runs.push_back(recounted_of(r, digests));
  for (const auto& id : judged) in.judged.push_back({id.condition, id.logit, id.token, id.counted, id.group, id.flag});
  in.burst_batched = e.burst_batched;
  for (const auto& b : store.evidence().bursts(e.job)) in.burst_wall_ns[b.group] = b.measurement.wall_ns;
  for (const auto& p : store.jobs().predictions(e.job))
    in.predictions.push_back({p.id, std::string(audit::to_string(p.outcome)), p.k, p.n});
  audit::recount_report out;
  for (const auto* a : audit::analyses()) a->recount(in, out);
  rep.problems.insert(rep.problems.end(), out.problems.begin(), out.problems.end());
  rep.verdicts += out.verdicts;
  rep.predictions += out.predictions;
}

// 7. A certify job's certificate, recounted from the recomputed identities: per family, the
// streams that moved (whatever their batching evidence: a divergence refutes) and those judged
// at all, then the outcome those counts allow.
void verify_certificate(const job_evidence& e, const audit::audit_spec& spec, const audit::findings& stored,
                        const std::vector<identity>& judged, verify_report& rep) {
  const auto& c = *stored.certificate;
  const std::string at = "job " + std::to_string(e.job) + " certificate ";
  std::map<std::string, std::string> family_of;
  for (const auto& x : spec.conditions) family_of[x.name] = x.family;
  std::map<std::string, std::pair<int, int>> count;  // family -> judged, moved
  int moved = 0;
  for (const auto& id : judged) {
    auto f = family_of.find(id.condition);
    if (f == family_of.end() || f->second.empty()) continue;
    const bool m = c.level == audit::identity_level::logit ? !id.logit : !id.token;
    ++count[f->second].first;
    count[f->second].second += m;
    moved += m;
  }
  for (const auto& fr : c.families) {
    const auto [n, m] = count[fr.family];
    if (fr.divergent != m)
      rep.problems.push_back(at + fr.family + ": stored " + std::to_string(fr.divergent) + " streams moved, recomputed " +
                             std::to_string(m));
    if (fr.compared + fr.flagged != n)
      rep.problems.push_back(at + fr.family + ": stored " + std::to_string(fr.compared + fr.flagged) +
                             " judged streams, recomputed " + std::to_string(n));
    if ((fr.status == audit::family_status::refuted) != (m > 0))
      rep.problems.push_back(at + fr.family + ": stored " + std::string(audit::to_string(fr.status)) + " with " +
                             std::to_string(m) + " recomputed streams moved");
    if (fr.status == audit::family_status::passed && fr.compared > 0 &&
        std::abs(fr.bound95 - audit::upper_bound95(fr.divergent, fr.compared)) > 1e-9)
      rep.problems.push_back(at + fr.family + ": stored 95% bound " + std::to_string(fr.bound95) + ", recomputed " +
                             std::to_string(audit::upper_bound95(fr.divergent, fr.compared)));
  }
  if (c.counterexamples_total != moved)
    rep.problems.push_back(at + "counts " + std::to_string(c.counterexamples_total) + " counterexamples, recomputed " +
                           std::to_string(moved));
  const bool all_passed = std::all_of(c.families.begin(), c.families.end(),
                                      [](const audit::family_result& f) { return f.status == audit::family_status::passed; });
  const bool all_ran = std::all_of(c.families.begin(), c.families.end(), [](const audit::family_result& f) { return f.not_run == 0; });
  if (c.outcome == audit::certificate_outcome::refuted ? moved == 0
      : c.outcome == audit::certificate_outcome::certified ? moved > 0 || !all_passed || !all_ran
      : c.outcome == audit::certificate_outcome::incomplete ? moved > 0 || (all_passed && all_ran)
                                                            : false)
    rep.problems.push_back(at + "says " + std::string(audit::to_string(c.outcome)) + " with " + std::to_string(moved) +
                           " recomputed streams moved");
}

void verify_job(storage::store& store, std::int64_t job, verify_report& rep) {
  ++rep.jobs;
  job_evidence e;
  e.job = job;
  e.runs = store.evidence().runs(job);
  for (const auto& b : store.evidence().bursts(job))
    if (b.verdict) e.burst_batched[b.group] = b.verdict->batched;
  const auto digests = recompute_digests(store, e, rep);
  const auto job_row = store.jobs().get(job);
  // A job whose end could not be stored (a full disk) has no findings to verify: its verdicts
  // and predictions were written in the one transaction that failed.
  const bool finished = job_row && audit::has_findings(job_row->status) && !job_row->findings_json.empty();
  const auto judged = judge_identities(e, digests, finished, rep);
  if (!finished) return;
  const auto& spec = job_row->spec;
  if (!spec) {
    rep.problems.push_back("job " + std::to_string(job) + ": the stored spec does not parse");
    return;
  }
  verify_predictions(store, job, *spec, judged, rep);
  const auto& stored_findings = job_row->findings;
  if (!stored_findings) return;
  const auto plan = audit::make_plan(*spec);
  verify_flags(e, plan, *stored_findings, rep);
  verify_searches(e, *spec, plan, *stored_findings, judged, rep);
  if (!stored_findings->throughput.empty()) verify_throughput(store, e, plan, *stored_findings, rep);
  recount_analyses(store, e, *spec, plan, *stored_findings, digests, judged, rep);
  if (stored_findings->certificate) verify_certificate(e, *spec, *stored_findings, judged, rep);
}

}  // namespace

verify_report verify_database(storage::store& store, std::optional<std::int64_t> job) {
  verify_report rep;
  if (job) {
    if (!store.jobs().get(*job)) rep.problems.push_back("job " + std::to_string(*job) + " does not exist");
    else verify_job(store, *job, rep);
    return rep;
  }
  for (auto id : store.jobs().ids()) verify_job(store, id, rep);
  return rep;
}

}  // namespace logitaudit::cli
