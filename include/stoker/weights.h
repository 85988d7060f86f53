// Mixing weights and weight schedules, as users write them.
//
// `--weights` syntax: NAME=WEIGHT[,NAME=WEIGHT...], e.g. "web=0.7,code=0.2,books=0.1". Weights
// are relative (they need not sum to 1) and non-negative; a dataset named twice, an empty name,
// or a weight that is not a finite number is an error.
//
// A weight schedule is a list of entries, each a step and the weights that rule from it on:
// either a jump (the weights change at that step) or a ramp (the weights go linearly from the
// entry before's, at its step, to these, reached at this step). The first entry is at step 0 and
// is not a ramp; steps increase. A step is the number of batches delivered before: the entry at
// step 10000 rules the batch a trainer counts as its step 10000 (0-based), the 10,001st.
//   `--weights-schedule` text: entries separated by ';', each STEP:WEIGHTS for a jump or
//   ~STEP:WEIGHTS for a ramp, e.g. "0:web=0.7,code=0.3;~10000:web=0.5,code=0.5;20000:web=1".
//   STEP is decimal digits only (no sign, exponent or suffix), below 2^64; WEIGHTS is the
//   --weights syntax and names at least one dataset. White space (newlines too) may surround
//   entries, STEP and WEIGHTS, spaces and tabs each NAME and WEIGHT; a last ';' may end the text.
//   A file, TOML or JSON (docs/loader.md), an array `schedule` of tables with `step` (an integer
//   >= 0), `weights` (a table of NAME = WEIGHT, integers or floats) and an optional `ramp` (a
//   bool, false by default). Any other key is refused by name, and so is a JSON key given twice.
// In every form a dataset name is one the --weights syntax can carry (not empty, no ',', '=' or
// ';', no white space at either end), so that FormatWeightSchedule's text gives the schedule back.
// Parsing is pure; errors are ConfigError quoting the bad entry (in a file: its 1-based index).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

struct WeightScheduleEntry {
  uint64_t step = 0;
  bool ramp = false;                      // linear from the entry before, reached at `step`
  std::map<std::string, double> weights;  // dataset -> relative weight; not named: 0
  bool operator==(const WeightScheduleEntry&) const = default;
};

using WeightSchedule = std::vector<WeightScheduleEntry>;

std::map<std::string, double> ParseWeights(std::string_view text);

// The inline text form ("0:web=0.7,code=0.3;~10000:web=0.5,code=0.5").
WeightSchedule ParseWeightSchedule(std::string_view text);

// A schedule file's text: JSON when its first character other than white space is '{', TOML
// otherwise. `source` names the file in errors.
WeightSchedule ParseWeightScheduleFile(std::string_view text, const std::string& source);

// The value of a `--weights-schedule` option: the file of that name when one exists (read and
// parsed by ParseWeightScheduleFile), else the inline text form; a value that names no file, holds
// no '=' and does not begin with [~]STEP: is refused as a missing file. One that begins with a
// step ("0:", "0:a;5:b") is parsed as inline text, so its malformed entry is refused by name.
WeightSchedule WeightScheduleArgument(const std::string& value);
// Whether `text` begins as an entry of the inline form does: [~]STEP: (white space allowed around
// STEP), whatever follows.
bool BeginsWithScheduleStep(std::string_view text);

// Every problem of a schedule's shape, one line each: no entries, a first entry not at step 0 or
// a ramp, steps not increasing, an entry with no weights or only weights of 0, a weight that is
// negative or not finite, a dataset name --weights cannot carry. Empty for a valid schedule.
std::vector<std::string> WeightScheduleProblems(const WeightSchedule& schedule);

// The --weights text of `weights` ("code=0.3,web=0.7", by name); ParseWeights gives it back.
std::string FormatWeights(const std::map<std::string, double>& weights);
// The inline text form of `schedule`; ParseWeightSchedule gives it back (weights printed to
// round-trip exactly).
std::string FormatWeightSchedule(const WeightSchedule& schedule);

}  // namespace stoker
