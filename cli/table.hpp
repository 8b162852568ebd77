// Plain column tables for the terminal: left-aligned text, right-aligned numbers.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace logitaudit::cli {

class table {
 public:
  explicit table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // A line printed as it is before the next row (a segment boundary); it sets no width.
  void add_note(std::string line) { notes_.emplace_back(rows_.size(), std::move(line)); }
  std::size_t size() const { return rows_.size() - 1; }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::pair<std::size_t, std::string>> notes_;  // (the row it precedes, the line)
};

}  // namespace logitaudit::cli
