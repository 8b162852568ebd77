// The attribution analysis (audit/attribution.hpp): per burst condition and backend, whether
// divergent streams first differ where the server's batch changed; and its table in the report.
#include "audit/analysis.hpp"
#include "audit/attribution.hpp"
#include "audit/numbers.hpp"
#include "audit/report_blocks.hpp"

namespace logitaudit::audit {
namespace {

// One row per condition and backend (docs/explain.md).
grid attribution_grid(const std::vector<attribution_tally>& tallies) {
  grid g{{"condition", "backend", "divergent", "with steps", "at first token", "later", "at width change",
          "width changes", "p", "at finish", "at join"}};
  for (const auto& t : tallies) {
    const bool known = t.no_steps_reason.empty() && t.with_steps > 0;
    const bool tested = known && t.tested;
    const std::string rate = t.positions ? fixed(100.0 * t.width_changes / t.positions, 1) + "% of " + std::to_string(t.positions)
                                         : std::string("-");
    g.push_back({t.condition, t.backend, std::to_string(t.divergent),
                 known ? std::to_string(t.with_steps) : "not known: " + (t.no_steps_reason.empty() ? "no steps" : t.no_steps_reason),
                 known ? std::to_string(t.at_first_token) : "-", known ? std::to_string(t.tested) : "-",
                 tested ? std::to_string(t.at_width_change) : "-", tested ? rate : "-", tested ? p_text(t.p_width_change) : "-",
                 tested ? std::to_string(t.at_finish) : "-", tested ? std::to_string(t.at_join) : "-"});
  }
  return g;
}

class attribution_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "attribution"; }

  void evaluate(const analysis_input& in, findings& f) const override {
    auto t = tally_attributions(in.spec, f.verdicts);
    if (!t.empty()) f.sections.put<attribution_section>().tallies = std::move(t);
  }

  report_place place() const override { return report_place::explanation; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    const auto& tallies = section<attribution_section>(f).tallies;
    if (tallies.empty()) return;
    write_title(out,
                "Attribution at the first difference (\"later\": divergent streams whose first difference follows the prompt's "
                "step, tested against the rate of width changes, exact one-sided binomial)",
                fmt);
    write_grid(out, attribution_grid(tallies), fmt);
  }
};

}  // namespace

const analysis& attribution_analysis() {
  static const attribution_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
