// Mixing weights and weight schedules as users write them (stoker/weights.h):
//   - the --weights syntax: spaces, and every refusal with its words;
//   - the inline --weights-schedule form: jumps, ramps, white space, a trailing ';'; every
//     refusal quoting the entry; every shape problem reported at once; FormatWeightSchedule's
//     text parses back to the same schedule, exactly (0.1, 1e-300, 1/3, subnormals);
//   - schedule files: TOML (tables, inline tables) and JSON give the inline form's schedule;
//     unknown keys, missing or mistyped fields, shape problems, syntax errors (with the line), a
//     JSON key given twice are refused naming the file and the entry;
//   - WeightScheduleArgument: files and folders in a temporary folder, a missing file, a binary
//     file, a file that cannot be opened (the I/O seam), inline text, an inline entry without '='
//     (a malformed entry, not a missing file).
#include "stoker/weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "os/posix_io.h"
#include "stoker/error.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteText;

TEST(Weights, ParsesRelativeWeightsWithSpaces) {
  const std::map<std::string, double> expected = {{"web", 0.7}, {"code", 2}, {"books", 0}};
  EXPECT_EQ(ParseWeights("web=0.7,code=2,books=0"), expected);
  EXPECT_EQ(ParseWeights(" web = 0.7 ,\tcode=2, books=0 "), expected);
  EXPECT_EQ(ParseWeights("a=1e-3"), (std::map<std::string, double>{{"a", 0.001}}));
  EXPECT_TRUE(ParseWeights("").empty());
  EXPECT_TRUE(ParseWeights("  ").empty());
}

TEST(Weights, BadEntriesAreRefusedQuotingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {"web", "'web' is not NAME=WEIGHT"},        {"=1", "'=1' has no dataset name"},
      {"web=abc", "'abc' is not a number"},       {"web=1x", "'1x' is not a number"},
      {"web=inf", "'inf' is not a number"},       {"web=nan", "'nan' is not a number"},
      {"web=-1", "weights must be >= 0"},         {"web=1,web=2", "names dataset 'web' twice"},
      {"web=1,,code=1", "'' is not NAME=WEIGHT"},
  };
  for (const auto& [text, message] : cases) {
    try {
      ParseWeights(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << text << ": " << e.what();
    }
  }
}

