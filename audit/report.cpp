// The reports of the findings: text and Markdown walk the analyses by their place
// (audit/analysis.hpp); CSV is the tallies' table with its columns per backend.
#include "report.hpp"

#include "analysis.hpp"

#include "fingerprint.hpp"
#include "harness_power.hpp"
#include "load.hpp"
#include "numbers.hpp"
#include "reference.hpp"

namespace logitaudit::audit {
namespace {

constexpr report_place kReportOrder[] = {report_place::verdict,  report_place::lead,        report_place::context,
                                         report_place::answer,   report_place::tables,      report_place::evidence,
                                         report_place::matrices, report_place::explanation, report_place::sentences,
                                         report_place::claims};

std::string render(const findings& f, report_format fmt) {
  std::string out;
  for (auto place : kReportOrder)
    for (const auto* a : analyses())
      if (a->place() == place) a->render(f, fmt, out);
  return out;
}

// The CSV cell of a backend's resolution: "float32", "float64", "4 decimals", "6 significant digits".
std::string resolution_cell(const harness_section& h, const std::string& scope) {
  auto r = h.resolution.find(scope);
  if (r == h.resolution.end()) return "";
  if (r->second.round_trips_float32()) return "float32";
  if (r->second.full_float64()) return "float64";
  return r->second.qualifier().substr(3);
}

std::string power_cell(const harness_section& h, const std::string& scope) {
  auto t = h.selftests.find(scope);
  if (t == h.selftests.end()) return "none";
  return std::to_string(t->second.caught) + "/" + std::to_string(t->second.faults) + " caught " +
         std::to_string(t->second.equivalents_flagged) + "/" + std::to_string(t->second.equivalents) + " flagged";
}

}  // namespace

std::string render_text(const findings& f) { return render(f, report_format::text); }

std::string render_markdown(const findings& f) { return render(f, report_format::markdown); }

std::string render_analysis(const findings& f, std::string_view name) {
  std::string out;
  for (const auto* a : analyses())
    if (a->name() == name) a->render(f, report_format::text, out);
  return out;
}

std::string render_csv(const findings& f) {
  // The machine column comes with audits whose fingerprints name their machine (since schema 6), so
  // that the report of an older audit stays what it was.
  const bool machines = !f.machines.empty();
  const auto* ref = f.sections.find<reference_findings>();
  const auto& h = section<harness_section>(f);
  const bool harness = !h.resolution.empty() || !h.selftests.empty();  // since schema 7
  std::string out =
      "scope,condition,kind,concurrency,seeded,n,logit_identical,token_identical,failed,flagged,bursts,bursts_batched,"
      "median_server_concurrency,measured_by,expected_concurrency,median_overlap" +
      std::string(machines ? ",machine" : "") + std::string(harness ? ",logprob_resolution,harness_power" : "") +
      std::string(ref ? ",reference_n,reference_logit_matches,reference_token_matches" : "") + "\n";
  auto rows = [&](const std::string& scope, const std::vector<condition_tally>& ts) {
    std::string machine;
    if (auto it = f.machines.find(scope); machines && it != f.machines.end()) machine = machine_summary(it->second);
    if (machines) {
      std::string quoted;
      for (char c : machine) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
      machine = ",\"" + quoted + "\"";
    }
    if (harness) {
      // Pooled rows: every backend's, joined.
      std::string res, power;
      for (const auto& b : scope == "pooled" ? f.backends : std::vector<std::string>{scope}) {
        res += (res.empty() ? "" : "; ") + resolution_cell(h, b);
        power += (power.empty() ? "" : "; ") + power_cell(h, b);
      }
      machine += "," + res + "," + power;
    }
    // Against the reference: pooled rows only (the reference's tallies are pooled).
    auto reference_columns = [&](const condition_tally& t) -> std::string {
      if (!ref) return "";
      const auto* r = scope == "pooled" ? ref->tally(t.condition) : nullptr;
      if (!r) return ",,,";
      return "," + std::to_string(r->n) + "," + std::to_string(r->logit_matches) + "," + std::to_string(r->token_matches);
    };
    for (const auto& t : ts) {
      out += scope + "," + t.condition + "," + std::string(to_string(t.kind)) + "," + std::to_string(t.concurrency) + "," +
             (t.seeded ? "true" : "false") + "," + std::to_string(t.n) + "," + std::to_string(t.logit_identical) + "," +
             std::to_string(t.token_identical) + "," + std::to_string(t.failed) + "," + std::to_string(t.flagged) + ",";
      if (t.bursts)
        out += std::to_string(t.bursts->bursts) + "," + std::to_string(t.bursts->batched) + "," +
               (t.bursts->median_measured ? fixed(*t.bursts->median_measured, 4) : "") + "," +
               std::string(to_string(t.bursts->measured_by)) + "," + fixed(t.bursts->expected, 0) + "," +
               fixed(t.bursts->median_overlap, 4) + machine + reference_columns(t) + "\n";
      else
        out += ",,,,," + machine + reference_columns(t) + "\n";
    }
  };
  rows("pooled", f.pooled);
  for (const auto& b : f.backends) {
    // A load condition's levels, each a row of its backend (never pooled): "load_poisson@2 req/s".
    std::vector<condition_tally> levels;
    for (const auto& c : section<load_section>(f).curves) {
      if (c.backend != b) continue;
      for (const auto& l : c.levels) {
        condition_tally t;
        t.condition = c.condition + "@" + l.measurement.label;
        t.kind = condition_kind::load;
        t.concurrency = static_cast<int>(l.measurement.level);
        t.n = l.probes;
        t.logit_identical = l.logit_identical;
        t.token_identical = l.token_identical;
        t.failed = l.failed;
        t.flagged = l.flagged;
        levels.push_back(std::move(t));
      }
    }
    auto all = f.per_backend.count(b) ? f.per_backend.at(b) : std::vector<condition_tally>{};
    all.insert(all.end(), levels.begin(), levels.end());
    rows(b, all);
  }
  return out;
}

}  // namespace logitaudit::audit
