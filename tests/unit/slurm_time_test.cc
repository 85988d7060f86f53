// Slurm's time values as the job scripts meet them (squeue's %l, sbatch's --time), the warning
// offset of a --signal spec, and the check of one against the other.
#include "job/slurm_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

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

// The oracle of the random cases below, written from sbatch's manual, not from the parser:
// "Acceptable time formats include "minutes", "minutes:seconds", "hours:minutes:seconds",
// "days-hours", "days-hours:minutes" and "days-hours:minutes:seconds"", a limit of 0 meaning none,
// and UNLIMITED, INFINITE or -1 none. The seconds of a text of those forms (saturating at
// 2^64 - 1), or nullopt when it is not one.
struct Oracle {
  enum class Is { kSeconds, kNone, kNotATime } is = Is::kNotATime;
  uint64_t seconds = 0;
};

Oracle SbatchReads(const std::string& text) {
  for (const char* none : {"UNLIMITED", "unlimited", "INFINITE", "infinite", "-1"}) {
    if (text == none) return {Oracle::Is::kNone};
  }
  static const std::regex kWithDays(R"((\d+)-(\d+)(?::(\d+))?(?::(\d+))?)");
  static const std::regex kWithout(R"((\d+)(?::(\d+))?(?::(\d+))?)");
  std::smatch m;
  std::vector<std::pair<std::string, uint64_t>> fields;  // digits and unit
  if (std::regex_match(text, m, kWithDays)) {
    const uint64_t units[] = {86400, 3600, 60, 1};
    for (size_t i = 1; i <= 4; ++i) {
      if (m[i].matched) fields.emplace_back(m[i].str(), units[i - 1]);
    }
  } else if (std::regex_match(text, m, kWithout)) {
    const size_t n = m[3].matched ? 3 : m[2].matched ? 2 : 1;
    const std::vector<uint64_t> units = n == 3   ? std::vector<uint64_t>{3600, 60, 1}
                                        : n == 2 ? std::vector<uint64_t>{60, 1}
                                                 : std::vector<uint64_t>{60};
    for (size_t i = 0; i < n; ++i) fields.emplace_back(m[i + 1].str(), units[i]);
  } else {
    return {};
  }
  unsigned __int128 total = 0;
  for (const auto& [digits, unit] : fields) {
    unsigned __int128 value = 0;
    for (char c : digits) value = std::min<unsigned __int128>(value * 10 + (c - '0'), ~uint64_t{0});
    total += value * unit;
  }
  if (total == 0) return {Oracle::Is::kNone};
  return {Oracle::Is::kSeconds,
          static_cast<uint64_t>(std::min<unsigned __int128>(total, ~uint64_t{0}))};
}

// A random field: mostly what squeue prints, sometimes large, now and then with leading zeros.
std::string RandomField(std::mt19937_64& random) {
  switch (random() % 8) {
    case 0:
      return std::to_string(random());  // beyond any limit
    case 1:
      return "0" + std::to_string(random() % 60);  // a leading zero
    case 2:
      return "0";
    default:
      return std::to_string(random() % 100);
  }
}

// 2,000 limits in each of Slurm's forms from random fields, and as many random texts near them
// (a sign, a space, a letter, a field too many), each read by the parser and by the oracle above;
// then each checked against a random warning offset.
TEST(SlurmTime, TwoThousandRandomLimitsReadAsSbatchReadsThem) {
  std::mt19937_64 random(20261206);
  const std::vector<std::string> forms = {"M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S"};
  const std::string noise = "0123456789:- +xU";
  int limits = 0, none = 0, not_a_time = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string text;
    if (i < 2000) {
      for (char c : forms[random() % forms.size()]) {
        text += (c == ':' || c == '-') ? std::string(1, c) : RandomField(random);
      }
    } else {
      for (size_t n = 1 + random() % 10; n > 0; --n) text += noise[random() % noise.size()];
    }
    const Oracle want = SbatchReads(text);
    const SlurmTime got = ParseSlurmTime(text);
    switch (want.is) {
      case Oracle::Is::kSeconds:
        ++limits;
        EXPECT_EQ(got.kind, Kind::kLimit) << "'" << text << "'";
        EXPECT_EQ(got.seconds, want.seconds) << "'" << text << "'";
        break;
      case Oracle::Is::kNone:
        ++none;
        EXPECT_EQ(got.kind, Kind::kUnlimited) << "'" << text << "'";
        break;
      case Oracle::Is::kNotATime:
        ++not_a_time;
        EXPECT_EQ(got.kind, Kind::kUnknown) << "'" << text << "'";
        break;
    }
    const uint64_t offset = random() % 65536;
    const Verdict verdict = CheckTimeLimit(text, offset, "x").verdict;
    const Verdict expected = want.is == Oracle::Is::kNone       ? Verdict::kUnlimited
                             : want.is == Oracle::Is::kNotATime ? Verdict::kUnknown
                             : want.seconds > offset            ? Verdict::kFits
                                                                : Verdict::kTooShort;
    EXPECT_EQ(verdict, expected) << "'" << text << "' against " << offset << " s";
  }
  // Every kind was met (the figures of this seed: see the test's log).
  EXPECT_GT(limits, 1500);
  EXPECT_GT(none, 50);
  EXPECT_GT(not_a_time, 1000);
  std::printf("4000 texts: %d limits, %d no limit, %d not a time\n", limits, none, not_a_time);
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