// The message of the ConfigError `parse` throws; "accepted" when it throws none.
template <typename Fn>
std::string ConfigErrorOf(Fn&& parse) {
  try {
    parse();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

WeightSchedule ThreeEntries() {
  return {{.step = 0, .ramp = false, .weights = {{"web", 0.7}, {"code", 0.3}}},
          {.step = 10000, .ramp = true, .weights = {{"web", 0.5}, {"code", 0.5}}},
          {.step = 20000, .ramp = false, .weights = {{"web", 1}}}};
}

TEST(WeightSchedule, ParsesJumpsAndRamps) {
  EXPECT_EQ(ParseWeightSchedule("0:web=0.7,code=0.3;~10000:web=0.5,code=0.5;20000:web=1"),
            ThreeEntries());
  EXPECT_EQ(ParseWeightSchedule("0:web=1"), (WeightSchedule{{.weights = {{"web", 1}}}}));
}

TEST(WeightSchedule, AllowsWhiteSpaceAndATrailingSemicolon) {
  const char* texts[] = {
      "0:web=0.7,code=0.3;~10000:web=0.5,code=0.5;20000:web=1;",
      " 0 : web = 0.7 , code=0.3 ; ~ 10000 :web=0.5,code=0.5;\t20000:\tweb=1 ; ",
      "0: web=0.7, code=0.3;\n  ~10000: web=0.5, code=0.5;\n  20000: web=1;\n",
  };
  for (const char* text : texts) EXPECT_EQ(ParseWeightSchedule(text), ThreeEntries()) << text;
}

TEST(WeightSchedule, FormatsTheInlineForm) {
  EXPECT_EQ(FormatWeightSchedule(ThreeEntries()),
            "0:code=0.3,web=0.7;~10000:code=0.5,web=0.5;20000:web=1");
}

TEST(WeightSchedule, FormatRoundTripsEveryWeightExactly) {
  const double awkward[] = {0.1,     1e-300,
                            1.0 / 3, 2.0 / 3,
                            5e-324,  2.2250738585072014e-308,
                            1e300,   0.7,
                            1e16,    123456789.123456789,
                            0};
  WeightSchedule schedule;
  uint64_t step = 0;
  for (const double weight : awkward) {
    schedule.push_back({.step = step, .ramp = step % 2 == 1, .weights = {{"a", weight}, {"b", 1}}});
    step = 2 * step + 1;
  }
  schedule.push_back({.step = UINT64_MAX, .weights = {{"a:b", 1.0 / 7}}});
  EXPECT_TRUE(WeightScheduleProblems(schedule).empty());
  const std::string text = FormatWeightSchedule(schedule);
  EXPECT_EQ(ParseWeightSchedule(text), schedule) << text;
  EXPECT_NE(text.find("a=0.1,"), std::string::npos) << text;  // shortest, not 0.1000000000000000055
}

TEST(WeightSchedule, BadTextIsRefusedQuotingTheEntry) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "no entries"},
      {"  ;", "has an empty entry"},
      {"0:a=1;;5:a=2", "has an empty entry"},
      {"0 a=1", "entry '0 a=1' is not STEP:WEIGHTS"},
      {"1e4:a=1", "entry '1e4:a=1': step '1e4' is not a whole number"},
      {"0:a=1;-1:a=2", "step '-1' is not a whole number"},
      {"0:a=1;10k:a=2", "step '10k' is not"},
      {"0:a=1;+5:a=2", "step '+5' is not"},
      {"0:a=1;18446744073709551616:a=2", "step '18446744073709551616' is not"},
      {":a=1", "step '' is not"},
      {"0:a=1;~:a=2", "step '' is not"},
      {"0:", "entry '0:' has no weights"},
      {"0:a=1;7:  ", "entry '7:' has no weights"},
      {"0:a", "entry '0:a': weights entry 'a' is not NAME=WEIGHT"},
      {"0:a=x", "entry '0:a=x': weights entry 'a=x': 'x' is not a number"},
      {"0:a=nan", "'nan' is not a number"},
      {"0:a=1,a=2", "entry '0:a=1,a=2': weights names dataset 'a' twice"},
      {"0:a=-1", "weights must be >= 0"},
      {"5:a=1", "entry 1 is at step 5: the first entry must be at step 0"},
      {"~0:a=1", "entry 1 is a ramp"},
      {"0:a=1;10:a=2;10:a=3", "entry 3 (step 10) does not come after entry 2 (step 10)"},
      {"0:a=1;20:a=2;~10:a=3", "entry 3 (step 10) does not come after entry 2 (step 20)"},
      {"0:a=0,b=0", "entry 1 (step 0): every weight is 0"},
      {"0:a=1;5:a=0", "entry 2 (step 5): every weight is 0"},
      {"0:a=1,\nb=1", "dataset name '\nb' cannot be written in --weights"},
  };
  for (const auto& [text, message] : cases) {
    const std::string error = ConfigErrorOf([text = text] { ParseWeightSchedule(text); });
    EXPECT_NE(error.find(message), std::string::npos) << text << ": " << error;
    EXPECT_NE(error.find("--weights-schedule"), std::string::npos) << text << ": " << error;
  }
}

TEST(WeightSchedule, ReportsEveryProblemAtOnce) {
  const std::string error = ConfigErrorOf([] { ParseWeightSchedule("~5:a=0;3:a=1"); });
  for (const char* part : {"bad --weights-schedule '~5:a=0;3:a=1':", "\n  - entry 1 is at step 5",
                           "\n  - entry 1 is a ramp", "entry 2 (step 3) does not come after",
                           "entry 1 (step 5): every weight is 0"}) {
    EXPECT_NE(error.find(part), std::string::npos) << part << " in: " << error;
  }
}

