// The predictions analysis (audit/predictions.hpp): each pre-registered prediction decided, its
// part of the reports, and its recount from the recomputed identities.
#include <map>
#include <set>

#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/predictions.hpp"
#include "audit/report_blocks.hpp"

namespace logitaudit::audit {
namespace {

const char* level_name(identity_level l) { return l == identity_level::logit ? "logit" : "token"; }
const char* expect_name(expectation e) { return e == expectation::identical ? "identical" : "diverges"; }
int needed_percent(const prediction& p) { return static_cast<int>(p.at_least * 100 + 0.5); }

std::string outcome_word(const prediction_result& p) {
  switch (p.outcome) {
    case prediction_outcome::held: return "HELD     ";
    case prediction_outcome::failed: return "FAILED   ";
    case prediction_outcome::undecided: return "UNDECIDED";
  }
  return "?";
}

std::string prediction_counts(const prediction_result& p) {
  std::string s = std::string(level_name(p.claim.level)) + " " + expect_name(p.claim.expect) + " " + std::to_string(p.k) + "/" +
                  std::to_string(p.n) + ", needed " + std::to_string(needed_percent(p.claim)) + "%";
  if (p.flagged) s += "; " + std::to_string(p.flagged) + " counted apart";
  return s;
}

void render_markdown(const std::vector<prediction_result>& results, std::string& out) {
  out += "\n### Pre-registered predictions\n\n| id | claim | level | expect | evidence | needed | result |\n"
         "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& p : results)
    out += "| " + p.claim.id + " | " + p.claim.statement + " | " + level_name(p.claim.level) + " | " + expect_name(p.claim.expect) +
           " | " + std::to_string(p.k) + "/" + std::to_string(p.n) +
           (p.flagged ? " (" + std::to_string(p.flagged) + " counted apart)" : "") + " | " +
           std::to_string(needed_percent(p.claim)) + "% | " +
           (p.outcome == prediction_outcome::held ? "held" : p.outcome == prediction_outcome::failed ? "**failed**" : "undecided") +
           " |\n";
}

class predictions_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "predictions"; }

  void evaluate(const analysis_input& in, findings& f) const override {
    f.sections.put<prediction_section>().results = judge_predictions(in.spec, f.verdicts);
  }

  report_place place() const override { return report_place::claims; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    const auto& results = section<prediction_section>(f).results;
    if (results.empty()) return;
    if (fmt == report_format::markdown) return render_markdown(results, out);
    out += "\nPre-registered predictions:\n";
    for (const auto& p : results)
      out += " " + p.claim.id + " " + outcome_word(p) + " " + p.claim.statement + " (" + prediction_counts(p) + ")\n";
  }

  // Each prediction decided again from the recomputed identities, by the writer's own rule
  // (audit::decide), against its stored row.
  void recount(const recount_input& in, recount_report& rep) const override {
    std::map<std::string, const stored_prediction*> stored;
    for (const auto& p : in.predictions) stored[p.id] = &p;
    for (const auto& p : in.spec.predictions) {
      ++rep.predictions;
      const std::set<std::string> names(p.conditions.begin(), p.conditions.end());
      int k = 0, n = 0;
      for (const auto& id : in.judged) {
        if (!names.count(id.condition) || !id.counted) continue;
        ++n;
        const bool identical = p.level == identity_level::logit ? id.logit : id.token;
        k += identical == (p.expect == expectation::identical);
      }
      const std::string outcome(to_string(decide(p, k, n)));
      auto s = stored.find(p.id);
      if (s == stored.end()) {
        rep.problems.push_back(in.at() + "prediction " + p.id + ": not stored");
        continue;
      }
      const auto& got = *s->second;
      if (got.k != k || got.n != n || got.outcome != outcome)
        rep.problems.push_back(in.at() + "prediction " + p.id + ": stored " + got.outcome + " " + std::to_string(got.k) + "/" +
                               std::to_string(got.n) + ", recomputed " + outcome + " " + std::to_string(k) + "/" + std::to_string(n));
    }
  }
};

}  // namespace

const analysis& predictions_analysis() {
  static const predictions_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
