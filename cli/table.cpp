#include "table.hpp"

#include <algorithm>

namespace logitaudit::cli {
namespace {

bool numeric(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '/' || c == '%'; }) &&
         s != "-";
}

}  // namespace

void table::print(std::ostream& out) const {
  std::vector<std::size_t> width;
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    for (const auto& [before, note] : notes_)
      if (before == r) out << note << "\n";
    std::string line;
    for (std::size_t i = 0; i < rows_[r].size(); ++i) {
      const auto& cell = rows_[r][i];
      const std::string pad(width[i] - cell.size(), ' ');
      const bool last = i + 1 == rows_[r].size();
      if (r > 0 && numeric(cell)) line += pad + cell;
      else line += last ? cell : cell + pad;
      if (!last) line += "  ";
    }
    out << line << "\n";
  }
}

}  // namespace logitaudit::cli