TEST(WeightSchedule, ProblemsOfSchedulesMadeInCode) {
  EXPECT_TRUE(WeightScheduleProblems(ThreeEntries()).empty());
  EXPECT_EQ(WeightScheduleProblems({}).size(), 1u);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const WeightSchedule bad = {
      {.step = 0, .weights = {{"a", -1}, {"b", nan}, {"c", inf}}},
      {.step = 1, .weights = {}},
      {.step = 2, .weights = {{"", 1}, {"x,y", 1}, {" x", 1}, {"x=1", 1}, {"x;y", 1}}},
  };
  const std::vector<std::string> problems = WeightScheduleProblems(bad);
  ASSERT_EQ(problems.size(), 9u) << fmt::format("{}", fmt::join(problems, "\n"));
  EXPECT_EQ(problems[0],
            "entry 1 (step 0): dataset 'a' has weight -1; weights must be finite and >= 0");
  EXPECT_NE(problems[1].find("dataset 'b' has weight nan"), std::string::npos);
  EXPECT_NE(problems[2].find("dataset 'c' has weight inf"), std::string::npos);
  EXPECT_EQ(problems[3], "entry 2 (step 1) has no weights");
  EXPECT_NE(problems[4].find("entry 3 (step 2): dataset name '' cannot be written"),
            std::string::npos);
}

constexpr const char* kToml = R"(# a schedule file
[[schedule]]
step = 0
weights = { web = 0.7, code = 0.3 }

[[schedule]]
step = 10000
ramp = true
weights = { web = 0.5, code = 0.5 }

[[schedule]]
step = 20000
ramp = false
weights.web = 1
)";

constexpr const char* kJson = R"(
  {"schedule": [{"step": 0, "weights": {"web": 0.7, "code": 0.3}},
                {"step": 10000, "ramp": true, "weights": {"web": 0.5, "code": 0.5}},
                {"weights": {"web": 1}, "step": 20000}]})";

TEST(WeightScheduleFile, TomlAndJsonGiveTheInlineSchedule) {
  EXPECT_EQ(ParseWeightScheduleFile(kToml, "s.toml"), ThreeEntries());
  EXPECT_EQ(ParseWeightScheduleFile(kJson, "s.json"), ThreeEntries());
  const char* inline_tables = R"(schedule = [
    { step = 0, weights = { web = 0.7, code = 0.3 } },
    { step = 10_000, ramp = true, weights = { web = 0.5, code = 0.5 } },
    { step = 20000, weights = { web = 1.0 } },
  ])";
  EXPECT_EQ(ParseWeightScheduleFile(inline_tables, "s.toml"), ThreeEntries());
}

TEST(WeightScheduleFile, WeightsRoundTripThroughTheInlineForm) {
  const WeightSchedule schedule =
      ParseWeightScheduleFile(R"({"schedule": [{"step": 0, "weights": {"a": 0.1, "b": 1e-300,
                                 "c": 0.3333333333333333, "d": 18446744073709551615}}]})",
                              "s.json");
  EXPECT_EQ(schedule[0].weights.at("c"), 1.0 / 3);
  EXPECT_EQ(ParseWeightSchedule(FormatWeightSchedule(schedule)), schedule);
}

