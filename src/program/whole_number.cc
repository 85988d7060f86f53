#include "program/whole_number.h"

#include <cctype>

namespace stoker {

std::string WholeNumberProblem(const std::string& value) {
  size_t at = 0;
  while (at < value.size() && std::isspace(static_cast<unsigned char>(value[at])) != 0) ++at;
  if (at < value.size() && value[at] == '-') {
    return value + " is negative: give a whole number of 0 or more";
  }
  if (at < value.size() && value[at] == '+') ++at;
  if (at + 1 < value.size() && value[at] == '0' &&
      (std::isdigit(static_cast<unsigned char>(value[at + 1])) != 0 || value[at + 1] == 'x' ||
       value[at + 1] == 'X')) {
    return value +
           " is not a decimal number (a leading 0 would read as octal, 0x as hexadecimal): write "
           "it in decimal, without leading zeros";
  }
  return "";
}

}  // namespace stoker
