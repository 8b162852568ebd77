// verify: digests from bytes, identity from digests, predictions from identity.
#include "verify.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "audit/evidence.hpp"
#include "audit/analysis.hpp"
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
std::vector<identity> judge_identities(const job_evidence& e, const audit::audit_plan& plan,
                                       const std::map<std::int64_t, recomputed>& known, bool finished, verify_report& rep) {
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
    auto base = by_position.find({static_cast<std::size_t>(*r.baseline_group), audit::baseline_request(plan, r.group, r.request)});
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

// 3. Each analysis's recount (audit/analysis.hpp), from the stored runs with their recomputed
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
                      const audit::findings& stored, bool findings_stored, const std::map<std::int64_t, recomputed>& digests,
                      const std::vector<identity>& judged, verify_report& rep) {
  audit::recount_input in{.job = e.job, .spec = spec, .plan = plan, .stored = stored, .findings_stored = findings_stored};
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
  const auto& spec = job_row ? job_row->spec : std::nullopt;
  const auto plan = spec ? audit::make_plan(*spec) : audit::audit_plan{};
  const auto judged = judge_identities(e, plan, digests, finished, rep);
  if (!finished) return;
  if (!spec) {
    rep.problems.push_back("job " + std::to_string(job) + ": the stored spec does not parse");
    return;
  }
  // The predictions are checked even when the findings document does not decode: their rows
  // are stored apart.
  static const audit::findings none;
  const auto& stored_findings = job_row->findings;
  recount_analyses(store, e, *spec, plan, stored_findings ? *stored_findings : none, stored_findings.has_value(),
                   digests, judged, rep);
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