TEST(WeightScheduleFile, BadFilesAreRefusedNamingTheEntry) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "s: no array `schedule`"},
      {"schedule = 1", "s: no array `schedule`"},
      {"schedule = []", "no entries"},
      {"schedul = []", "s: unknown key 'schedul'"},
      {"schedule = [1]", "s: entry 1: 1 is not a table of step, weights and ramp"},
      {"[[schedule]]\nstep = 0\nweights = {a = 1}\n[[schedule]]\nstep = 5\nrmap = true\n"
       "weights = {a = 2}",
       "s: entry 2: unknown key 'rmap' (an entry has step, weights and ramp)"},
      {"[[schedule]]\nstep = 0\nweights = {a = 1}\n[[schedule]]\nweights = {a = 2}",
       "s: entry 2: has no step"},
      {"[[schedule]]\nstep = 0", "s: entry 1: has no weights"},
      {"[[schedule]]\nstep = 0\nweights = {}", "entry 1 (step 0) has no weights"},
      {"[[schedule]]\nstep = 0\nramp = true\nweights = {a = 1}", "entry 1 is a ramp"},
      {"[[schedule]]\nstep = 0\nweights = {a = 1}\n[[schedule]]\nstep = 10\nweights = {a = 2}\n"
       "[[schedule]]\nstep = 5\nweights = {a = 1}",
       "entry 3 (step 5) does not come after entry 2 (step 10)"},
      {"[[schedule]]\nstep = 1.5\nweights = {a = 1}", "s: entry 1: step 1.5 is not a whole"},
      {"[[schedule]]\nstep = -1\nweights = {a = 1}", "s: entry 1: step -1 is not a whole"},
      {"[[schedule]]\nstep = '0'\nweights = {a = 1}", "s: entry 1: step \"0\" is not a whole"},
      {"[[schedule]]\nstep = 1979-05-27\nweights = {a = 1}", "step \"a TOML date or time\" is"},
      {"[[schedule]]\nstep = 0\nweights = {a = 'x'}",
       "s: entry 1: the weight of 'a' is \"x\", not a number"},
      {"[[schedule]]\nstep = 0\nweights = {a = true}", "the weight of 'a' is true, not a number"},
      {"[[schedule]]\nstep = 0\nweights = {a = [1]}", "the weight of 'a' is (an array), not"},
      {"[[schedule]]\nstep = 0\nweights = {a = -1}", "entry 1 (step 0): dataset 'a' has weight -1"},
      {"[[schedule]]\nstep = 0\nweights = {a = nan}", "dataset 'a' has weight nan"},
      {"[[schedule]]\nstep = 0\nweights = {a = 0}", "entry 1 (step 0): every weight is 0"},
      {"[[schedule]]\nstep = 0\nweights = {'a,b' = 1}", "dataset name 'a,b' cannot be written"},
      {"[[schedule]]\nstep = 0\nweights = 1", "s: entry 1: weights 1 is not a table"},
      {"[[schedule]]\nstep = 0\nramp = 1\nweights = {a = 1}", "s: entry 1: ramp 1 is not true"},
      {"[[schedule]]\nstep = 0\nweights = { a = 1 \n", "s: not valid TOML: line 3, column 19:"},
      {"[[schedule]]\nstep = 0\nstep = 1\nweights = {a = 1}", "s: not valid TOML: line 3"},
      // Inputs that led toml++ 3.3.0 into undefined behaviour (weight_schedule_file.cc).
      {"\xef\xb9\xbf", "s: not valid TOML: line 1, column 1"},
      {"[:]", "s: not valid TOML: line 1, column 2"},
      {"s = \"\"\"\\\n\xc2\xa7\"\"\"", "s: unknown key 's'"},
      {"{\"schedule\": [{\"step\": 0, \"weights\": {\"a\": 1}},\n {\"step\": 5 \"weights\": {}}]}",
       "s: not valid JSON: parse error at line 2, column 21"},
      {"{\"schedule\": [{\"step\": 0, \"weights\": {\"a\": 1}},\n"
       " {\"step\": 5, \"weights\": {\"web\": 1, \"code\": 2, \"web\": 3}}]}",
       "s: entry 2: 'web' is given twice"},
      {"{\"schedule\": [{\"step\": 0, \"step\": 1, \"weights\": {\"a\": 1}}]}",
       "s: entry 1: 'step' is given twice"},
      {"{\"schedule\": [], \"schedule\": []}", "s: 'schedule' is given twice"},
      {"{\"schedule\": [{\"step\": 1e4, \"weights\": {\"a\": 1}}]}", "step 10000.0 is not a whole"},
      {"{\"schedule\": [{\"step\": 18446744073709551616, \"weights\": {\"a\": 1}}]}",
       "entry 1: step 1.8446744073709552e+19 is not a whole number"},
      {"{\"schedule\": [{\"step\": 0, \"weights\": {\"a\": null}}]}", "'a' is null, not a number"},
      {"{\"schedule\": [{\"step\": 0, \"weights\": {\"a\": 1e999}}]}", "s: not valid JSON"},
  };
  for (const auto& [text, message] : cases) {
    const std::string error = ConfigErrorOf([text = text] { ParseWeightScheduleFile(text, "s"); });
    EXPECT_NE(error.find(message), std::string::npos) << text << "\n: " << error;
    EXPECT_NE(error.find("--weights-schedule s"), std::string::npos) << text << "\n: " << error;
  }
}

