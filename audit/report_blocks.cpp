// The grids and cells of the reports (audit/report_blocks.hpp).
#include "report_blocks.hpp"

#include <algorithm>

#include "numbers.hpp"

namespace logitaudit::audit {

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

std::string cell(int k, int n) { return share(k, n, 3); }

std::string pct_cell(int k, int n) { return n ? std::to_string(k) + "/" + std::to_string(n) + " (" + fixed(100.0 * k / n, 0) + "%)" : "-"; }

std::string p_text(double p) { return p < 1e-4 ? "p<0.0001" : "p=" + fixed(p, 4); }

void grid_text(std::string& out, const grid& g) {
  std::vector<std::size_t> w(g.front().size(), 0);
  for (const auto& row : g)
    for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
  for (const auto& row : g) {
    std::string line = " ";
    for (std::size_t i = 0; i < row.size(); ++i) line += i + 1 == row.size() ? row[i] : pad(row[i], w[i] + 2);
    out += line + "\n";
  }
}

void grid_markdown(std::string& out, const grid& g) {
  // A cell's own "|" (the migration matrix's "solo | under load") would end the cell.
  auto escaped = [](const std::string& c) {
    std::string e;
    for (char ch : c) e += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return e;
  };
  for (std::size_t r = 0; r < g.size(); ++r) {
    out += "|";
    for (const auto& c : g[r]) out += " " + escaped(c) + " |";
    out += "\n";
    if (r == 0) {
      out += "|";
      for (std::size_t i = 0; i < g[r].size(); ++i) out += " --- |";
      out += "\n";
    }
  }
}

void write_grid(std::string& out, const grid& g, report_format fmt) {
  fmt == report_format::markdown ? grid_markdown(out, g) : grid_text(out, g);
}

void write_title(std::string& out, const std::string& title, report_format fmt) {
  out += fmt == report_format::markdown ? "\n### " + title + "\n\n" : "\n" + title + ":\n";
}

}  // namespace logitaudit::audit
