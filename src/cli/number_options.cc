#include "cli/number_options.h"

#include <string>

namespace stoker::cli {

namespace {

// CLI11's name for the type of options bound to unsigned integers (CLI/TypeTools.hpp), which
// get_type_name() starts with.
constexpr std::string_view kUnsignedType = "UINT";

std::string RefuseNegative(std::string& value) {
  const size_t first = value.find_first_not_of(" \t");
  if (first == std::string::npos || value[first] != '-') return "";
  return value + " is negative: give a whole number of 0 or more";
}

}  // namespace

void RefuseNegativeNumbers(CLI::App* app) {
  for (CLI::Option* option : app->get_options()) {
    if (!option->get_type_name().starts_with(kUnsignedType)) continue;
    // transform() puts the check first: it sees the value as typed, before a unit suffix is
    // expanded or the text converted. No description, so --help stays as it is.
    option->transform(CLI::Validator(RefuseNegative, ""));
  }
  for (CLI::App* sub : app->get_subcommands({})) RefuseNegativeNumbers(sub);
}

}  // namespace stoker::cli
