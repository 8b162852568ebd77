// The advice analysis (audit/advice.hpp, docs/advise.md): an advise job's configurations ranked
// by its load condition, each with its certify job's outcome; its sentence first among the
// findings, and its part of the report after the verdict.
#include <algorithm>

#include "audit/advice.hpp"
#include "audit/analysis.hpp"

namespace logitaudit::audit {
namespace {

// Its certify phase ran (a row's command is known then): there is an advice to give.
bool advised(const advice_section& a) {
  return std::any_of(a.rows.begin(), a.rows.end(), [](const advice_row& r) { return !r.command.empty(); });
}

class advice_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "advice"; }

  // Runs after the frontier and load analyses, whose sections it ranks.
  void evaluate(const analysis_input& in, findings& f) const override {
    if (!in.spec.advise) return;
    f.sections.put<advice_section>() = rank_configurations(in.spec, f, in.evidence.advice_run ? &*in.evidence.advice_run : nullptr);
  }

  void conclude(const analysis_input& in, findings& f) const override {
    if (const auto* a = f.sections.find<advice_section>(); a && in.evidence.advice_run)
      f.sentences.insert(f.sentences.begin(), advice_sentence(*a));
  }

  report_place place() const override { return report_place::lead; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    if (const auto* a = f.sections.find<advice_section>(); a && advised(*a)) write_advice(out, *a, fmt);
  }
};

}  // namespace

const analysis& advice_analysis() {
  static const advice_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
