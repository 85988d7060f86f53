#include "program/whole_number.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>
#include <optional>
#include <string_view>

#include "base/digits.h"

namespace stoker {

std::string WholeNumberProblem(const std::string& value, bool is_signed) {
  const auto digit = [&](size_t at) {
    return at < value.size() && std::isdigit(static_cast<unsigned char>(value[at])) != 0;
  };
  if (!value.empty() && (std::isspace(static_cast<unsigned char>(value.front())) != 0 ||
                         std::isspace(static_cast<unsigned char>(value.back())) != 0)) {
    return value + " has white space around it: give the number alone";
  }
  if (!value.empty() && value[0] == '+') return value + " has a '+' sign: give the number alone";
  const bool negative = !value.empty() && value[0] == '-';
  if (negative && !is_signed) return value + " is negative: give a whole number of 0 or more";
  const size_t first = negative ? 1 : 0;
  size_t end = first;
  while (digit(end)) ++end;
  if (end == first) return "";  // "auto", a word: the option's conversion says what it takes
  if (value[first] == '0' &&
      (end > first + 1 || (end < value.size() && (value[end] == 'x' || value[end] == 'X')))) {
    return value +
           " is not a decimal number (a leading 0 would read as octal, 0x as hexadecimal): write "
           "it in decimal, without leading zeros";
  }
  const std::optional<uint64_t> magnitude =
      ParseDigits(std::string_view(value).substr(first, end - first));
  const uint64_t most = !is_signed ? std::numeric_limits<uint64_t>::max()
                        : negative ? uint64_t{1} << 63
                                   : (uint64_t{1} << 63) - 1;
  if (!magnitude || *magnitude > most) {
    return fmt::format("{} is beyond 64 bits: at {} {}{}", value, negative ? "least" : "most",
                       negative ? "-" : "", most);
  }
  return "";
}

}  // namespace stoker
