// Each stream against the reference's solo stream for the same request.
#include "reference.hpp"

#include "enum_names.hpp"

#include <algorithm>
#include <set>

#include "findings.hpp"
#include "numbers.hpp"
#include "stream_encoding.hpp"

namespace logitaudit::audit {
namespace {

// The same request whatever the backend: prompt and sampling (length and top-k are the specs').
struct request_key {
  std::string prompt;
  double temperature = 0;
  std::optional<std::int64_t> seed;
  auto operator<=>(const request_key&) const = default;
};

request_key key_of(const planned_request& r) {
  return {r.prompt, r.params.temperature,
          r.params.seed ? std::optional<std::int64_t>(static_cast<std::int64_t>(*r.params.seed)) : std::nullopt};
}

reference_tally& tally_of(std::vector<reference_tally>& pooled, const std::string& condition) {
  auto it = std::find_if(pooled.begin(), pooled.end(), [&](const reference_tally& t) { return t.condition == condition; });
  if (it != pooled.end()) return *it;
  pooled.push_back({condition});
  return pooled.back();
}

// The reference's fingerprint a backend is held against: the one of the same name, else the
// only one, else the first.
const backend_fingerprint* reference_fingerprint(const reference_evidence& ref, const std::string& backend) {
  if (auto it = ref.fingerprints.find(backend); it != ref.fingerprints.end()) return &it->second.before;
  if (ref.fingerprints.empty()) return nullptr;
  return &ref.fingerprints.begin()->second.before;
}

std::string sentence_of(const reference_findings& r, const reference_evidence& ref) {
  std::string s = "Against the reference (audit " + std::to_string(r.audit) +
                  (ref.origin.empty() ? "" : ", measured at " + ref.origin) + "): ";
  if (!ref.found) return s + "not comparable: audit " + std::to_string(r.audit) + " is not in this database.";
  int solo_n = 0, solo_k = 0, load_n = 0, load_k = 0, apart = 0;
  for (const auto& t : r.pooled) {
    (t.condition == kBaselineCondition ? solo_n : load_n) += t.n;
    (t.condition == kBaselineCondition ? solo_k : load_k) += t.logit_matches;
    apart += t.not_comparable;
  }
  s += "solo " + std::to_string(solo_k) + "/" + std::to_string(solo_n) + " baseline stream(s) match bit for bit, the rest " +
       std::to_string(load_k) + "/" + std::to_string(load_n);
  if (apart) s += "; " + std::to_string(apart) + " not comparable";
  std::set<std::string> fields;
  for (const auto& [backend, diffs] : r.fingerprint_differences) fields.insert(diffs.begin(), diffs.end());
  if (fields.empty()) {
    s += "; the fingerprints agree.";
  } else {
    s += "; the fingerprints differ in ";
    bool first = true;
    for (const auto& f : fields) {
      s += (first ? "" : ", ") + f;
      first = false;
    }
    s += ".";
  }
  return s;
}

}  // namespace

std::string_view to_string(reference_outcome o) { return enumerator_name(o); }

bool reference_findings::all_match() const {
  const auto solo = std::find_if(pooled.begin(), pooled.end(), [](const reference_tally& t) { return t.condition == kBaselineCondition; });
  return solo != pooled.end() && solo->n > 0 && solo->logit_matches == solo->n && solo->not_comparable == 0;
}

reference_findings judge_against_reference(const audit_spec& spec, const audit_plan& plan,
                                           const std::vector<observed_run>& runs, const reference_evidence& ref,
                                           const std::map<std::string, backend_fingerprints>& fingerprints,
                                           const evidence_thresholds& thresholds) {
  reference_findings out;
  out.audit = ref.audit;
  out.origin = ref.origin;
  // The tallies in spec order, the solo baselines first.
  out.pooled.push_back({kBaselineCondition});
  for (const auto& c : spec.conditions)
    if (!is_control(c.kind) && c.kind != condition_kind::throughput) out.pooled.push_back({c.name});
  std::string shape;  // why nothing is comparable, when the whole audit is not
  if (!ref.found) shape = "the reference audit " + std::to_string(ref.audit) + " is not in this database";
  else if (ref.n_predict != plan.n_predict)
    shape = "the reference ran " + std::to_string(ref.n_predict) + " tokens a request, this audit " + std::to_string(plan.n_predict);
  else if (ref.top_k != plan.top_k)
    shape = "the reference asked for top-" + std::to_string(ref.top_k) + ", this audit top-" + std::to_string(plan.top_k);
  // The reference's solo streams, and why a request's was not alone (then it witnesses nothing).
  std::map<request_key, const baseline_stream*> solo;
  std::map<request_key, std::string> not_alone;
  for (const auto& b : ref.baselines) {
    const request_key k{b.key.prompt, b.key.temperature, b.key.seed};
    if (auto why = not_solo_reason(b.company, b.stream.server.cache_n, thresholds); !why.empty()) not_alone.emplace(k, why);
    else solo.emplace(k, &b);
  }
  std::map<const baseline_stream*, stream_digests> digests;
  for (const auto& r : runs) {
    if (!r.stream || r.group >= plan.groups.size()) continue;
    const auto& g = plan.groups[r.group];
    if (r.request >= g.requests.size()) continue;
    const auto& q = g.requests[r.request];
    if (!g.is_baseline && (!q.compared || is_control(g.kind) || g.kind == condition_kind::throughput)) continue;
    reference_verdict v{r.group, r.request};
    auto& t = tally_of(out.pooled, g.is_baseline ? kBaselineCondition : g.condition);
    const auto it = solo.find(key_of(q));
    const auto lonely = not_alone.find(key_of(q));
    const std::string mine = g.is_baseline ? not_solo_reason(r.company, r.stream->server.cache_n, thresholds) : "";
    // The same prompt must render to the same tokens on both servers to be the same request.
    std::string rendering;
    if (auto fp = fingerprints.find(g.backend); it != solo.end() && fp != fingerprints.end())
      if (const auto* theirs = reference_fingerprint(ref, it->second->key.backend)) {
        const auto a = theirs->prompt_token_hashes.find(q.prompt);
        const auto b = fp->second.before.prompt_token_hashes.find(q.prompt);
        if (a != theirs->prompt_token_hashes.end() && b != fp->second.before.prompt_token_hashes.end() && a->second != b->second)
          rendering = "the prompt renders to other tokens here than on the reference's server";
      }
    if (!shape.empty() || it == solo.end() || !rendering.empty() || !mine.empty()) {
      // The reference's own lack of company is the reason only when none of its backends has a
      // solo stream of this request (two of them can share a prompt and sampling).
      v.reason = !shape.empty()               ? shape
                 : it == solo.end() && lonely != not_alone.end()
                     ? "the reference's solo stream of this request was not alone: " + lonely->second
                 : it == solo.end()          ? "the reference has no such request (prompt and sampling)"
                 : !rendering.empty()        ? rendering
                                             : "this audit's baseline was not alone: " + mine;
      ++t.not_comparable;
    } else {
      auto d = digests.find(it->second);
      if (d == digests.end()) d = digests.emplace(it->second, digest(it->second->stream)).first;
      v.result = compare_streams(it->second->stream, d->second, *r.stream, digest(*r.stream));
      v.outcome = v.result->logit_identical ? reference_outcome::matches_reference : reference_outcome::differs;
      ++t.n;
      t.logit_matches += v.result->logit_identical;
      t.token_matches += v.result->token_identical;
    }
    out.verdicts.push_back(std::move(v));
  }
  std::erase_if(out.pooled, [](const reference_tally& t) { return t.n + t.not_comparable == 0; });
  for (const auto& [backend, fp] : fingerprints) {
    const auto* mine = !fp.before.api.empty() ? &fp.before : !fp.after.api.empty() ? &fp.after : nullptr;
    const auto* theirs = reference_fingerprint(ref, backend);
    if (!mine || !theirs || theirs->api.empty()) continue;
    out.fingerprint_differences[backend] = fingerprint_differences(*theirs, *mine);
  }
  out.sentence = sentence_of(out, ref);
  return out;
}

const reference_tally* reference_findings::tally(const std::string& condition) const {
  for (const auto& t : pooled)
    if (t.condition == condition) return &t;
  return nullptr;
}

}  // namespace logitaudit::audit
