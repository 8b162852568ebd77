// JUnit XML from the findings (audit/junit.hpp).
#include "junit.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "certify.hpp"
#include "numbers.hpp"
#include "predictions.hpp"
#include "reference.hpp"
#include "verdict.hpp"

namespace logitaudit::audit {
namespace {

enum class result { passed, failed, skipped };

struct testcase {
  std::string classname, name;
  result outcome = result::passed;
  std::string message, type, detail;  // a failure's or a skip's
};

struct testsuite {
  std::string name;
  std::vector<testcase> cases;
  int count(result r) const {
    int n = 0;
    for (const auto& c : cases) n += c.outcome == r;
    return n;
  }
};

// The length of the UTF-8 sequence at `s[i]` of a character XML 1.0 can hold, or 0: a
// malformed, overlong or truncated sequence, a surrogate, past U+10FFFF, or U+FFFE/U+FFFF.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  std::uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c >> 6) != 0x2) return 0;
    cp = (cp << 6) | (c & 0x3f);
  }
  static constexpr std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff) return 0;
  return n;
}

void attribute(std::string& out, std::string_view name, std::string_view value) {
  out += " ";
  out += name;
  out += "=\"" + xml_escape(value) + "\"";
}

testsuite verdict_suite(const findings& f) {
  testsuite s{"verdict", {}};
  for (const auto& line : summarize(f).lines) {
    testcase t{"logitaudit.verdict", std::string(verdict_label(line.topic))};
    std::string said = verdict_line_text(line.topic, line.text);
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
    switch (line.answer) {
      case verdict_answer::moves:
      case verdict_answer::mixed:
      case verdict_answer::vacuous:
      case verdict_answer::invalid:
        t.outcome = result::failed, t.type = std::string(to_string(line.answer)), t.message = said;
        break;
      case verdict_answer::unproven:
      case verdict_answer::nothing:
      case verdict_answer::open:
        t.outcome = result::skipped, t.message = said;
        break;
      default: break;
    }
    // The fix and what was undecided are advice, never a pass or a failure.
    if (line.topic == verdict_topic::fix || line.topic == verdict_topic::undecided) t.outcome = result::skipped, t.message = said;
    s.cases.push_back(std::move(t));
  }
  // The second verdict, against a reference audit: its gate (every solo baseline matches its
  // reference bit for bit); streams under load are reported in it, never gated.
  if (const auto* ref = f.sections.find<reference_findings>()) {
    testcase t{"logitaudit.reference", "against audit " + std::to_string(ref->audit)};
    if (ref->all_match()) t.detail = ref->sentence;
    else t.outcome = result::failed, t.type = "reference_moved", t.message = ref->sentence;
    s.cases.push_back(std::move(t));
  }
  return s;
}

testsuite backend_suite(const findings& f, const std::string& backend) {
  testsuite s{backend, {}};
  const std::string cls = "logitaudit." + backend;
  // Each prediction judged on this backend's counted streams alone, from its tallies (stored
  // findings keep tallies, not a verdict per stream): what judge_predictions counts.
  const auto tallies = f.per_backend.find(backend);
  for (const auto& r : section<prediction_section>(f).results) {
    const auto& p = r.claim;
    int k = 0, n = 0, flagged = 0;
    if (tallies != f.per_backend.end())
      for (const auto& t : tallies->second) {
        if (std::find(p.conditions.begin(), p.conditions.end(), t.condition) == p.conditions.end()) continue;
        const int identical = p.level == identity_level::logit ? t.logit_identical : t.token_identical;
        n += t.n;
        k += p.expect == expectation::identical ? identical : t.n - identical;
        flagged += t.flagged;
      }
    const auto outcome = decide(p, k, n);
    testcase t{cls + ".predictions", p.id + ": " + p.statement};
    const std::string counts = std::to_string(k) + "/" + std::to_string(n) + " streams as predicted on " + backend +
                               (flagged ? " (" + std::to_string(flagged) + " counted apart)" : "");
    if (outcome == prediction_outcome::failed)
      t.outcome = result::failed, t.type = "prediction_failed", t.message = "Prediction " + p.id + " failed: " + counts;
    else if (outcome == prediction_outcome::undecided)
      t.outcome = result::skipped, t.message = "Prediction " + p.id + " undecided: no counted stream on " + backend;
    s.cases.push_back(std::move(t));
  }
  // Each family of its certificate.
  if (const auto* c = f.sections.find<certificate>(); c && c->backend == backend) {
    std::string line = verdict_line_text(verdict_topic::certificate, c->sentence);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    for (const auto& fam : c->families) {
      testcase t{cls + ".certify." + c->claim, fam.family};
      if (fam.status == family_status::refuted) {
        t.outcome = result::failed, t.type = "refuted", t.message = line;
        for (const auto& x : c->counterexamples)
          if (x.family == fam.family) {
            t.detail = "first counterexample: " + x.condition + ", group " + std::to_string(x.group) + ", request " +
                       std::to_string(x.request) + (x.first_difference >= 0 ? ", first difference at position " + std::to_string(x.first_difference) : "");
            break;
          }
      } else if (fam.status != family_status::passed) {
        t.outcome = result::skipped, t.message = fam.family + " " + std::string(to_string(fam.status));
      }
      if (t.detail.empty())
        t.detail = std::to_string(fam.compared) + " streams compared, " + std::to_string(fam.divergent) + " moved" +
                   (fam.bound95 >= 0 ? ", 95% bound on the rate " + fixed(100 * fam.bound95, 1) + "%" : "");
      s.cases.push_back(std::move(t));
    }
  }
  return s;
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const char ch = text[i];
    const auto b = static_cast<unsigned char>(ch);
    if (ch == '&') out += "&amp;";
    else if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '"') out += "&quot;";
    else if (ch == '\'') out += "&apos;";
    else if (ch == '\n') out += "&#10;";  // kept in an attribute too, where a raw one reads as a space
    else if (ch == '\r') out += "&#13;";
    else if (ch == '\t') out += "&#9;";
    else if (b < 0x20) out += "\xEF\xBF\xBD";
    else if (b >= 0x80) {
      const auto n = utf8_length(text, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";
        ++i;
        continue;
      }
      out.append(text.substr(i, n));
      i += n;
      continue;
    } else out += ch;
    ++i;
  }
  return out;
}

