// The answer before the evidence: what an audit found, in at most seven lines, each written
// from the findings' own tallies (never from their sentences), so that it cannot say what the
// tables beneath it do not. The text, Markdown and console forms of a report open with it;
// the JSON report carries it as data (api/spec_json.hpp, report_json).
#pragma once

#include <boost/describe/enum.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "findings.hpp"

namespace logitaudit::audit {

// What a line is about, in the order a report gives them.
BOOST_DEFINE_ENUM_CLASS(verdict_topic,
  certificate,      // a certify job's outcome: certified, refuted, incomplete or invalid, first
  solo,             // serial repeats (and a search's solo reference) against their baseline
  concurrency,      // bursts of identical requests, cross-batches, neighbours, searches, load probes
  cache_reuse,      // the prompt cache warmed, then reused
  seeded_sampling,  // seeded sampling under concurrency
  fix,              // a local server whose numbers moved under load, with the settings that decide it: how to find the fix here
  comparator,       // the positive controls and the path's selftest: is "identical" shown sharp?
  undecided        // what the audit planned but could not decide, and what it did not test
)
std::string_view to_string(verdict_topic t);
std::optional<verdict_topic> parse_verdict_topic(std::string_view name);

// One word a script can switch on.
BOOST_DEFINE_ENUM_CLASS(verdict_answer,
  identical,  // every counted stream of the topic was logit-identical to its baseline
  moves,      // on every backend, some stream's logits moved
  mixed,      // identical on some backends, moved on others
  sharp,      // the controls diverged (and the findings are valid)
  unproven,   // no counted control: nothing shows the comparator sees differences
  vacuous,    // no positive control diverged (and no selftest passed): the findings are invalid
  invalid,    // the findings are invalid for another reason (the server changed, a fingerprint is missing)
  nothing,    // undecided: nothing
  open       // undecided: something (the line says what)
)
std::string_view to_string(verdict_answer a);

struct verdict_line {
  verdict_topic topic = verdict_topic::solo;
  verdict_answer answer = verdict_answer::identical;
  std::string text;  // as printed, without its label: "identical: 60/60 serial repeats logit-identical"
};

struct verdict {
  // At most seven, in topic order (but the comparator's first when the findings are invalid); a
  // topic whose conditions counted no stream has no line, and its reason is in `undecided`'s.
  std::vector<verdict_line> lines;
};

// Pure: reads nothing but `f`.
verdict summarize(const findings& f);

// "Solo", "Concurrency", ...: a line's label.
std::string_view verdict_label(verdict_topic t);

// One line as a report's text opens: "Solo:        identical (60/60 ...": its label, padded.
std::string verdict_line_text(verdict_topic t, std::string_view text);
// Every line so, one per line.
std::string verdict_text(const verdict& v);
// Every line as a Markdown list item: "- **Solo:** identical ...".
std::string verdict_markdown(const verdict& v);

}  // namespace logitaudit::audit
