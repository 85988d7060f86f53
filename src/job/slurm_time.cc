#include "job/slurm_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <optional>
#include <vector>

#include "base/check.h"
#include "base/digits.h"

namespace stoker::job {

namespace {

constexpr auto npos = std::string_view::npos;

bool SameLetters(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

constexpr uint64_t kLongest = std::numeric_limits<uint64_t>::max();

// Decimal digits (at most 2^64 - 1: a longer time than any warning offset), or nullopt.
std::optional<uint64_t> Digits(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != npos) return std::nullopt;
  return ParseDigits(text).value_or(kLongest);
}

// The ':'-separated fields of `text`, or nullopt when one is not decimal digits.
std::optional<std::vector<uint64_t>> Fields(std::string_view text) {
  std::vector<uint64_t> fields;
  while (true) {
    const size_t colon = text.find(':');
    const std::optional<uint64_t> field = Digits(text.substr(0, colon));
    if (!field) return std::nullopt;
    fields.push_back(*field);
    if (colon == npos) return fields;
    text.remove_prefix(colon + 1);
  }
}

// `total` + `value` * `unit`, at most 2^64 - 1 (a longer time than any warning offset).
uint64_t AddScaled(uint64_t total, uint64_t value, uint64_t unit) {
  uint64_t scaled = 0;
  if (__builtin_mul_overflow(value, unit, &scaled) ||
      __builtin_add_overflow(total, scaled, &total)) {
    return kLongest;
  }
  return total;
}

// A signal as --signal names it: a number from 1 to 65535, or a name of Slurm's list with or
// without "SIG", in any case.
bool KnownSignal(std::string_view signal) {
  if (const std::optional<uint64_t> number = ParseDigits(signal)) {
    return *number >= 1 && *number <= 65535;
  }
  if (signal.size() > 3 && SameLetters(signal.substr(0, 3), "SIG")) signal.remove_prefix(3);
  static constexpr std::array<std::string_view, 15> kNames = {
      "HUP",  "INT", "QUIT", "ABRT", "KILL", "ALRM", "TERM", "USR1",
      "USR2", "URG", "CONT", "STOP", "TSTP", "TTIN", "TTOU"};
  return std::any_of(kNames.begin(), kNames.end(),
                     [&](std::string_view name) { return SameLetters(signal, name); });
}

// The flags before ':': R, B, or both once each, in any case.
bool KnownFlags(std::string_view flags) {
  const auto count = [&](char flag) {
    return std::count_if(flags.begin(), flags.end(), [&](char c) {
      return std::toupper(static_cast<unsigned char>(c)) == flag;
    });
  };
  return !flags.empty() && count('R') <= 1 && count('B') <= 1 &&
         static_cast<size_t>(count('R') + count('B')) == flags.size();
}

}  // namespace

SlurmTime ParseSlurmTime(std::string_view text) {
  if (SameLetters(text, "UNLIMITED") || SameLetters(text, "INFINITE") || text == "-1") {
    return {SlurmTime::Kind::kUnlimited};
  }
  const size_t dash = text.find('-');
  std::optional<uint64_t> days = 0;
  if (dash != npos) {
    days = Digits(text.substr(0, dash));
    text.remove_prefix(dash + 1);
  }
  const std::optional<std::vector<uint64_t>> fields = Fields(text);
  if (!days || !fields || fields->size() > 3) return {};
  // After a day, hours come first; without one, minutes, unless there are three fields.
  static constexpr std::array<uint64_t, 3> kUnits = {3600, 60, 1};
  const size_t first = dash != npos || fields->size() == 3 ? 0 : 1;
  uint64_t seconds = AddScaled(0, *days, 86400);
  for (size_t i = 0; i < fields->size(); ++i) {
    seconds = AddScaled(seconds, (*fields)[i], kUnits[first + i]);
  }
  // sbatch --time: "A time limit of zero requests that no time limit be imposed".
  if (seconds == 0) return {SlurmTime::Kind::kUnlimited};
  return {SlurmTime::Kind::kLimit, seconds};
}

uint64_t WarningOffset(std::string_view spec) {
  const auto refuse = [&](std::string_view why) {
    return ConfigError(
        fmt::format("--signal '{}' is not [{{R|B}}:]SIG[@TIME] as sbatch takes it: {}", spec, why));
  };
  std::string_view rest = spec;
  if (const size_t colon = rest.find(':'); colon != npos) {
    if (!KnownFlags(rest.substr(0, colon))) throw refuse("the flags before ':' are R, B or both");
    rest.remove_prefix(colon + 1);
  }
  const size_t at = rest.find('@');
  if (!KnownSignal(rest.substr(0, at))) {
    throw refuse("SIG is a number from 1 to 65535 or a signal name such as USR1 or SIGUSR1");
  }
  if (at == npos) return 60;  // Slurm's default
  const std::optional<uint64_t> seconds = ParseDigits(rest.substr(at + 1));
  if (!seconds || *seconds > 65535) throw refuse("TIME is a number of seconds from 0 to 65535");
  return *seconds;
}

std::string_view VerdictWord(TimeLimitCheck::Verdict verdict) {
  switch (verdict) {
    case TimeLimitCheck::Verdict::kFits:
      return "fits";
    case TimeLimitCheck::Verdict::kTooShort:
      return "too-short";
    case TimeLimitCheck::Verdict::kUnlimited:
      return "unlimited";
    case TimeLimitCheck::Verdict::kUnknown:
      break;
  }
  return "unknown";
}

TimeLimitCheck CheckTimeLimit(std::string_view limit, uint64_t offset, std::string_view signal) {
  using Verdict = TimeLimitCheck::Verdict;
  const SlurmTime time = ParseSlurmTime(limit);
  if (time.kind == SlurmTime::Kind::kUnlimited) {
    return {Verdict::kUnlimited,
            fmt::format("time limit {}: none, so the warning comes only on a preemption", limit)};
  }
  if (time.kind == SlurmTime::Kind::kUnknown) {
    return {Verdict::kUnknown, fmt::format("time limit '{}' is not a time: not checked against "
                                           "the warning offset of {} s",
                                           limit, offset)};
  }
  if (time.seconds > offset) {
    return {Verdict::kFits,
            fmt::format("time limit {}; the warning comes {} s before it", limit, offset)};
  }
  return {Verdict::kTooShort,
          fmt::format("error: the job's time limit ({}) is at or below the warning offset of {} s "
                      "({}): Slurm would send the warning at once and the job requeue itself "
                      "for ever. Raise --time, or lower the offset (and set WARNING_SECONDS if "
                      "--signal was given on sbatch's command line)",
                      limit, offset, signal)};
}

TimeLimitCheck CheckTimeLimit(std::string_view limit, std::string_view spec,
                              std::optional<uint64_t> warning_seconds) {
  const uint64_t offset = warning_seconds ? *warning_seconds : WarningOffset(spec);
  const std::string signal = warning_seconds ? fmt::format("--signal=B:USR1@{}", offset)
                                             : fmt::format("--signal={}", spec);
  return CheckTimeLimit(limit, offset, signal);
}

}  // namespace stoker::job
