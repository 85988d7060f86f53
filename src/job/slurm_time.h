// Slurm's time values as a job script meets them, and the one rule jobs/ applies to them: the
// job's time limit (as squeue prints it with %l, or sbatch takes it with --time), the warning
// offset of a --signal spec (how long before that limit Slurm sends the signal), and the check
// that the warning comes after the job started, not at once. Pure: no clock, no Slurm call; the
// job script reads squeue and its #SBATCH lines and passes their text (`stoker job time-limit`).
// Thread safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stoker::job {

// A time value of Slurm: a limit in seconds, no limit, or text that is not a time.
struct SlurmTime {
  enum class Kind { kLimit, kUnlimited, kUnknown };
  Kind kind = Kind::kUnknown;
  uint64_t seconds = 0;  // kLimit only
};

// The forms Slurm takes for --time and prints in squeue's %l, each field decimal digits that
// Slurm does not bound ("90" is 90 minutes, "1:75" 135 seconds):
//   MM   MM:SS   HH:MM:SS   D-HH   D-HH:MM   D-HH:MM:SS
// "UNLIMITED", "INFINITE" (in any case), "-1" and a total of 0 ("0", "0:00") are kUnlimited, as
// Slurm reads them. A field or a total beyond 2^64 - 1 seconds is that many (longer than any
// offset).
// Anything else is kUnknown: squeue's "Partition_Limit" and "NOT_SET", an empty field, white
// space, a sign.
SlurmTime ParseSlurmTime(std::string_view text);

// The warning offset, in seconds, of a --signal spec as sbatch takes it:
// [{R|B}:]SIG[@TIME], where the flags before ':' are R, B or both (any case), SIG a number from
// 1 to 65535 or a signal name Slurm knows (USR1, SIGUSR1, ...; any case) and TIME 0 to 65535.
// Without @TIME, Slurm's default: 60. Throws ConfigError, naming the spec, for anything sbatch
// would refuse.
uint64_t WarningOffset(std::string_view spec);

// What the check of a time limit against the warning offset found, and the line a job script
// prints for it. kTooShort: a limit at or below the offset, for which Slurm would send the
// warning at once, every run, and the job requeue itself for ever; the job must not start.
struct TimeLimitCheck {
  enum class Verdict { kFits, kTooShort, kUnlimited, kUnknown };
  Verdict verdict = Verdict::kUnknown;
  std::string message;
};

// The word for a verdict: "fits", "too-short", "unlimited", "unknown".
std::string_view VerdictWord(TimeLimitCheck::Verdict verdict);

// Checks the job's time limit `limit` (text as squeue prints it) against `offset` seconds;
// `signal` is how the offset was asked for, for the message (e.g. "--signal=B:USR1@180").
TimeLimitCheck CheckTimeLimit(std::string_view limit, uint64_t offset, std::string_view signal);

// The same, the offset given as a job gives it: `warning_seconds` when set, else the --signal
// spec `spec` (WarningOffset; ConfigError when sbatch would refuse it).
TimeLimitCheck CheckTimeLimit(std::string_view limit, std::string_view spec,
                              std::optional<uint64_t> warning_seconds);

}  // namespace stoker::job
