// The values on the command line are checked the same way by every program on stoker (`stoker`,
// `stoker-train`, a trainer of one's own), before any of them is converted:
//
// - Numbers as numbers. CLI11 converts an unsigned option's value with strtoull (base 0), which
//   skips white space, takes "-1" for 2^64 - 1 (`--steps -1` would run for ever, `--seq-len -5`
//   be reported as 18446744073709551611) and reads "010" as octal 8. WholeNumberProblem
//   (stoker/whole_number.h) is that check without CLI11; every unsigned option refuses a minus
//   sign, a leading 0 or 0x, naming the option and the value as typed.
// - No empty values. `--checkpoint-dir ""` (a job script's CHECKPOINT_DIR set to nothing) would
//   otherwise mean "no checkpoints" and `--data ""` fail later with a vaguer message; an option
//   that takes a value refuses an empty one, naming the option.
//
// CheckOptionValues gives every option of a CLI11 app and of its subcommands these checks; call
// it once every option is added (values from a --config file go through the same checks). It is
// inline and needs CLI11 (header only): include this header only where the command line is
// bound, as every file that includes CLI11 costs 8 to 16 s to compile.
//
// Upper bounds are the configurations' own (LoaderConfig::Problems, a trainer's model shape):
// they depend on more than one option and on the machine. Thread safe (no state).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "stoker/whole_number.h"

namespace stoker {

inline void CheckOptionValues(CLI::App* app) {
  for (CLI::Option* option : app->get_options()) {
    if (option->get_type_size() == 0) continue;  // a flag: no value
    // transform() puts the check first: it sees the value as typed, before a unit suffix is
    // expanded or the text converted. No description, so --help stays as it is.
    // "UINT": CLI11's type name of options bound to unsigned integers (CLI/TypeTools.hpp).
    const bool whole = option->get_type_name().starts_with("UINT");
    option->transform(CLI::Validator(
        [whole](std::string& value) -> std::string {
          if (value.empty()) return "an empty value (leave the option out for its default)";
          return whole ? WholeNumberProblem(value) : std::string();
        },
        ""));
  }
  for (CLI::App* sub : app->get_subcommands({})) CheckOptionValues(sub);
}

}  // namespace stoker