std::string render_junit_error(const junit_context& c, std::string_view why) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites";
  attribute(out, "name", "logitaudit audit " + std::to_string(c.audit));
  out += " tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"" + fixed(c.seconds, 3) + "\">\n  <testsuite name=\"audit\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\"";
  attribute(out, "time", fixed(c.seconds, 3));
  if (!c.timestamp.empty()) attribute(out, "timestamp", c.timestamp);
  if (!c.hostname.empty()) attribute(out, "hostname", c.hostname);
  out += ">\n    <testcase";
  attribute(out, "name", "audit " + std::to_string(c.audit));
  out += " classname=\"logitaudit.audit\" time=\"0\">\n      <error";
  attribute(out, "message", why);
  out += " type=\"audit_not_judged\">" + xml_escape(why) + "</error>\n    </testcase>\n  </testsuite>\n</testsuites>\n";
  return out;
}

std::string render_junit(const findings& f, const junit_context& c) {
  std::vector<testsuite> suites{verdict_suite(f)};
  for (const auto& b : f.backends) suites.push_back(backend_suite(f, b));
  int tests = 0, failures = 0, skipped = 0;
  for (const auto& s : suites) {
    tests += static_cast<int>(s.cases.size());
    failures += s.count(result::failed);
    skipped += s.count(result::skipped);
  }
  const std::string seconds = fixed(c.seconds, 3);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites";
  attribute(out, "name", "logitaudit audit " + std::to_string(c.audit));
  attribute(out, "tests", std::to_string(tests));
  attribute(out, "failures", std::to_string(failures));
  attribute(out, "errors", "0");
  attribute(out, "skipped", std::to_string(skipped));
  attribute(out, "time", seconds);
  out += ">\n";
  int id = 0;
  for (const auto& s : suites) {
    out += "  <testsuite";
    attribute(out, "name", s.name);
    attribute(out, "tests", std::to_string(s.cases.size()));
    attribute(out, "failures", std::to_string(s.count(result::failed)));
    attribute(out, "errors", "0");
    attribute(out, "skipped", std::to_string(s.count(result::skipped)));
    attribute(out, "time", s.name == "verdict" ? seconds : "0");
    attribute(out, "id", std::to_string(id++));
    if (!c.timestamp.empty()) attribute(out, "timestamp", c.timestamp);
    if (!c.hostname.empty()) attribute(out, "hostname", c.hostname);
    out += ">\n    <properties>\n      <property";
    attribute(out, "name", "audit");
    attribute(out, "value", std::to_string(c.audit));
    out += "/>\n      <property";
    attribute(out, "name", "valid");
    attribute(out, "value", f.valid ? "true" : "false: " + f.invalid_reason);
    out += "/>\n    </properties>\n";
    for (const auto& t : s.cases) {
      out += "    <testcase";
      attribute(out, "name", t.name);
      attribute(out, "classname", t.classname);
      attribute(out, "time", "0");
      if (t.outcome == result::passed && t.detail.empty()) {
        out += "/>\n";
        continue;
      }
      out += ">\n";
      if (t.outcome == result::failed) {
        out += "      <failure";
        attribute(out, "message", t.message);
        attribute(out, "type", t.type);
        out += ">" + xml_escape(t.detail.empty() ? t.message : t.detail) + "</failure>\n";
      } else if (t.outcome == result::skipped) {
        out += "      <skipped";
        attribute(out, "message", t.message);
        out += "/>\n";
      }
      if (!t.detail.empty() && t.outcome != result::failed) out += "      <system-out>" + xml_escape(t.detail) + "</system-out>\n";
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  return out + "</testsuites>\n";
}

}  // namespace logitaudit::audit
