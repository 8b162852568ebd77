// What every part of a report is built from: tables as grids of cells, written as aligned text
// or as Markdown, and the cells the parts share. Pure.
#pragma once

#include <string>
#include <vector>

#include "analysis.hpp"

namespace logitaudit::audit {

// A table as rows of cells; the first row is the header.
using grid = std::vector<std::vector<std::string>>;

std::string pad(std::string s, std::size_t w);
// "10/16 ( 62%)": k of n, aligned.
std::string cell(int k, int n);
// "10/16 (62%)", "-" for none.
std::string pct_cell(int k, int n);
// "p<0.0001", "p=0.0312".
std::string p_text(double p);

void grid_text(std::string& out, const grid& g);
void grid_markdown(std::string& out, const grid& g);
void write_grid(std::string& out, const grid& g, report_format fmt);
// A part's title: "\n### T\n\n" in Markdown, "\nT:\n" in text.
void write_title(std::string& out, const std::string& title, report_format fmt);

}  // namespace logitaudit::audit
