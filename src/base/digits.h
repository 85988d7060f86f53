// A whole number as Slurm and the job scripts write it: decimal digits only (no sign, no white
// space, no suffix), below 2^64. The one digit parser of stoker's settings: the job scripts' own
// (src/job) and the programs' integer options (program/whole_number.h). Thread safe (no state).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace stoker {

// The value of `text`, or nullopt when it is not such a number (empty, another character, or
// 2^64 and above).
inline std::optional<uint64_t> ParseDigits(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace stoker
