// verify: digests from bytes, identity from digests, predictions from identity.
#include "verify.hpp"

#include <map>
#include <set>

#include "api/spec_json.hpp"
#include "audit/stream_encoding.hpp"

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

void verify_job(storage::store& store, std::int64_t job, verify_report& rep) {
  ++rep.jobs;
  const auto runs = store.evidence().runs(job);
  std::map<std::int64_t, const storage::run_record*> by_id;
  for (const auto& r : runs) by_id[r.id] = &r;
  // 1. Digests, recomputed from the stored encoding.
  struct recomputed {
    std::vector<std::uint8_t> token, logit;
    bool valid = false;
  };
  std::map<std::int64_t, recomputed> digests;  // by run id
  for (const auto& st : store.evidence().stored_streams(job)) {
    ++rep.streams;
    const auto& r = *by_id.at(st.run);
    auto d = audit::digest_canonical(st.encoding);
    if (!d) {
      rep.problems.push_back(name_of(job, r) + ": the stored encoding does not decode");
      continue;
    }
    recomputed c{bytes_of(d->token), bytes_of(d->logit), true};
    if (c.logit != st.logit_digest)
      rep.problems.push_back(name_of(job, r) + ": logit digest stored " + hex(st.logit_digest) + ", recomputed " + hex(c.logit));
    if (c.token != st.token_digest)
      rep.problems.push_back(name_of(job, r) + ": token digest stored " + hex(st.token_digest) + ", recomputed " + hex(c.token));
    digests[st.run] = std::move(c);
  }
  std::map<std::pair<std::size_t, std::size_t>, const storage::run_record*> by_position;
  for (const auto& r : runs) by_position[{r.group, r.request}] = &r;

  // 2. Identity verdicts, from the recomputed digests against the baseline's.
  const auto job_row = store.jobs().get(job);
  // A job whose end could not be stored (a full disk) has no findings to verify: its verdicts
  // and predictions were written in the one transaction that failed.
  const bool finished = job_row && audit::has_findings(job_row->status) && !job_row->findings_json.empty();
  struct identity {
    std::string condition;
    bool logit = false, token = false;
    bool counted = true;  // its stored verdict carries no evidence flag
  };
  // A stream of a burst is flagged not_batched exactly when its burst's stored verdict says so.
  std::map<std::size_t, bool> burst_batched;
  for (const auto& b : store.evidence().bursts(job))
    if (b.verdict) burst_batched[b.group] = b.verdict->batched;
  std::vector<identity> judged;
  for (const auto& r : runs) {
    if (!r.compared || !r.ok || !r.baseline_group) continue;
    auto base = by_position.find({static_cast<std::size_t>(*r.baseline_group), 0});
    if (base == by_position.end() || !base->second->ok) continue;  // not judged: its baseline failed
    const auto& mine = digests[r.id];
    const auto& theirs = digests[base->second->id];
    if (!mine.valid || !theirs.valid) continue;
    identity id{r.condition, mine.logit == theirs.logit, mine.token == theirs.token};
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
    judged.push_back(id);
    if (auto b = burst_batched.find(r.group); b != burst_batched.end() && b->second == (v.flag == audit::evidence_flag::not_batched))
      rep.problems.push_back(name_of(job, r) + ": its burst is stored as " + (b->second ? "batched" : "not batched") +
                             " but its verdict is flagged '" + std::string(audit::to_string(v.flag)) + "'");
    if (v.logit_identical != id.logit || v.token_identical != id.token)
      rep.problems.push_back(name_of(job, r) + ": stored verdict logit " + (v.logit_identical ? "identical" : "differs") +
                             "/token " + (v.token_identical ? "identical" : "differs") + ", recomputed logit " +
                             (id.logit ? "identical" : "differs") + "/token " + (id.token ? "identical" : "differs"));
  }

  // 3. Predictions, from the recomputed identities.
  if (!finished || !job_row) return;
  auto spec = api::read_spec(job_row->spec_json);
  if (!spec) {
    rep.problems.push_back("job " + std::to_string(job) + ": the stored spec does not parse");
    return;
  }
  std::map<std::string, storage::prediction_record> stored_p;
  for (const auto& p : store.jobs().predictions(job)) stored_p[p.id] = p;
  for (const auto& p : spec->predictions) {
    ++rep.predictions;
    const std::set<std::string> names(p.conditions.begin(), p.conditions.end());
    int k = 0, n = 0;
    for (const auto& id : judged) {
      if (!names.count(id.condition) || !id.counted) continue;
      ++n;
      const bool identical = p.level == audit::identity_level::logit ? id.logit : id.token;
      k += identical == (p.expect == audit::expectation::identical);
    }
    const std::string outcome = n == 0 ? "undecided" : k >= p.at_least * n - 1e-9 ? "held" : "failed";
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
