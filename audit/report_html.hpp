// An audit's report as one HTML file that travels (an upstream bug report, a nightly e-mail):
// no external request (no script, no stylesheet, no font, no image fetched: the style is inline,
// the plot an inline SVG, and there is no link), the verdict first, then the report's sections
// as the Markdown report gives them (the certificate, the tables, the migration matrix, the
// fingerprints), a plot of the |delta logprob| of every stream that moved at its first
// difference, and the commands that reproduce it, as text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "findings.hpp"

namespace logitaudit::audit {

// A compared stream whose logits moved: where first, and by how much at most.
struct moved_stream {
  std::string backend;
  int position = 0;            // its first logit difference
  double max_abs_delta = 0;    // its largest |delta logprob| of the chosen token
};
// The moved streams among `f`'s verdicts (an audit just evaluated; stored findings keep no
// verdict per stream: their runs do).
std::vector<moved_stream> moved_streams(const findings& f);

struct html_context {
  std::int64_t audit = 0;
  std::vector<moved_stream> moved;     // plotted
  std::string started;                 // when it ran ("" leaves it out)
  std::vector<std::string> commands;   // what reproduces it, one command each, shown as text
  std::string spec_json;               // the spec, shown folded ("" leaves it out)
};

// Pure: reads nothing but `f` and `c`.
std::string render_html(const findings& f, const html_context& c);

// Our own Markdown (render_markdown's: headings, tables, lists, fenced code, `code`, **bold**)
// as HTML, every character escaped; what it does not know stays a paragraph of text.
std::string markdown_to_html(std::string_view markdown);

}  // namespace logitaudit::audit
