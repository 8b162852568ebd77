// The verdict's part of the reports (audit/verdict.hpp): its lines first, then why the findings
// are not trusted when they are not.
#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/verdict.hpp"

namespace logitaudit::audit {
namespace {

class verdict_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "verdict"; }
  report_place place() const override { return report_place::verdict; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    if (fmt == report_format::markdown) {
      out += verdict_markdown(summarize(f)) + "\n";
      if (!f.valid) out += "> **" + f.invalid_reason + "**\n\n";
    } else {
      out += verdict_text(summarize(f)) + "\n";
      if (!f.valid) out += "!! " + f.invalid_reason + "\n\n";
    }
  }
};

}  // namespace

const analysis& verdict_analysis() {
  static const verdict_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
