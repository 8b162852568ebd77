// Reading a reference audit.
#include "references.hpp"

#include "documents.hpp"

namespace logitaudit::storage {

std::string reference_problem(store& s, std::int64_t id) {
  const auto row = s.jobs().get(id);
  if (!row) return "no audit " + std::to_string(id) + " is stored (import its bundle first)";
  if (row->status != audit::job_status::done)
    return "audit " + std::to_string(id) + " is " + std::string(audit::to_string(row->status)) +
           ": a reference is an audit that ended done";
  if (s.evidence().baselines(id).empty()) return "audit " + std::to_string(id) + " has no solo baseline to compare with";
  return "";
}

audit::reference_evidence reference_evidence_of(store& s, std::int64_t id) {
  audit::reference_evidence r;
  r.audit = id;
  const auto row = s.jobs().get(id);
  if (!row) return r;
  r.found = true;
  r.origin = row->provenance.origin;
  if (row->spec) {
    r.n_predict = row->spec->n_predict;
    r.top_k = row->spec->top_k;
  }
  r.baselines = s.evidence().baselines(id);
  r.fingerprints = s.evidence().fingerprints(id);
  return r;
}

}  // namespace logitaudit::storage
