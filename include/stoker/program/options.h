// The settings schema (stoker/program/settings.h) on a CLI11 command line: one program's
// settings as flags, then the environment under them. What a value may be is checked the same way
// for the command line, the environment and a --config file, before it is converted:
//
// - Numbers as numbers. CLI11 converts an integer option's value with strtoull or strtoll (base
//   0), which skips white space, takes "-1" for 2^64 - 1 (`--steps -1` would run for ever), reads
//   "010" as octal 8 and gives 2^64 - 1 for any larger number: every integer option takes
//   decimal digits only (program/whole_number.h: a '-' only where signed, no leading 0 or 0x,
//   no white space or '+', within 64 bits), naming the option and the value as typed.
// - No empty values. `--checkpoint-dir ""` (a job's CHECKPOINT_DIR set to nothing) would
//   otherwise mean "no checkpoints": an option that takes a value refuses an empty one, and so
//   does a variable, but those whose empty value means "none" (WEIGHTS=, TRACE_DIR=).
//
// Precedence, highest first: the command line, the environment, a --config file (`stoker run`),
// the program's default. Upper bounds are the configurations' own (LoaderConfig::Problems).
//
// Needs CLI11 (header only; a file that includes it costs 8 to 16 s to compile): include it only
// where the command line is bound. Part of stoker::program. One thread uses a CommandLine.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stoker/program/settings.h"

namespace stoker::program {

class CommandLine {
 public:
  // Adds every setting `program` takes to `app`, bound to `*settings`, whose values are the
  // defaults --help shows (start from DefaultSettings(program)). --weights excludes
  // --weights-schedule and --resume excludes --start-over on the command line; the settings'
  // check (RunSettings::Problems) refuses them from anywhere.
  CommandLine(CLI::App* app, Program program, ProgramSettings* settings);

  // After app->parse(): every setting the command line did not give whose variable is set takes
  // the variable's value, checked and converted as the flag's value would be, and
  // settings->run.origins records it (RunSettings::NameOrigins names it in every problem of that
  // setting). Throws ConfigError naming the variable, its value and the flag.
  void ApplyEnvironment();

  // Once every source has been applied (the command line, the environment, a --config file):
  // settings->run.given takes the flags any of them gave, and settings->run.program_shared the
  // program's shared settings (ProgramShared), which the run session compares across ranks.
  void Settle();

  // Each setting of this program that has a variable, as NAME=VALUE: the value given (on the
  // command line or in the environment) or the default. What --check prints for a job script.
  std::vector<std::string> VariableLines() const;

 private:
  Program program_;
  ProgramSettings* settings_;
  std::vector<std::pair<const Setting*, CLI::Option*>> options_;
};

// The default of `setting` in `program` as --help shows it ("4096", "8MiB", "auto"; "" for none).
std::string DefaultText(const Setting& setting, Program program);

// "--limit= gives an empty value (...)" for the first argument (before a "--") that is an option
// with '=' and nothing after it, else "". CLI11 would take the argument after it as the value
// (`--limit= --signal=X` sets --limit to "--signal=X"): the command line refuses it first.
std::string EmptyValueProblem(const std::vector<std::string>& args);

// Gives every option of `app` and of its subcommands the checks above; call it once every option
// is added.
void CheckOptionValues(CLI::App* app);

// A program's whole command line (`args`: its arguments, without the program's name): CLI11's
// parse, then the environment, then Settle. nullopt to go on; otherwise the exit code (0 after
// --help, 2 after an error), the help or the error printed when `print` (rank 0 of a job prints for
// all).
std::optional<int> ParseCommandLine(CLI::App* app, CommandLine* line, std::vector<std::string> args,
                                    bool print);

}  // namespace stoker::program
