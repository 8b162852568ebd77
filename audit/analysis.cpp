// The list of analyses (audit/analyses.inc), as the findings, the reports and verify walk it.
#include "analysis.hpp"

#include <vector>

namespace logitaudit::audit {

#define LOGITAUDIT_ANALYSIS(name, kind) const analysis& name##_analysis();
#include "analyses.inc"
#undef LOGITAUDIT_ANALYSIS

std::span<const analysis* const> analyses() {
  static const std::vector<const analysis*> all = {
#define LOGITAUDIT_ANALYSIS(name, kind) &name##_analysis(),
#include "analyses.inc"
#undef LOGITAUDIT_ANALYSIS
  };
  return all;
}

}  // namespace logitaudit::audit
