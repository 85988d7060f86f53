// The `--weights` and `--weights-schedule` text forms (stoker/weights.h) and the shape rules of a
// schedule. Schedule files (TOML, JSON) are read in weight_schedule_file.cc.
#include "stoker/weights.h"

#include <charconv>
#include <cmath>

#include "base/check.h"

namespace stoker {

namespace {

// ParseWeights trims spaces and tabs only (its behaviour since --weights exists); the schedule's
// entries, which users may write over several lines, trim every kind of white space.
constexpr std::string_view kWhiteSpace = " \t\n\r\v\f";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string_view TrimWhiteSpace(std::string_view s) {
  const size_t first = s.find_first_not_of(kWhiteSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kWhiteSpace) - first + 1);
}

// ParseWeights with its messages opening with `label` ("--weights" for the option itself).
std::map<std::string, double> ParseWeightsAs(std::string_view text, std::string_view label) {
  std::map<std::string, double> weights;
  while (!Trim(text).empty()) {
    const size_t comma = text.find(',');
    const std::string_view entry = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t equals = entry.find('=');
    STOKER_CHECK(equals != std::string_view::npos, ConfigError, "{} entry '{}' is not NAME=WEIGHT",
                 label, entry);
    const std::string name(Trim(entry.substr(0, equals)));
    const std::string_view number = Trim(entry.substr(equals + 1));
    STOKER_CHECK(!name.empty(), ConfigError, "{} entry '{}' has no dataset name", label, entry);
    double weight = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), weight);
    STOKER_CHECK(
        error == std::errc() && end == number.data() + number.size() && std::isfinite(weight),
        ConfigError, "{} entry '{}': '{}' is not a number", label, entry, number);
    STOKER_CHECK(weight >= 0, ConfigError, "{} entry '{}': weights must be >= 0", label, entry);
    STOKER_CHECK(weights.emplace(name, weight).second, ConfigError, "{} names dataset '{}' twice",
                 label, name);
  }
  return weights;
}

bool IsDecimal(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// A step: decimal digits only (no sign, no exponent, no suffix), below 2^64.
uint64_t ParseStep(std::string_view step, std::string_view entry) {
  uint64_t value = 0;
  const char* end = step.data() + step.size();
  const bool digits = IsDecimal(step);
  const auto [stop, error] = std::from_chars(step.data(), end, value);
  STOKER_CHECK(digits && error == std::errc() && stop == end, ConfigError,
               "--weights-schedule entry '{}': step '{}' is not a whole number of steps (decimal "
               "digits only, below 2^64)",
               entry, step);
  return value;
}

// One entry, already trimmed: [~]STEP:WEIGHTS.
WeightScheduleEntry ParseEntry(std::string_view entry) {
  WeightScheduleEntry parsed;
  std::string_view rest = entry;
  parsed.ramp = rest.starts_with('~');
  if (parsed.ramp) rest.remove_prefix(1);
  const size_t colon = rest.find(':');
  STOKER_CHECK(colon != std::string_view::npos, ConfigError,
               "--weights-schedule entry '{}' is not STEP:WEIGHTS (a jump) or ~STEP:WEIGHTS (a "
               "ramp)",
               entry);
  parsed.step = ParseStep(TrimWhiteSpace(rest.substr(0, colon)), entry);
  const std::string label = fmt::format("--weights-schedule entry '{}': weights", entry);
  parsed.weights = ParseWeightsAs(TrimWhiteSpace(rest.substr(colon + 1)), label);
  STOKER_CHECK(!parsed.weights.empty(), ConfigError,
               "--weights-schedule entry '{}' has no weights (STEP:NAME=WEIGHT,...)", entry);
  return parsed;
}

// The entries of the inline form, trimmed; a blank last one (after a final ';') is dropped.
std::vector<std::string_view> SplitEntries(std::string_view text) {
  std::vector<std::string_view> entries;
  for (size_t start = 0;;) {
    const size_t semicolon = text.find(';', start);
    entries.push_back(TrimWhiteSpace(text.substr(start, semicolon - start)));
    if (semicolon == std::string_view::npos) break;
    start = semicolon + 1;
  }
  if (entries.back().empty()) entries.pop_back();
  return entries;
}

// A name the --weights syntax can carry, so that FormatWeightSchedule's text parses back to it.
bool IsWritableName(const std::string& name) {
  return !name.empty() && name.find_first_of(",=;") == std::string::npos &&
         kWhiteSpace.find(name.front()) == std::string_view::npos &&
         kWhiteSpace.find(name.back()) == std::string_view::npos;
}

void AddWeightProblems(const WeightScheduleEntry& entry, size_t number,
                       std::vector<std::string>* problems) {
  const std::string where = fmt::format("entry {} (step {})", number, entry.step);
  if (entry.weights.empty()) {
    problems->push_back(where + " has no weights");
    return;
  }
  bool positive = false, bad = false;
  for (const auto& [name, weight] : entry.weights) {
    if (!IsWritableName(name)) {
      problems->push_back(fmt::format(
          "{}: dataset name '{}' cannot be written in --weights (it is empty, holds ',', '=' or "
          "';', or begins or ends with white space)",
          where, name));
    }
    const bool usable = std::isfinite(weight) && weight >= 0;
    if (!usable) {
      problems->push_back(fmt::format(
          "{}: dataset '{}' has weight {}; weights must be finite and >= 0", where, name, weight));
    }
    bad = bad || !usable;
    positive = positive || (usable && weight > 0);
  }
  if (!positive && !bad) {
    problems->push_back(where + ": every weight is 0 (at least one must be above 0)");
  }
}

}  // namespace

