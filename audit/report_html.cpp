// The report as one self-contained HTML file (audit/report_html.hpp).
#include "report_html.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "junit.hpp"
#include "numbers.hpp"
#include "report.hpp"
#include "verdict.hpp"

namespace logitaudit::audit {
namespace {

// `code` and **bold** inside a line, the text between them escaped.
std::string inline_marks(std::string_view line) {
  std::string out;
  bool code = false, bold = false;
  std::size_t from = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const bool tick = line[i] == '`', stars = !code && line.compare(i, 2, "**") == 0;
    if (!tick && !stars) continue;
    out += xml_escape(line.substr(from, i - from));
    if (tick) out += code ? "</code>" : "<code>", code = !code;
    else out += bold ? "</strong>" : "<strong>", bold = !bold, ++i;
    from = i + 1;
  }
  out += xml_escape(line.substr(std::min(from, line.size())));
  if (code) out += "</code>";
  if (bold) out += "</strong>";
  return out;
}

std::vector<std::string> cells_of(std::string_view row) {
  std::vector<std::string> cells;
  if (row.starts_with("|")) row.remove_prefix(1);
  if (row.ends_with("|")) row.remove_suffix(1);
  std::size_t from = 0;
  for (;;) {
    const auto bar = row.find('|', from);
    auto cell = row.substr(from, bar == std::string_view::npos ? std::string_view::npos : bar - from);
    while (!cell.empty() && cell.front() == ' ') cell.remove_prefix(1);
    while (!cell.empty() && cell.back() == ' ') cell.remove_suffix(1);
    cells.emplace_back(cell);
    if (bar == std::string_view::npos) break;
    from = bar + 1;
  }
  return cells;
}

// The streams that moved: at each one's first logit difference, its largest |delta logprob|
// (of the chosen token, over the positions both streams share), one colour per backend, the
// delta on a log scale. Drawn inline: nothing is fetched.
std::string delta_plot(const std::vector<std::string>& names, const std::vector<moved_stream>& moved) {
  struct point {
    int x;
    double y;
    std::size_t backend;
  };
  std::vector<point> points;
  std::map<std::string, std::size_t> backends;
  for (const auto& b : names) backends.emplace(b, backends.size());
  int max_x = 1;
  double lo = 1e300, hi = 0;
  for (const auto& m : moved) {
    if (m.position < 0 || !(m.max_abs_delta > 0)) continue;  // moved in the top-k alone: no delta of the chosen token to plot
    const auto b = backends.emplace(m.backend, backends.size()).first->second;
    points.push_back({m.position, m.max_abs_delta, b});
    max_x = std::max(max_x, m.position);
    lo = std::min(lo, m.max_abs_delta), hi = std::max(hi, m.max_abs_delta);
  }
  if (points.empty())
    return moved.empty() ? "<p class=\"muted\">No compared stream moved: nothing to plot.</p>\n"
                         : "<p class=\"muted\">" + std::to_string(moved.size()) +
                               " compared streams moved, none in the chosen token's logprob (their top-k moved): nothing to plot.</p>\n";
  const double y0 = std::floor(std::log10(lo)), y1 = std::max(y0 + 1, std::ceil(std::log10(hi)));
  constexpr double W = 640, H = 260, L = 60, R = 12, T = 12, B = 40;
  auto px = [&](double x) { return L + (W - L - R) * x / std::max(1, max_x); };
  auto py = [&](double y) { return T + (H - T - B) * (1 - (std::log10(y) - y0) / (y1 - y0)); };
  static const char* colours[] = {"#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989"};
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" data-testid=\"delta-plot\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\">\n<title>|delta logprob| at each moved stream's first difference</title>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B << "\" stroke=\"#888\"/>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" stroke=\"#888\"/>\n";
  for (int e = static_cast<int>(y0); e <= static_cast<int>(y1); ++e)
    s << "<text x=\"" << L - 6 << "\" y=\"" << py(std::pow(10.0, e)) + 4 << "\" text-anchor=\"end\" font-size=\"11\">1e" << e << "</text>\n";
  for (int k = 0; k <= 4; ++k) {
    const int x = static_cast<int>(std::lround(max_x * k / 4.0));
    s << "<text x=\"" << px(x) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\" font-size=\"11\">" << x << "</text>\n";
  }
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\" font-size=\"12\">position of the first logit difference</text>\n";
  s << "<text x=\"14\" y=\"" << (T + H - B) / 2 << "\" text-anchor=\"middle\" font-size=\"12\" transform=\"rotate(-90 14 " << (T + H - B) / 2
    << ")\">max |delta logprob|</text>\n";
  for (const auto& p : points)
    s << "<circle cx=\"" << px(p.x) << "\" cy=\"" << py(p.y) << "\" r=\"4\" fill=\"" << colours[p.backend % 6] << "\" fill-opacity=\"0.7\"/>\n";
  s << "</svg>\n<p class=\"legend\">";
  for (const auto& [name, i] : backends)
    s << "<span style=\"color:" << colours[i % 6] << "\">&#9679;</span> " << xml_escape(name) << " &#160; ";
  s << "(" << points.size() << " stream" << (points.size() == 1 ? "" : "s") << " moved)</p>\n";
  return s.str();
}

}  // namespace

std::vector<moved_stream> moved_streams(const findings& f) {
  std::vector<moved_stream> out;
  for (const auto& v : f.verdicts)
    if (v.counted() && !v.result->logit_identical)
      out.push_back({v.backend, v.result->first_logit_difference, v.result->max_abs_delta});
  return out;
}

