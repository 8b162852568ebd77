// The reference analysis (audit/reference.hpp): every stream also judged against the solo stream
// of the same request in the audit the spec names; its sentence. The pooled table shows it in its
// "vs reference" column (the tallies' part of the report).
#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/reference.hpp"

namespace logitaudit::audit {
namespace {

class reference_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "reference"; }

  void evaluate(const analysis_input& in, findings& f) const override {
    const auto& ev = in.evidence;
    if (ev.reference)
      f.sections.put<reference_findings>() =
          judge_against_reference(in.spec, in.plan, in.runs, *ev.reference, ev.fingerprints, ev.thresholds);
  }

  void conclude(const analysis_input&, findings& f) const override {
    if (const auto* r = f.sections.find<reference_findings>()) f.sentences.push_back(r->sentence);
  }
};

}  // namespace

const analysis& reference_analysis() {
  static const reference_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
