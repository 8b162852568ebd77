// The report formats that leave logitaudit: JUnit XML (audit/junit.hpp), what CI reads of an
// audit, and the HTML file (audit/report_html.hpp), what travels. JUnit: Each testcase fails, passes or is
// skipped as the findings say, a failure's message is its verdict line, the prediction that
// held on one backend and failed on the other fails in that backend's suite alone, and the
// document is valid against the JUnit schema Jenkins and GitLab read (tests/data/junit.xsd,
// checked by xmllint).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "audit/certify.hpp"
#include "audit/findings.hpp"
#include "audit/junit.hpp"
#include "audit/report_html.hpp"
#include "audit/plan.hpp"
#include "audit/predictions.hpp"
#include "audit/reference.hpp"
#include "audit/verdict.hpp"
#include "storage/documents.hpp"
#include "support/process.hpp"

using namespace logitaudit;

namespace {

// Two backends, serial repeats and a prompt control; on "b" one repeat moved.
audit::findings two_backends() {
  audit::audit_spec s;
  s.backends = {{"a", "http://127.0.0.1:1", "llama"}, {"b", "http://127.0.0.1:2", "llama"}};
  s.prompts = {"The history of the printing press begins", "Once upon a time, in a quiet village,"};
  s.conditions = {{"repeat_greedy", audit::condition_kind::repeat, 1, 3, false, false},
                  {"control_prompt", audit::condition_kind::control_prompt, 1, 1, false, false}};
  s.predictions = {{"P1", "repeats are <identical> & \"bit\" for 'bit'\x01", {"repeat_greedy"}, audit::identity_level::logit,
                    audit::expectation::identical, 1.0}};
  const auto plan = audit::make_plan(s);
  std::vector<audit::observed_run> runs;
  for (const auto& g : plan.groups)
    for (std::size_t i = 0; i < g.requests.size(); ++i) {
      double lp = -0.5;
      if (g.kind == audit::condition_kind::control_prompt) lp = -0.25;
      if (g.backend == "b" && g.condition == "repeat_greedy" && g.replicate == 0) lp = -0.5000001;
      audit::logit_stream st;
      st.tokens.push_back({7, lp, {{7, lp, ""}}, "x"});
      runs.push_back({g.index, i, st, {}, 1.0});
    }
  return audit::evaluate(s, plan, runs, {});
}

std::string between(const std::string& xml, const std::string& from, const std::string& to) {
  const auto a = xml.find(from);
  if (a == std::string::npos) return "";
  const auto b = xml.find(to, a);
  return xml.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

void expect_valid(const std::string& xml) {
  const auto file = std::filesystem::temp_directory_path() / ("logitaudit-junit-" + std::to_string(::getpid()) + ".xml");
  std::ofstream(file) << xml;
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/xmllint")) << "xmllint (libxml2-utils) checks the JUnit schema: scripts/bootstrap.sh --test";
  const auto r = test_support::run_process(
      {"/usr/bin/xmllint", "--noout", "--schema", std::string(LOGITAUDIT_TEST_DATA) + "/junit.xsd", file.string()}, {},
      std::chrono::seconds(30));
  EXPECT_EQ(r.code, 0) << r.out << r.err << xml;
  std::filesystem::remove(file);
}

TEST(junit, a_prediction_fails_in_the_suite_of_the_backend_it_failed_on_with_the_verdict_line_and_the_document_is_valid) {
  const auto f = two_backends();
  const auto xml = audit::render_junit(f, {42, "2026-12-05T13:02:42", "host-1", 12.5});
  expect_valid(xml);
  EXPECT_NE(xml.find("<testsuites name=\"logitaudit audit 42\""), std::string::npos);
  // The verdict's suite: the solo line failed (identical on a, moved on b), with its line.
  const auto verdict = between(xml, "<testsuite name=\"verdict\"", "</testsuite>");
  ASSERT_FALSE(verdict.empty()) << xml;
  std::string solo_line;
  for (const auto& l : audit::summarize(f).lines)
    if (l.topic == audit::verdict_topic::solo) solo_line = audit::verdict_line_text(l.topic, l.text);
  ASSERT_FALSE(solo_line.empty());
  while (solo_line.back() == '\n' || solo_line.back() == ' ') solo_line.pop_back();  // the line, not its end
  EXPECT_NE(verdict.find("<failure message=\"" + audit::xml_escape(solo_line) + "\" type=\"mixed\""), std::string::npos) << verdict;
  // The prediction: held on a, failed on b; its statement escaped, its control character replaced.
  const auto a = between(xml, "<testsuite name=\"a\"", "</testsuite>"), b = between(xml, "<testsuite name=\"b\"", "</testsuite>");
  const std::string name = "P1: repeats are &lt;identical&gt; &amp; &quot;bit&quot; for &apos;bit&apos;\xEF\xBF\xBD";
  EXPECT_NE(a.find("<testcase name=\"" + name + "\" classname=\"logitaudit.a.predictions\" time=\"0\"/>"), std::string::npos) << a;
  EXPECT_NE(b.find("<testcase name=\"" + name + "\" classname=\"logitaudit.b.predictions\""), std::string::npos) << b;
  EXPECT_NE(b.find("<failure message=\"Prediction P1 failed: 2/3 streams as predicted on b\" type=\"prediction_failed\""), std::string::npos) << b;
  EXPECT_NE(b.find("tests=\"1\" failures=\"1\""), std::string::npos) << b;
  EXPECT_NE(a.find("tests=\"1\" failures=\"0\""), std::string::npos) << a;
  EXPECT_NE(xml.find("timestamp=\"2026-12-05T13:02:42\" hostname=\"host-1\""), std::string::npos);
  // The daemon renders stored findings, which keep tallies and no verdict per stream: the same
  // document.
  const auto stored = storage::decode_findings(storage::encode_findings(f));
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->verdicts.empty());
  EXPECT_EQ(audit::render_junit(*stored, {42, "2026-12-05T13:02:42", "host-1", 12.5}), xml);
}

TEST(junit, each_certify_family_passes_fails_with_the_certificate_line_or_is_skipped_and_a_reference_gate_fails_when_a_baseline_moved) {
  auto f = two_backends();
  audit::certificate c;
  c.claim = "batch-invariant";
  c.backend = "a";
  c.outcome = audit::certificate_outcome::refuted;
  c.sentence = "refuted: co_residency moved at width 4, 5/5 by replay";
  audit::family_result held, moved, untested;
  held.family = "solo", held.status = audit::family_status::passed, held.compared = 12, held.bound95 = 0.22;
  moved.family = "co_residency", moved.status = audit::family_status::refuted, moved.compared = 8, moved.divergent = 3;
  untested.family = "prefix_reuse", untested.status = audit::family_status::not_tested;
  c.families = {held, moved, untested};
  audit::counterexample x;
  x.family = "co_residency", x.condition = "co_residency@4", x.group = 9, x.request = 2, x.first_difference = 5;
  c.counterexamples = {x};
  f.sections.put<audit::certificate>() = c;
  audit::reference_findings ref;
  ref.audit = 7;
  ref.sentence = "Against audit 7: solo 2/3 baseline stream(s) match bit for bit";
  ref.verdicts = {{0, 0, audit::reference_outcome::differs, std::nullopt, ""}};
  ref.pooled = {{"baseline", 3, 2, 2, 0}};
  f.sections.put<audit::reference_findings>() = ref;
  const auto xml = audit::render_junit(f, {43, "", "", 0});
  expect_valid(xml);
  const auto a = between(xml, "<testsuite name=\"a\"", "</testsuite>");
  std::string line = audit::verdict_line_text(audit::verdict_topic::certificate, c.sentence);
  while (line.back() == '\n' || line.back() == ' ') line.pop_back();
  EXPECT_NE(a.find("<testcase name=\"solo\" classname=\"logitaudit.a.certify.batch-invariant\" time=\"0\">\n      <system-out>12 streams "
                   "compared, 0 moved, 95% bound on the rate 22.0%</system-out>"),
            std::string::npos)
      << a;
  EXPECT_NE(a.find("<failure message=\"" + audit::xml_escape(line) +
                   "\" type=\"refuted\">first counterexample: co_residency@4, group 9, request 2, first difference at position 5</failure>"),
            std::string::npos)
      << a;
  EXPECT_NE(a.find("<skipped message=\"prefix_reuse not_tested\"/>"), std::string::npos) << a;
  EXPECT_EQ(between(xml, "<testsuite name=\"b\"", "</testsuite>").find("certify"), std::string::npos) << "the certificate is a's";
  const auto verdict = between(xml, "<testsuite name=\"verdict\"", "</testsuite>");
  EXPECT_NE(verdict.find("<testcase name=\"against audit 7\" classname=\"logitaudit.reference\" time=\"0\">\n      <failure message=\"" +
                         audit::xml_escape(ref.sentence) + "\" type=\"reference_moved\""),
            std::string::npos)
      << verdict;
  EXPECT_EQ(xml.find("timestamp="), std::string::npos) << "no start time, no attribute";
  // An audit with no judgement is one testcase in error; a line end stays one in an attribute,
  // and bytes XML cannot hold (an overlong sequence, a lone continuation byte) are replaced.
  const auto err = audit::render_junit_error({44}, "ended failed: line\nbreak \xC0\xAF <x>");
  expect_valid(err);
  EXPECT_NE(err.find("errors=\"1\""), std::string::npos) << err;
  EXPECT_NE(err.find("<error message=\"ended failed: line&#10;break \xEF\xBF\xBD\xEF\xBF\xBD &lt;x&gt;\" type=\"audit_not_judged\">"),
            std::string::npos)
      << err;
  std::string replaced;
  for (int i = 0; i < 10; ++i) replaced += "\xEF\xBF\xBD";  // byte by byte: a surrogate (3), U+FFFE (3), past U+10FFFF (4)
  EXPECT_EQ(audit::xml_escape("\xED\xA0\x80\xEF\xBF\xBE\xF4\x90\x80\x80ok"), replaced + "ok");
  EXPECT_EQ(audit::xml_escape("caf\xC3\xA9 \xF0\x9F\x99\x82"), "caf\xC3\xA9 \xF0\x9F\x99\x82") << "valid UTF-8 stays";
}

// The HTML report fetches nothing (no script, stylesheet, image, font or link: the one URL in it
// is the SVG namespace), opens with the verdict, plots each stream that moved, escapes what the
// findings hold (a prediction's statement here), and keeps the Markdown report's tables.
TEST(report_html, one_file_that_fetches_nothing_with_the_verdict_first_the_moved_streams_plotted_and_everything_escaped) {
  auto f = two_backends();
  auto& p = f.sections.put<audit::prediction_section>().results.at(0).claim;  // the section evaluate wrote
  p.statement = "<script>alert(1)</script> & more";
  const auto html =
      audit::render_html(f, {42, audit::moved_streams(f), "2026-12-05T13:02:42.411Z", {"logitaudit replay 42 --backend b"}, "{\"a\": \"<b>\"}"});
  for (const char* fetch : {"<script", "src=", "href=", "url(", "@import", "<link", "<img", "<iframe"})
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  for (std::size_t at = html.find("http"); at != std::string::npos; at = html.find("http", at + 1))
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << html.substr(at, 40);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"), std::string::npos);
  const auto verdict = html.find("data-testid=\"verdict\""), plot = html.find("data-testid=\"delta-plot\""),
             report = html.find("data-testid=\"report\"");
  ASSERT_NE(verdict, std::string::npos);
  EXPECT_LT(verdict, plot);
  EXPECT_LT(plot, report);
  int moved = 0;
  for (const auto& v : f.verdicts) moved += v.result && !v.result->logit_identical;
  int circles = 0;
  for (std::size_t at = html.find("<circle"); at != std::string::npos; at = html.find("<circle", at + 1)) ++circles;
  EXPECT_EQ(circles, moved);
  EXPECT_GT(moved, 0);
  EXPECT_NE(html.find("<th>condition</th>"), std::string::npos) << "the pooled table";
  EXPECT_NE(html.find("<pre>logitaudit replay 42 --backend b\n</pre>"), std::string::npos);
  EXPECT_NE(html.find("{&quot;a&quot;: &quot;&lt;b&gt;&quot;}"), std::string::npos);
  EXPECT_EQ(audit::markdown_to_html("### T `x<y`\n\n| a | b |\n| --- | --- |\n| 1 | **2** |\n- one\n"),
            "<h4>T <code>x&lt;y</code></h4>\n<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody>\n<tr><td>1</td><td><strong>2</strong>"
            "</td></tr>\n</tbody></table>\n<ul>\n<li>one</li>\n</ul>\n");
}

}  // namespace