std::string markdown_to_html(std::string_view markdown) {
  std::string out;
  std::istringstream lines{std::string(markdown)};
  std::vector<std::string> para;
  bool in_list = false, in_code = false, in_table = false;
  auto flush = [&] {
    if (!para.empty()) {
      out += "<p>";
      for (std::size_t i = 0; i < para.size(); ++i) out += (i ? "<br>" : "") + inline_marks(para[i]);
      out += "</p>\n";
      para.clear();
    }
    if (in_list) out += "</ul>\n", in_list = false;
    if (in_table) out += "</tbody></table>\n", in_table = false;
  };
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("```")) {
      if (in_code) out += "</pre>\n", in_code = false;
      else flush(), out += "<pre>", in_code = true;
      continue;
    }
    if (in_code) {
      out += xml_escape(line) + "\n";
      continue;
    }
    if (line.find_first_not_of(' ') == std::string::npos) {
      flush();
      continue;
    }
    if (line.starts_with("#")) {
      flush();
      const auto level = std::min<std::size_t>(4, line.find_first_not_of('#'));
      out += "<h" + std::to_string(level + 1) + ">" + inline_marks(line.substr(line.find_first_not_of("# "))) + "</h" +
             std::to_string(level + 1) + ">\n";
      continue;
    }
    if (line.starts_with("|")) {
      if (!in_table) {
        flush();
        out += "<table><thead><tr>";
        for (const auto& c : cells_of(line)) out += "<th>" + inline_marks(c) + "</th>";
        out += "</tr></thead><tbody>\n";
        in_table = true;
      } else if (line.find_first_not_of("|- :") != std::string::npos) {
        out += "<tr>";
        for (const auto& c : cells_of(line)) out += "<td>" + inline_marks(c) + "</td>";
        out += "</tr>\n";
      }
      continue;
    }
    if (line.starts_with("- ")) {
      if (!in_list) {
        flush();
        out += "<ul>\n";
        in_list = true;
      }
      out += "<li>" + inline_marks(line.substr(2)) + "</li>\n";
      continue;
    }
    if (in_list || in_table) flush();
    para.push_back(line);
  }
  if (in_code) out += "</pre>\n";
  flush();
  return out;
}

std::string render_html(const findings& f, const html_context& c) {
  const std::string title = "logitaudit audit " + std::to_string(c.audit);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" + xml_escape(title) + "</title>\n"
      "<style>\n"
      "body{font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#1f2328}\n"
      "h1{font-size:1.5em}h2{font-size:1.25em;margin-top:1.6em}h3,h4{font-size:1.05em;margin-top:1.4em}\n"
      "table{border-collapse:collapse;margin:.6em 0;font-size:12.5px;display:block;overflow-x:auto}\n"
      "th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f6f8fa}\n"
      "code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px}pre{background:#f6f8fa;padding:.7em;overflow-x:auto}\n"
      ".verdict{border:2px solid #1f2328;padding:.4em 1em;margin:1em 0}.verdict li{margin:.25em 0}\n"
      ".moves{color:#d1242f}.identical{color:#1a7f37}.muted,.legend{color:#656d76}\n"
      "</style>\n</head>\n<body>\n<h1>" + xml_escape(title) + "</h1>\n";
  if (!c.started.empty()) out += "<p class=\"muted\">Ran " + xml_escape(c.started) + ". This file fetches nothing: it is the whole report.</p>\n";
  // The verdict first: its own lines, each with the word a script switches on as its class.
  out += "<section class=\"verdict\" data-testid=\"verdict\">\n<h2>Verdict</h2>\n<ul>\n";
  for (const auto& l : summarize(f).lines) {
    const std::string answer(to_string(l.answer));
    const bool bad = l.answer == verdict_answer::moves || l.answer == verdict_answer::mixed || l.answer == verdict_answer::vacuous ||
                     l.answer == verdict_answer::invalid;
    out += "<li class=\"" + std::string(bad ? "moves" : l.answer == verdict_answer::identical ? "identical" : "other") +
           "\" data-answer=\"" + answer + "\"><strong>" + xml_escape(verdict_label(l.topic)) + ":</strong> " + xml_escape(l.text) + "</li>\n";
  }
  out += "</ul>\n</section>\n";
  out += "<section data-testid=\"delta\">\n<h2>Where the numbers moved</h2>\n" + delta_plot(f.backends, c.moved) + "</section>\n";
  // The report itself, as the Markdown report walks the analyses, its verdict already shown.
  std::string markdown = render_markdown(f);
  if (const auto at = markdown.find("\nMeasured on:"); at != std::string::npos) markdown = markdown.substr(at + 1);
  out += "<section data-testid=\"report\">\n<h2>Report</h2>\n" + markdown_to_html(markdown) + "</section>\n";
  if (!c.commands.empty() || !c.spec_json.empty()) {
    out += "<section data-testid=\"reproduce\">\n<h2>Reproduce it</h2>\n";
    if (!c.commands.empty()) {
      out += "<pre>";
      for (const auto& cmd : c.commands) out += xml_escape(cmd) + "\n";
      out += "</pre>\n";
    }
    if (!c.spec_json.empty()) out += "<details><summary>The spec (spec.json)</summary>\n<pre>" + xml_escape(c.spec_json) + "</pre>\n</details>\n";
    out += "</section>\n";
  }
  return out + "</body>\n</html>\n";
}

}  // namespace logitaudit::audit
