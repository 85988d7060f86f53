// Numbers on the command line are checked as numbers. CLI11 converts an unsigned option's value
// with strtoull, which takes "-1" for 2^64 - 1: `--steps -1` would run for ever and
// `--seq-len -5` would be reported as 18446744073709551611; and it reads "010" as octal 8.
// RefuseNegativeNumbers gives every unsigned option of `app` and of its subcommands a check that
// runs before any conversion or transform (unit suffixes) and refuses a value with a minus sign,
// or a leading 0 or 0x, naming the option and the value as typed. Call it once every option is
// added; for stoker and stoker-train alike, and for values from a --config file too (they go
// through the same checks).
//
// Upper bounds are the configurations' own (LoaderConfig::Problems, the trainer's model shape):
// they depend on more than one option and on the machine.
#pragma once

#include <CLI/CLI.hpp>

namespace stoker::cli {

void RefuseNegativeNumbers(CLI::App* app);

}  // namespace stoker::cli
