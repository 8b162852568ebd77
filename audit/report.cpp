// Renderers of the findings table.
#include "report.hpp"

#include <cstdio>

namespace logitaudit::audit {
namespace {

std::string cell(int k, int n) {
  char b[40];
  std::snprintf(b, sizeof b, "%d/%d (%3.0f%%)", k, n, n ? 100.0 * k / n : 0.0);
  return b;
}

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

std::string note(const condition_tally& t) {
  if (t.control()) return t.logit_identical == 0 && t.token_identical == 0 ? "<- control: diverged" : "<- CONTROL IDENTICAL";
  if (t.failed) return "(" + std::to_string(t.failed) + " failed, not counted)";
  return "";
}

void table_text(std::string& out, const std::vector<condition_tally>& rows) {
  out += " " + pad("condition", 26) + pad("logit-ident", 17) + pad("token-ident", 17) + "\n";
  for (const auto& t : rows)
    out += " " + pad(t.condition, 26) + pad(cell(t.logit_identical, t.n), 17) + pad(cell(t.token_identical, t.n), 17) +
           note(t) + "\n";
}

const char* level_name(identity_level l) { return l == identity_level::logit ? "logit" : "token"; }
const char* expect_name(expectation e) { return e == expectation::identical ? "identical" : "diverges"; }

}  // namespace

std::string render_text(const findings& f) {
  std::string out;
  if (!f.valid) out += "!! " + f.invalid_reason + "\n\n";
  out += "Pooled over " + std::to_string(f.backends.size()) + " backend(s):\n";
  table_text(out, f.pooled);
  if (f.backends.size() > 1)
    for (const auto& b : f.backends) {
      out += "\n" + b + ":\n";
      table_text(out, f.per_backend.at(b));
    }
  out += "\nFindings:\n";
  for (std::size_t i = 0; i < f.sentences.size(); ++i) out += " " + std::to_string(i + 1) + ". " + f.sentences[i] + "\n";
  if (!f.predictions.empty()) {
    out += "\nPre-registered predictions:\n";
    for (const auto& p : f.predictions)
      out += " " + p.claim.id + " " + (p.held ? "HELD  " : "FAILED") + " " + p.claim.statement + " (" +
             level_name(p.claim.level) + " " + expect_name(p.claim.expect) + " " + std::to_string(p.k) + "/" +
             std::to_string(p.n) + ", needed " + std::to_string(static_cast<int>(p.claim.at_least * 100 + 0.5)) + "%)\n";
  }
  return out;
}

std::string render_markdown(const findings& f) {
  std::string out;
  if (!f.valid) out += "> **" + f.invalid_reason + "**\n\n";
  auto table = [&](const std::vector<condition_tally>& rows) {
    out += "| condition | logit-ident | token-ident | note |\n| --- | --- | --- | --- |\n";
    for (const auto& t : rows)
      out += "| " + t.condition + " | " + cell(t.logit_identical, t.n) + " | " + cell(t.token_identical, t.n) + " | " +
             note(t) + " |\n";
  };
  out += "### Pooled over " + std::to_string(f.backends.size()) + " backend(s)\n\n";
  table(f.pooled);
  if (f.backends.size() > 1)
    for (const auto& b : f.backends) {
      out += "\n### " + b + "\n\n";
      table(f.per_backend.at(b));
    }
  out += "\n### Findings\n\n";
  for (std::size_t i = 0; i < f.sentences.size(); ++i) out += std::to_string(i + 1) + ". " + f.sentences[i] + "\n";
  if (!f.predictions.empty()) {
    out += "\n### Pre-registered predictions\n\n| id | claim | level | expect | evidence | needed | result |\n| --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& p : f.predictions)
      out += "| " + p.claim.id + " | " + p.claim.statement + " | " + level_name(p.claim.level) + " | " +
             expect_name(p.claim.expect) + " | " + std::to_string(p.k) + "/" + std::to_string(p.n) + " | " +
             std::to_string(static_cast<int>(p.claim.at_least * 100 + 0.5)) + "% | " + (p.held ? "held" : "**failed**") +
             " |\n";
  }
  return out;
}

std::string render_csv(const findings& f) {
  std::string out = "scope,condition,kind,concurrency,seeded,n,logit_identical,token_identical,failed\n";
  auto rows = [&](const std::string& scope, const std::vector<condition_tally>& ts) {
    for (const auto& t : ts)
      out += scope + "," + t.condition + "," + std::string(to_string(t.kind)) + "," + std::to_string(t.concurrency) + "," +
             (t.seeded ? "true" : "false") + "," + std::to_string(t.n) + "," + std::to_string(t.logit_identical) + "," +
             std::to_string(t.token_identical) + "," + std::to_string(t.failed) + "\n";
  };
  rows("pooled", f.pooled);
  for (const auto& b : f.backends) rows(b, f.per_backend.at(b));
  return out;
}

}  // namespace logitaudit::audit
