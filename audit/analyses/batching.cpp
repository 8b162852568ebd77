// The batching evidence: per burst condition (and per width of a search), how many bursts the
// server batched, the server's concurrency and the requests' overlap; its part of the reports,
// and every stored verdict's evidence flag recounted from the evidence stored beside it.
#include <map>

#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/numbers.hpp"
#include "audit/report_blocks.hpp"

namespace logitaudit::audit {
namespace {

std::string measure_name(concurrency_measure m) {
  switch (m) {
    case concurrency_measure::busy_slots_per_decode: return "busy slots/decode";
    case concurrency_measure::server_timings: return "timed concurrency";
    case concurrency_measure::none: return "not measured";
  }
  return "?";
}

std::string measured_cell(const burst_summary& b) {
  if (!b.median_measured) return "not measured";
  return measure_name(b.measured_by) + " " + fixed(*b.median_measured, 2) + " of " + fixed(b.expected, 0);
}

std::string overlap_cell(const burst_summary& b) { return fixed(100 * b.median_overlap, 0) + "%"; }

constexpr const char* kAnswersNote =
    "streamed (each token's arrival kept, the decode steps reconstructed; condition.decode_steps) or plain";

// Whether the bursts streamed for decode steps (condition.decode_steps) or were plain.
std::string streamed_cell(const burst_summary& b) {
  if (!b.streamed) return "streamed";  // stored before plain bursts: every burst streamed
  if (*b.streamed == b.bursts) return "streamed";
  if (*b.streamed == 0) return "plain";
  return std::to_string(*b.streamed) + "/" + std::to_string(b.bursts) + " streamed";
}

bool any_bursts(const std::vector<condition_tally>& rows) {
  for (const auto& t : rows)
    if (t.bursts && t.bursts->bursts > 0) return true;
  return false;
}

std::string thresholds_line(const evidence_thresholds& t) {
  return "a burst batched when its server concurrency reached 1 + " + fixed(t.min_batching, 2) +
         " x (expected - 1) and all its requests were in flight together for " + fixed(100 * t.min_overlap, 0) +
         "% of it (evidence.min_batching, evidence.min_overlap)";
}

// A burst condition's rows: one per width of a threshold search, never one median over widths
// that differ.
std::vector<burst_summary> rows_of(const condition_tally& t) { return t.widths.empty() ? std::vector<burst_summary>{*t.bursts} : t.widths; }

void evidence_text(std::string& out, const findings& f) {
  out += "\nBatching evidence (" + thresholds_line(f.thresholds) + "; answers: " + kAnswersNote + "):\n";
  out += " " + pad("condition", 26) + pad("width", 7) + pad("batched", 9) + pad("server concurrency (median)", 37) +
         pad("overlap", 9) + "answers\n";
  for (const auto& t : f.pooled) {
    if (!t.bursts || t.bursts->bursts == 0) continue;
    for (const auto& b : rows_of(t))
      out += " " + pad(t.condition, 26) + pad(std::to_string(b.width), 7) +
             pad(std::to_string(b.batched) + "/" + std::to_string(b.bursts), 9) + pad(measured_cell(b), 37) + pad(overlap_cell(b), 9) + streamed_cell(b) + "\n";
  }
}

void evidence_markdown(std::string& out, const findings& f) {
  out += "\n### Batching evidence\n\nMedians per burst; " + thresholds_line(f.thresholds) + "; answers: " + kAnswersNote +
         ".\n\n| condition | width | bursts batched | server concurrency | overlap | answers |\n| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& t : f.pooled) {
    if (!t.bursts || t.bursts->bursts == 0) continue;
    for (const auto& b : rows_of(t))
      out += "| " + t.condition + " | " + std::to_string(b.width) + " | " + std::to_string(b.batched) + "/" +
             std::to_string(b.bursts) + " | " + measured_cell(b) + " | " + overlap_cell(b) + " | " + streamed_cell(b) + " |\n";
  }
}

// The flag the stored evidence gives a judged run, under the writer's own precedence
// (audit::choose_flag): not_solo from the baseline's and the request's own company and cache,
// not_batched from the burst's stored verdict. The flags that rest on what verify does not
// recompute (control_ineffective, level_not_reached, not_reused) enter as stored.
flag_choice flag_from_evidence(const recount_input& in, const recounted_run& r, const recounted_run& base) {
  const auto& t = in.stored.thresholds;
  const auto& g = in.plan.groups[r.group];
  raised_flags raised;
  raised.baseline_not_alone = not_solo_reason(base.company, base.cache_n, t);
  if (g.mode == group_mode::serial && r.company && *r.company > t.max_solo_busy_slots)
    raised.ran_with_company = "busy slots per decode " + fixed(*r.company, 2);
  if (g.mode == group_mode::burst && flag_of(g.kind) == evidence_flag::not_batched)
    if (auto b = in.burst_batched.find(r.group); b == in.burst_batched.end() || !b->second) raised.not_batched = "stored not batched";
  const std::string as_stored = "as stored";
  if (r.flag == evidence_flag::control_ineffective) raised.control_ineffective = as_stored;
  if (r.flag == evidence_flag::level_not_reached) raised.level_not_reached = as_stored;
  if (r.flag == evidence_flag::not_reused) raised.not_reused = as_stored;
  return choose_flag(raised);
}

std::string name_of(const recount_input& in, const recounted_run& r) {
  return in.at() + "run " + std::to_string(r.id) + " (group " + std::to_string(r.group) + " request " + std::to_string(r.request) +
         ", " + r.backend + "/" + r.condition + ")";
}

class batching_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "batching"; }
  report_place place() const override { return report_place::evidence; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    if (!any_bursts(f.pooled)) return;
    fmt == report_format::markdown ? evidence_markdown(out, f) : evidence_text(out, f);
  }

  void recount(const recount_input& in, recount_report& rep) const override {
    if (!in.findings_stored) return;
    std::map<std::pair<std::size_t, std::size_t>, const recounted_run*> by_position;
    for (const auto& r : in.runs) by_position[{r.group, r.request}] = &r;
    for (const auto& r : in.runs) {
      if (!r.compared || !r.ok || !r.baseline_group || !r.has_verdict || r.group >= in.plan.groups.size()) continue;
      auto base = by_position.find({static_cast<std::size_t>(*r.baseline_group), baseline_request(in.plan, r.group, r.request)});
      if (base == by_position.end() || !base->second->ok) continue;
      const auto want = flag_from_evidence(in, r, *base->second);
      if (want.flag == r.flag) continue;
      rep.problems.push_back(name_of(in, r) + ": its verdict is flagged '" + std::string(to_string(r.flag)) +
                             "', but its stored evidence gives '" + std::string(to_string(want.flag)) + "'" +
                             (want.reason.empty() || want.reason == "as stored" ? "" : " (" + want.reason + ")"));
    }
  }
};

}  // namespace

const analysis& batching_analysis() {
  static const batching_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
