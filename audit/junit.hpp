// An audit's judgement as JUnit XML, the test report every CI system reads (Jenkins' junit
// step, GitLab's artifacts:reports:junit, GitHub Actions' test reporters): a nightly audit then
// shows as tests that pass, fail or were skipped, each failure carrying its verdict line.
//
// The document: <testsuites> holding one <testsuite> for the verdict (a testcase per line of
// audit/verdict.hpp: failed where the numbers moved or the findings are invalid, skipped where
// nothing decided it; and the reference verdict's gate, every solo baseline against the
// reference audit's) and one per backend, with a testcase per prediction (judged on that
// backend's streams alone) and per certify family of its certificate. The shape is the one the JUnit schema that
// Jenkins and GitLab accept describes (tests/data/junit.xsd): counts on every suite, `time` in
// seconds, a <failure message type> with the detail as its text, <skipped message>.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "findings.hpp"

namespace logitaudit::audit {

struct junit_context {
  std::int64_t audit = 0;
  std::string timestamp;  // ISO 8601, when the audit started ("" leaves it out)
  std::string hostname;   // where it ran ("" leaves it out)
  double seconds = 0;     // the audit's wall time
};

// Pure: reads nothing but `f` and `c`.
std::string render_junit(const findings& f, const junit_context& c);
// An audit that has no judgement (it failed, was cancelled, or every request failed): one
// testcase in error, its message `why`, so that CI finds a report exactly when the job broke.
std::string render_junit_error(const junit_context& c, std::string_view why);

// `text` with &, <, >, " and ' as entities, tab and line ends as character references (an
// attribute keeps them so), and every character XML 1.0 cannot hold (other controls, malformed
// or overlong UTF-8, surrogates, U+FFFE and U+FFFF) as U+FFFD.
std::string xml_escape(std::string_view text);

}  // namespace logitaudit::audit
