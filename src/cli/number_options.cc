#include "cli/number_options.h"

#include <cctype>
#include <string>

namespace stoker::cli {

namespace {

// CLI11's name for the type of options bound to unsigned integers (CLI/TypeTools.hpp), which
// get_type_name() starts with.
constexpr std::string_view kUnsignedType = "UINT";

// strtoull (base 0, as CLI11 calls it) skips any white space, wraps a negative value and reads
// a leading 0 as octal and 0x as hexadecimal: "010" would be 8.
std::string CheckWholeNumber(std::string& value) {
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
           " is not a decimal number (a leading 0 would read as octal, 0x as "
           "hexadecimal): write it in decimal, without leading zeros";
  }
  return "";
}

}  // namespace

void RefuseNegativeNumbers(CLI::App* app) {
  for (CLI::Option* option : app->get_options()) {
    if (!option->get_type_name().starts_with(kUnsignedType)) continue;
    // transform() puts the check first: it sees the value as typed, before a unit suffix is
    // expanded or the text converted. No description, so --help stays as it is.
    option->transform(CLI::Validator(CheckWholeNumber, ""));
  }
  for (CLI::App* sub : app->get_subcommands({})) RefuseNegativeNumbers(sub);
}

}  // namespace stoker::cli
