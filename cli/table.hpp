// Plain column tables for the terminal: left-aligned text, right-aligned numbers.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace logitaudit::cli {

class table {
 public:
  explicit table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::size_t size() const { return rows_.size() - 1; }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace logitaudit::cli
