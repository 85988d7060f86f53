// Numbers on the command line are checked as numbers, the same way by every program on stoker
// (`stoker`, `stoker-train`, a trainer of one's own). CLI11 converts an unsigned option's value
// with strtoull (base 0), which skips white space, takes "-1" for 2^64 - 1 (`--steps -1` would
// run for ever, `--seq-len -5` be reported as 18446744073709551611) and reads "010" as octal 8.
//
// WholeNumberProblem (stoker/whole_number.h) is that check without CLI11. CheckUnsignedOptions
// gives every unsigned option of a CLI11 app and of its subcommands a check that runs before any
// conversion or transform (unit suffixes) and refuses a minus sign, a leading 0 or 0x, naming the
// option and the value as typed; call it once every option is added (values from a --config file go
// through the same checks). It is inline and needs CLI11 (header only): include this header only
// where the command line is bound, as every file that includes CLI11 costs 8 to 16 s to compile.
//
// Upper bounds are the configurations' own (LoaderConfig::Problems, a trainer's model shape):
// they depend on more than one option and on the machine. Thread safe (no state).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "stoker/whole_number.h"

namespace stoker {

inline void CheckUnsignedOptions(CLI::App* app) {
  for (CLI::Option* option : app->get_options()) {
    // "UINT": CLI11's type name of options bound to unsigned integers (CLI/TypeTools.hpp).
    if (!option->get_type_name().starts_with("UINT")) continue;
    // transform() puts the check first: it sees the value as typed, before a unit suffix is
    // expanded or the text converted. No description, so --help stays as it is.
    option->transform(
        CLI::Validator([](std::string& value) { return WholeNumberProblem(value); }, ""));
  }
  for (CLI::App* sub : app->get_subcommands({})) CheckUnsignedOptions(sub);
}

}  // namespace stoker
