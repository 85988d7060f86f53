// Slurm's time values as the job scripts meet them (squeue's %l, sbatch's --time), the warning
// offset of a --signal spec, and the check of one against the other.
#include "job/slurm_time.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>

#include "stoker/error.h"

namespace stoker::job {
namespace {

using Kind = SlurmTime::Kind;
using Verdict = TimeLimitCheck::Verdict;

constexpr uint64_t kMinute = 60, kHour = 3600, kDay = 86400;

void ExpectSeconds(std::string_view text, uint64_t seconds) {
  const SlurmTime time = ParseSlurmTime(text);
  EXPECT_EQ(time.kind, Kind::kLimit) << text;
  EXPECT_EQ(time.seconds, seconds) << text;
}

TEST(SlurmTime, EveryFormatSlurmTakes) {
  ExpectSeconds("90", 90 * kMinute);                                   // minutes
  ExpectSeconds("5:30", 5 * kMinute + 30);                             // minutes:seconds
  ExpectSeconds("1:02:03", kHour + 2 * kMinute + 3);                   // hours:minutes:seconds
  ExpectSeconds("2-3", 2 * kDay + 3 * kHour);                          // days-hours
  ExpectSeconds("2-3:04", 2 * kDay + 3 * kHour + 4 * kMinute);         // days-hours:minutes
  ExpectSeconds("2-3:04:05", 2 * kDay + 3 * kHour + 4 * kMinute + 5);  // days-hours:min:sec
}

TEST(SlurmTime, WhatSqueuePrints) {
  ExpectSeconds("2:00", 2 * kMinute);  // --time=00:02:00
  ExpectSeconds("10:00", 10 * kMinute);
  ExpectSeconds("1:00:00", kHour);
  ExpectSeconds("12:00:00", 12 * kHour);
  ExpectSeconds("1-00:00:00", kDay);
  ExpectSeconds("7-12:30:00", 7 * kDay + 12 * kHour + 30 * kMinute);
}

TEST(SlurmTime, FieldsAreNotBoundedAsSlurmDoesNot) {
  ExpectSeconds("1:75", kMinute + 75);
  ExpectSeconds("0:90:00", 90 * kMinute);
  ExpectSeconds("1-48", kDay + 48 * kHour);
  ExpectSeconds("007", 7 * kMinute);
}

// sbatch --time: "A time limit of zero requests that no time limit be imposed".
TEST(SlurmTime, NoLimit) {
  for (const char* text : {"UNLIMITED", "unlimited", "INFINITE", "Infinite", "-1", "0", "0-0",
                           "0:00", "00:00:00", "0-0:0:0"}) {
    EXPECT_EQ(ParseSlurmTime(text).kind, Kind::kUnlimited) << text;
  }
}

void ExpectNotATime(std::initializer_list<std::string_view> texts) {
  for (std::string_view text : texts) {
    const SlurmTime time = ParseSlurmTime(text);
    EXPECT_EQ(time.kind, Kind::kUnknown) << "'" << text << "'";
    EXPECT_EQ(time.seconds, 0u) << text;
  }
}

TEST(SlurmTime, AnythingElseIsNotATime) {
  ExpectNotATime({"Partition_Limit", "NOT_SET", "INVALID", "a", "5m", "1.5", "0x10"});
  ExpectNotATime({"", " ", " 5", "5 ", "5\n", "UNLIMITED "});  // white space
  ExpectNotATime({"+5", "-5", "-0", "-", "1:-2"});             // signs
  ExpectNotATime({"1:2:3:4", "1-2:3:4:5", "1--2", "1-2-3", "1-", ":5", "5:", "1::2", "1-2:"});
}

// Beyond 2^64 - 1 seconds a limit is that many: longer than any warning offset, never "unknown".
TEST(SlurmTime, BeyondTwoToThe64SecondsIsTheLongestLimit) {
  constexpr uint64_t kLongest = 18446744073709551615ull;
  ExpectSeconds("307445734561825860", 18446744073709551600ull);  // minutes, the largest exact
  for (const char* text :
       {"18446744073709551616", "9223372036854775808", "307445734561825861", "213503982334602-0",
        "213503982334601-23:59:59", "5124095576030432:00:00", "99999999999999999999999999-0"}) {
    ExpectSeconds(text, kLongest);
  }
}

TEST(WarningOffset, TheTimeAfterTheAt) {
  EXPECT_EQ(WarningOffset("B:USR1@180"), 180u);
  EXPECT_EQ(WarningOffset("USR1@180"), 180u);
  EXPECT_EQ(WarningOffset("R:USR1@5"), 5u);
  EXPECT_EQ(WarningOffset("RB:10@30"), 30u);
  EXPECT_EQ(WarningOffset("br:SIGUSR1@0"), 0u);
  EXPECT_EQ(WarningOffset("B:sigterm@90"), 90u);
  EXPECT_EQ(WarningOffset("B:USR1@65535"), 65535u);
  EXPECT_EQ(WarningOffset("65535@1"), 1u);
}

TEST(WarningOffset, WithoutAnAtSlurmsSixtySeconds) {
  EXPECT_EQ(WarningOffset("USR1"), 60u);
  EXPECT_EQ(WarningOffset("B:USR1"), 60u);
  EXPECT_EQ(WarningOffset("10"), 60u);
}

TEST(WarningOffset, SpecsSbatchWouldRefuse) {
  for (const char* spec : {"",          "B:",           "@180",        "B:@180",     "B:USR1@",
                           "B:USR1@-5", "B:USR1@65536", "B:USR1@ 10",  "B:USR1@1m",  "B:USR1@1@2",
                           "B:FOO@10",  "B:SIG@10",     "B:0@10",      "B:65536@1",  "X:USR1@10",
                           "BB:USR1@1", ":USR1@10",     "B:R:USR1@10", "B: USR1@10", "B:USR1 @10",
                           "B:-1@10"}) {
    try {
      WarningOffset(spec);
      ADD_FAILURE() << "accepted '" << spec << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--signal '") + spec + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(TimeLimit, AtOrBelowTheOffsetIsTooShort) {
  const TimeLimitCheck two = CheckTimeLimit("2:00", 180, "--signal=B:USR1@180");
  EXPECT_EQ(two.verdict, Verdict::kTooShort);
  EXPECT_EQ(two.message,
            "error: the job's time limit (2:00) is at or below the warning offset of 180 s "
            "(--signal=B:USR1@180): Slurm would send the warning at once and the job requeue "
            "itself for ever. Raise --time, or lower the offset (and set WARNING_SECONDS if "
            "--signal was given on sbatch's command line)");
  EXPECT_EQ(CheckTimeLimit("3:00", 180, "x").verdict, Verdict::kTooShort);  // at
  const TimeLimitCheck ten = CheckTimeLimit("10:00", 900, "--signal=B:USR1@900");
  EXPECT_EQ(ten.verdict, Verdict::kTooShort);
  EXPECT_NE(ten.message.find("at or below the warning offset of 900 s"), std::string::npos);
  EXPECT_EQ(CheckTimeLimit("1", 60, "x").verdict, Verdict::kTooShort);
}

TEST(TimeLimit, AboveTheOffsetFits) {
  const TimeLimitCheck check = CheckTimeLimit("3:01", 180, "--signal=B:USR1@180");
  EXPECT_EQ(check.verdict, Verdict::kFits);
  EXPECT_EQ(check.message, "time limit 3:01; the warning comes 180 s before it");
  EXPECT_EQ(CheckTimeLimit("1-00:00:00", 65535, "x").verdict, Verdict::kFits);
  EXPECT_EQ(CheckTimeLimit("1", 0, "x").verdict, Verdict::kFits);
}

TEST(TimeLimit, NoLimitOrNoTimeIsNotChecked) {
  const TimeLimitCheck unlimited = CheckTimeLimit("UNLIMITED", 180, "x");
  EXPECT_EQ(unlimited.verdict, Verdict::kUnlimited);
  EXPECT_NE(unlimited.message.find("UNLIMITED"), std::string::npos);
  const TimeLimitCheck partition = CheckTimeLimit("Partition_Limit", 180, "x");
  EXPECT_EQ(partition.verdict, Verdict::kUnknown);
  EXPECT_NE(partition.message.find("'Partition_Limit' is not a time"), std::string::npos);
  EXPECT_EQ(CheckTimeLimit("0", 180, "x").verdict, Verdict::kUnlimited) << "sbatch: no limit";
  EXPECT_EQ(CheckTimeLimit("18446744073709551616", 180, "x").verdict, Verdict::kFits);
}

TEST(TimeLimit, TheOffsetAsAJobGivesIt) {
  // From the --signal spec, or from WARNING_SECONDS, which wins and is named as a spec.
  const TimeLimitCheck spec = CheckTimeLimit("2:00", "B:USR1@180", std::nullopt);
  EXPECT_EQ(spec.verdict, Verdict::kTooShort);
  EXPECT_NE(spec.message.find("180 s (--signal=B:USR1@180)"), std::string::npos) << spec.message;
  const TimeLimitCheck seconds = CheckTimeLimit("2:00", "B:USR1@180", uint64_t{60});
  EXPECT_EQ(seconds.verdict, Verdict::kFits);
  EXPECT_EQ(CheckTimeLimit("2:00", "", uint64_t{120}).verdict, Verdict::kTooShort);
  EXPECT_EQ(CheckTimeLimit("5", "USR1", std::nullopt).verdict, Verdict::kFits);  // 60 s default
  EXPECT_THROW(CheckTimeLimit("5", "B:USR1@x", std::nullopt), ConfigError);
}

TEST(TimeLimit, VerdictWords) {
  EXPECT_EQ(VerdictWord(Verdict::kFits), "fits");
  EXPECT_EQ(VerdictWord(Verdict::kTooShort), "too-short");
  EXPECT_EQ(VerdictWord(Verdict::kUnlimited), "unlimited");
  EXPECT_EQ(VerdictWord(Verdict::kUnknown), "unknown");
}

}  // namespace
}  // namespace stoker::job
