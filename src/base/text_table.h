// Text for people: numbers with thousands separators and plain-text tables, as the command-line
// reports print them. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

// 1234567 -> "1,234,567".
std::string GroupThousands(uint64_t value);

// A plain-text table: columns padded to their widest cell, two spaces apart; the columns listed
// in `left` left-aligned, the others right-aligned. One line per row.
std::string Tabulate(const std::vector<std::vector<std::string>>& rows,
                     const std::vector<size_t>& left);

}  // namespace stoker
