// The findings' sentences in the reports, numbered, less those a table above already gives (an
// older audit stored one sentence per attribution row).
#include <algorithm>

#include "audit/analysis.hpp"
#include "audit/attribution.hpp"
#include "audit/findings.hpp"

namespace logitaudit::audit {
namespace {

std::vector<std::string> listed_sentences(const findings& f) {
  const auto& tallies = section<attribution_section>(f).tallies;
  std::vector<std::string> out;
  for (const auto& s : f.sentences)
    if (std::none_of(tallies.begin(), tallies.end(), [&](const attribution_tally& t) { return attribution_sentence(t) == s; }))
      out.push_back(s);
  return out;
}

class sentences_analysis_t final : public analysis {
 public:
  std::string_view name() const override { return "sentences"; }
  report_place place() const override { return report_place::sentences; }

  void render(const findings& f, report_format fmt, std::string& out) const override {
    const bool md = fmt == report_format::markdown;
    out += md ? "\n### Findings\n\n" : "\nFindings:\n";
    const auto sentences = listed_sentences(f);
    for (std::size_t i = 0; i < sentences.size(); ++i) out += (md ? "" : " ") + std::to_string(i + 1) + ". " + sentences[i] + "\n";
  }
};

}  // namespace

const analysis& sentences_analysis() {
  static const sentences_analysis_t a;
  return a;
}

}  // namespace logitaudit::audit