std::map<std::string, double> ParseWeights(std::string_view text) {
  return ParseWeightsAs(text, "--weights");
}

bool BeginsWithScheduleStep(std::string_view text) {
  std::string_view rest = TrimWhiteSpace(text);
  if (rest.starts_with('~')) rest.remove_prefix(1);
  const size_t colon = rest.find(':');
  return colon != std::string_view::npos && IsDecimal(TrimWhiteSpace(rest.substr(0, colon)));
}

WeightSchedule ParseWeightSchedule(std::string_view text) {
  WeightSchedule schedule;
  for (const std::string_view entry : SplitEntries(text)) {
    STOKER_CHECK(!entry.empty(), ConfigError,
                 "--weights-schedule '{}' has an empty entry (entries are separated by one ';')",
                 text);
    schedule.push_back(ParseEntry(entry));
  }
  const std::vector<std::string> problems = WeightScheduleProblems(schedule);
  if (!problems.empty()) {
    ThrowConfigProblems(fmt::format("bad --weights-schedule '{}':", text), problems);
  }
  return schedule;
}

std::vector<std::string> WeightScheduleProblems(const WeightSchedule& schedule) {
  if (schedule.empty()) return {"no entries: a schedule needs at least one, at step 0"};
  std::vector<std::string> problems;
  if (schedule.front().step != 0) {
    problems.push_back(fmt::format("entry 1 is at step {}: the first entry must be at step 0",
                                   schedule.front().step));
  }
  if (schedule.front().ramp) {
    problems.push_back(
        "entry 1 is a ramp: the first entry cannot be one (a ramp starts from the entry before)");
  }
  for (size_t i = 1; i < schedule.size(); ++i) {
    if (schedule[i].step > schedule[i - 1].step) continue;
    problems.push_back(fmt::format(
        "entry {} (step {}) does not come after entry {} (step {}): steps must increase", i + 1,
        schedule[i].step, i, schedule[i - 1].step));
  }
  for (size_t i = 0; i < schedule.size(); ++i) AddWeightProblems(schedule[i], i + 1, &problems);
  return problems;
}

std::string FormatWeights(const std::map<std::string, double>& weights) {
  std::vector<std::string> parts;
  // fmt's "{}" prints a double in the fewest digits that read back to the same value.
  for (const auto& [name, weight] : weights) parts.push_back(fmt::format("{}={}", name, weight));
  return fmt::format("{}", fmt::join(parts, ","));
}

std::string FormatWeightSchedule(const WeightSchedule& schedule) {
  std::string text;
  for (size_t i = 0; i < schedule.size(); ++i) {
    text += fmt::format("{}{}{}:{}", i == 0 ? "" : ";", schedule[i].ramp ? "~" : "",
                        schedule[i].step, FormatWeights(schedule[i].weights));
  }
  return text;
}

}  // namespace stoker
