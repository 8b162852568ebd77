// The tallies' part of the reports: per condition, the counted streams that stayed logit- and
// token-identical to their solo baseline, pooled over the backends and per backend, with the
// streams counted apart and why; against the reference audit when the spec names one.
#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/reference.hpp"
#include "audit/report_blocks.hpp"

namespace logitaudit::audit {
namespace {

std::string flag_words(const condition_tally& t) {
  std::string s;
  if (const int own = t.flagged - t.not_solo - t.ineffective; own > 0)
    s = std::to_string(own) + " " + (flag_of(t.kind) == evidence_flag::not_reused ? "not reused" : "not batched");
  if (t.not_solo) s += (s.empty() ? "" : ", ") + std::to_string(t.not_solo) + " not solo";
  if (t.ineffective) s += (s.empty() ? "" : ", ") + std::to_string(t.ineffective) + " ineffective";
  return s;
}

std::string note(const condition_tally& t) {
  if (t.control() && t.n == 0 && t.flagged > 0) return "<- control: " + flag_words(t) + ", not counted";
  // Logits that diverged show the comparator sees the change; the same tokens from a changed
  // prompt are the model's (a trained model's greedy loop can ignore its prompt).
  if (t.control() && t.logit_identical == 0 && t.token_identical > 0)
    return "<- control: logits diverged, tokens identical in " + std::to_string(t.token_identical) + "/" + std::to_string(t.n);
  if (t.control()) return t.logit_identical == 0 ? "<- control: diverged" : "<- CONTROL IDENTICAL";
  std::string apart;
  if (t.failed) apart = std::to_string(t.failed) + " failed";
  if (t.flagged) apart += (apart.empty() ? "" : ", ") + flag_words(t);
  return apart.empty() ? "" : "(" + apart + ", not counted)";
}

// The logit column: an observer's streams asked for other top-k widths (or none), so they are
// judged by their ids alone and their logit identity says nothing.
std::string logit_cell(const condition_tally& t) {
  return t.kind == condition_kind::observer && t.n > 0 ? "- (by ids)" : cell(t.logit_identical, t.n);
}

// "10/16 ( 62%)" of the streams matching the reference bit for bit, "-" for none compared.
std::string reference_cell(const reference_findings* ref, const std::string& condition) {
  const auto* t = ref ? ref->tally(condition) : nullptr;
  if (!t || t->n == 0) return t && t->not_comparable ? "not comparable" : "-";
  return cell(t->logit_matches, t->n);
}

// The pooled table carries an "against the reference" column when the spec named one.
void table_text(std::string& out, const std::vector<condition_tally>& rows, const reference_findings* ref) {
  out += " " + pad("condition", 26) + pad("logit-ident", 17) + pad("token-ident", 17) + (ref ? pad("vs reference", 17) : "") + "\n";
  for (const auto& t : rows)
    out += " " + pad(t.condition, 26) + pad(logit_cell(t), 17) + pad(cell(t.token_identical, t.n), 17) +
           (ref ? pad(t.control() ? "" : reference_cell(ref, t.condition), 17) : "") + note(t) + "\n";
  if (ref) out += " " + pad("solo baselines", 60) + pad(reference_cell(ref, "baseline"), 17) + "\n";
}

void table_markdown(std::string& out, const std::vector<condition_tally>& rows, const reference_findings* ref) {
  out += std::string("| condition | logit-ident | token-ident |") + (ref ? " against the reference |" : "") +
         " note |\n| --- | --- | --- |" + (ref ? " --- |" : "") + " --- |\n";
  for (const auto& t : rows)
    out += "| " + t.condition + " | " + logit_cell(t) + " | " + cell(t.token_identical, t.n) + " | " +
           (ref ? (t.control() ? std::string() : reference_cell(ref, t.condition)) + " | " : "") + note(t) + " |\n";
  if (ref) out += "| solo baselines | | | " + reference_cell(ref, "baseline") + " | |\n";
}

class tallies_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "tallies"; }
  report_place place() const override { return report_place::tables; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    const auto* ref = f.sections.find<reference_findings>();
    const auto pooled = "Pooled over " + std::to_string(f.backends.size()) + " backend(s)";
    if (fmt == report_format::markdown) {
      out += "### " + pooled + "\n\n";
      table_markdown(out, f.pooled, ref);
    } else {
      out += pooled +
             (ref ? "; vs reference: logit-identical to audit " + std::to_string(ref->audit) + "'s solo streams" : std::string()) +
             ":\n";
      table_text(out, f.pooled, ref);
    }
    if (f.backends.size() < 2) return;
    for (const auto& b : f.backends) {
      if (fmt == report_format::markdown) {
        out += "\n### " + b + "\n\n";
        table_markdown(out, f.per_backend.at(b), nullptr);
      } else {
        out += "\n" + b + ":\n";
        table_text(out, f.per_backend.at(b), nullptr);
      }
    }
  }
};

}  // namespace

const analysis& tallies_analysis() {
  static const tallies_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
