#include "base/text_table.h"

#include <fmt/format.h>

#include <algorithm>

namespace stoker {

std::string Tabulate(const std::vector<std::vector<std::string>>& rows,
                     const std::vector<size_t>& left) {
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      const bool is_left = std::find(left.begin(), left.end(), c) != left.end();
      line += is_left ? fmt::format("{:<{}}", row[c], width[c])
                      : fmt::format("{:>{}}", row[c], width[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string GroupThousands(uint64_t value) {
  const std::string digits = std::to_string(value);
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return grouped;
}

}  // namespace stoker