TEST(WeightScheduleArgument, ReadsFilesOrTheInlineForm) {
  const TempDir dir;
  WriteText(dir / "s.toml", kToml);
  WriteText(dir / "s.json", kJson);
  EXPECT_EQ(WeightScheduleArgument(dir / "s.toml"), ThreeEntries());
  EXPECT_EQ(WeightScheduleArgument(dir / "s.json"), ThreeEntries());
  EXPECT_EQ(WeightScheduleArgument("0:web=0.7,code=0.3;~10000:web=0.5,code=0.5;20000:web=1"),
            ThreeEntries());
  // A file wins over the inline form, even when its name looks like a schedule.
  WriteText(dir / "0:a=1", kToml);
  EXPECT_EQ(WeightScheduleArgument(dir / "0:a=1"), ThreeEntries());
}

TEST(WeightScheduleArgument, RefusesWhatIsNoScheduleNamingIt) {
  const TempDir dir;
  fs::create_directory(dir / "folder.toml");
  WriteText(dir / "binary.toml", std::string("[[s\0chedule]]", 13));
  WriteText(dir / "bad.toml", "[[schedule]]\nstep = 0\nrmap = true\nweights = {a = 1}\n");
  const std::pair<std::string, std::string> cases[] = {
      {dir / "folder.toml", dir / "folder.toml: is a folder, not a schedule file"},
      {dir / "missing.toml", dir / "missing.toml: no such file"},
      {"web:0.5", "--weights-schedule web:0.5: no such file"},
      {dir / "binary.toml", dir / "binary.toml: is not a text file (a NUL byte at offset 3)"},
      {dir / "bad.toml", dir / "bad.toml: entry 1: unknown key 'rmap'"},
      {"0:web=1;5:web=x", "--weights-schedule entry '5:web=x'"},
  };
  for (const auto& [value, message] : cases) {
    const std::string error = ConfigErrorOf([&value = value] { WeightScheduleArgument(value); });
    EXPECT_NE(error.find(message), std::string::npos) << value << ": " << error;
  }
}

// A value that names no file and holds no '=' is inline text when it begins with a step: its
// malformed entry is named, not reported as a missing file.
TEST(WeightScheduleArgument, AnEntryWithoutEqualsIsAMalformedEntryNotAMissingFile) {
  const std::pair<std::string, std::string> cases[] = {
      {"0:", "--weights-schedule entry '0:' has no weights"},
      {"0:a;5:b", "--weights-schedule entry '0:a': weights entry 'a' is not NAME=WEIGHT"},
      {" ~ 5 :b", "--weights-schedule entry '~ 5 :b': weights entry 'b' is not NAME=WEIGHT"},
  };
  for (const auto& [value, message] : cases) {
    const std::string error = ConfigErrorOf([&value = value] { WeightScheduleArgument(value); });
    EXPECT_NE(error.find(message), std::string::npos) << value << ": " << error;
    EXPECT_EQ(error.find("no such file"), std::string::npos) << value << ": " << error;
  }
}

TEST(WeightScheduleArgument, AFileThatCannotBeReadIsAConfigErrorNamingIt) {
  const TempDir dir;
  WriteText(dir / "locked.toml", kToml);
  InstallFaultPlan(
      {{.call = IoCall::kOpen, .path_contains = "locked.toml", .nth = 0, .error = EACCES}});
  const std::string error = ConfigErrorOf([&] { WeightScheduleArgument(dir / "locked.toml"); });
  InstallFaultPlan({});
  EXPECT_NE(error.find("--weights-schedule: cannot open " + dir / "locked.toml"), std::string::npos)
      << error;
  EXPECT_NE(error.find("Permission denied"), std::string::npos) << error;
}

}  // namespace
}  // namespace stoker
