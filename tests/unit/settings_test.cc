// The settings schema (stoker/program/settings.h) and its command line (options.h): one flag and
// one variable per setting, defaults as the structs hold them, the environment under the
// command line, empty or wrong variables refused by name, problems that name a variable's value.
#include "stoker/program/settings.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stoker/error.h"
#include "stoker/program/options.h"

namespace stoker::program {
namespace {

// Sets a variable for the test's life.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedVariable() { unsetenv(name_); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
};

// `program`'s settings from `args` and the environment as it is.
ProgramSettings Parse(Program program, std::vector<std::string> args) {
  CLI::App app("test", "test");
  ProgramSettings settings = DefaultSettings(program);
  CommandLine line(&app, program, &settings);
  CheckOptionValues(&app);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  line.ApplyEnvironment();
  line.Settle();
  return settings;
}

TEST(Settings, EveryFlagAndVariableIsOneSetting) {
  std::set<std::string_view> flags, variables, names;
  for (const Setting& setting : Schema()) {
    EXPECT_TRUE(flags.insert(setting.flag).second) << setting.flag;
    EXPECT_TRUE(names.insert(setting.name).second) << setting.name;
    if (!setting.env.empty()) {
      EXPECT_TRUE(variables.insert(setting.env).second) << setting.env;
    }
    EXPECT_NE(setting.programs, 0u) << setting.flag;
    EXPECT_FALSE(setting.help.empty()) << setting.flag;
    EXPECT_EQ(FindSetting(setting.flag), &setting);
  }
  EXPECT_EQ(FindSetting("--nope"), nullptr);
}

TEST(Settings, DefaultsAreTheStructsValues) {
  const LoaderConfig loader;
  const RunSettings run;
  EXPECT_EQ(DefaultText(*FindSetting("--seq-len"), Program::kRun), std::to_string(loader.seq_len));
  EXPECT_EQ(DefaultText(*FindSetting("--seq-len"), Program::kTrainer),
            std::to_string(DefaultSettings(Program::kTrainer).run.loader.seq_len));
  EXPECT_EQ(DefaultText(*FindSetting("--steps"), Program::kTrainer), std::to_string(run.steps));
  EXPECT_EQ(DefaultText(*FindSetting("--steps"), Program::kRun),
            std::to_string(DefaultSettings(Program::kRun).run.steps));
  EXPECT_EQ(DefaultText(*FindSetting("--read-ahead"), Program::kRun), "8MiB");
  EXPECT_EQ(DefaultText(*FindSetting("--io-depth"), Program::kRun), "auto");
  EXPECT_EQ(DefaultText(*FindSetting("--io-engine"), Program::kTrainer), "auto");
  EXPECT_EQ(DefaultText(*FindSetting("--dim"), Program::kTrainer),
            std::to_string(TrainerSettings{}.dim));
  EXPECT_EQ(DefaultText(*FindSetting("--data"), Program::kRun), "");
}

// A program's own shared settings carry their meaning, compared as values: --lr 3e-3 and 0.003
// are one; the settings the Loader or the run session compare carry none (they do it).
TEST(Settings, ProgramSharedSettingsAreComparedByValue) {
  for (const Setting& setting : Schema()) {
    EXPECT_EQ(setting.meaning != nullptr, setting.sharing == Sharing::kProgram) << setting.flag;
  }
  const auto shared = Parse(Program::kTrainer, {"--lr", "3e-3", "--doc-mask"}).run.program_shared;
  EXPECT_EQ(shared, Parse(Program::kTrainer, {"--lr", "0.003", "--doc-mask"}).run.program_shared);
  const std::map<std::string, std::string> by_name(shared.begin(), shared.end());
  EXPECT_EQ(by_name.at("lr"), "0.003");
  EXPECT_EQ(by_name.at("doc_mask"), "true");
  EXPECT_EQ(by_name.at("dim"), std::to_string(TrainerSettings{}.dim));
  EXPECT_EQ(by_name.count("steps"), 0u) << "the run session compares its own";
  EXPECT_TRUE(Parse(Program::kRun, {}).run.program_shared.empty()) << "stoker run has none";
}

// --save-every given without --checkpoint-dir would save nothing: refused in every program,
// whether it came from the command line or the environment; left at its default it is not.
TEST(Settings, SaveEveryGivenWithoutACheckpointFolderIsAProblem) {
  const auto problems = [](Program program, std::vector<std::string> args) {
    const std::vector<std::string> all = Parse(program, std::move(args)).run.Problems();
    return std::count_if(all.begin(), all.end(), [](const std::string& p) {
      return p.starts_with("--save-every needs --checkpoint-dir");
    });
  };
  for (Program program : {Program::kRun, Program::kTrainer}) {
    EXPECT_EQ(problems(program, {"--save-every", "10"}), 1) << ProgramName(program);
    EXPECT_EQ(problems(program, {}), 0) << ProgramName(program);
    EXPECT_EQ(problems(program, {"--save-every", "0"}), 0) << ProgramName(program);
    EXPECT_EQ(problems(program, {"--save-every", "10", "--checkpoint-dir", "ck"}), 0);
    ScopedVariable save_every("SAVE_EVERY", "10");
    EXPECT_EQ(problems(program, {}), 1) << ProgramName(program) << ", SAVE_EVERY=10";
  }
}

// "--steps=" with nothing after the '=': refused as empty, not given the next argument as value.
TEST(Settings, AnOptionWithNothingAfterItsEqualsSignIsRefused) {
  EXPECT_EQ(EmptyValueProblem({"--steps=", "--seq-len=4"}),
            "--steps= gives an empty value (leave the option out for its default)");
  EXPECT_EQ(EmptyValueProblem({"--steps=5", "--weights=a=1", "--", "--other="}), "");
  CLI::App app("test", "test");
  ProgramSettings settings = DefaultSettings(Program::kTrainer);
  CommandLine line(&app, Program::kTrainer, &settings);
  EXPECT_EQ(ParseCommandLine(&app, &line, {"--checkpoint-dir=", "--steps=5"}, false), 2);
}

TEST(Settings, TheEnvironmentGivesWhatTheCommandLineDoesNot) {
  ScopedVariable steps("STEPS", "7"), seq_len("SEQ_LEN", "32"), ahead("READ_AHEAD", "1MiB");
  const ProgramSettings s = Parse(Program::kTrainer, {"--seq-len", "64"});
  EXPECT_EQ(s.run.steps, 7u);
  EXPECT_EQ(s.run.loader.seq_len, 64u);  // the command line wins
  EXPECT_EQ(s.run.loader.read_ahead_bytes, 1u << 20);
  EXPECT_EQ(s.run.origins.at("--steps"), "STEPS='7' in the environment");
  EXPECT_EQ(s.run.origins.count("--seq-len"), 0u);
}

TEST(Settings, VariablesTheProgramDoesNotTakeAreLeftAlone) {
  ScopedVariable dump("RESULT_FILE", "");  // empty: none
  const ProgramSettings s = Parse(Program::kRun, {});
  EXPECT_TRUE(s.run.result_file.empty());
  EXPECT_TRUE(s.run.origins.empty());
}

// The message of the ConfigError Parse throws, or "" when it does not.
std::string Refusal(Program program, std::vector<std::string> args) {
  try {
    Parse(program, std::move(args));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Settings, AnEmptyVariableIsRefusedUnlessEmptyMeansNone) {
  {
    ScopedVariable dir("CHECKPOINT_DIR", "");
    EXPECT_EQ(Refusal(Program::kTrainer, {}),
              "CHECKPOINT_DIR='' in the environment: an empty value for --checkpoint-dir (unset "
              "CHECKPOINT_DIR for the default)");
  }
  ScopedVariable weights("WEIGHTS", ""), trace("TRACE_DIR", "");
  const ProgramSettings s = Parse(Program::kTrainer, {});
  EXPECT_TRUE(s.run.weights.empty());
  EXPECT_TRUE(s.run.trace_dir.empty());
  EXPECT_TRUE(s.run.origins.empty());
}

TEST(Settings, AVariableIsCheckedAsTheFlagWouldBe) {
  for (const char* value : {"-5", "abc", "010"}) {
    ScopedVariable steps("STEPS", value);
    const std::string refusal = Refusal(Program::kRun, {});
    EXPECT_NE(refusal.find("--steps"), std::string::npos) << refusal;
    EXPECT_NE(refusal.find(std::string("STEPS='") + value + "' in the environment"),
              std::string::npos)
        << refusal;
  }
  ScopedVariable engine("IO_ENGINE", "fast");
  EXPECT_NE(Refusal(Program::kRun, {}).find("IO_ENGINE='fast'"), std::string::npos);
}

TEST(Settings, ProblemsNameTheVariableTheirValueCameFrom) {
  ScopedVariable steps("STEPS", "0"), weights("WEIGHTS", "web=1,x");
  const ProgramSettings s = Parse(Program::kTrainer, {"--data", "/nonexistent/corpus"});
  const std::vector<std::string> problems = s.run.Problems();
  const auto named = [&](const std::string& text) {
    for (const std::string& p : problems) {
      if (p.find(text) != std::string::npos) return p;
    }
    return std::string();
  };
  EXPECT_NE(named("--steps must be at least 1").find("(STEPS='0' in the environment)"),
            std::string::npos);
  EXPECT_NE(named("--weights").find("(WEIGHTS='web=1,x' in the environment)"), std::string::npos);
  // --data came from the command line: no origin.
  EXPECT_EQ(named("--data").find("environment"), std::string::npos) << named("--data");
}

TEST(Settings, NameOriginsMatchesWholeFlagsOnly) {
  RunSettings run;
  run.origins["--weights"] = "WEIGHTS='a=1' in the environment";
  EXPECT_EQ(run.NameOrigins("--weights-schedule: no entry"), "--weights-schedule: no entry");
  EXPECT_EQ(run.NameOrigins("--weights: bad"), "--weights: bad (WEIGHTS='a=1' in the environment)");
  EXPECT_EQ(run.NameOrigins("both --weights and --weights-schedule"),
            "both --weights and --weights-schedule (WEIGHTS='a=1' in the environment)");
}

TEST(Settings, VariableLinesShowWhatTheProgramRunsWith) {
  ScopedVariable steps("STEPS", "12"), engine("IO_ENGINE", "threads");
  CLI::App app("test", "test");
  ProgramSettings settings = DefaultSettings(Program::kTrainer);
  CommandLine line(&app, Program::kTrainer, &settings);
  app.parse(std::vector<std::string>{"5", "--eos-id", "4MiB", "--read-ahead", "64", "--seq-len"});
  line.ApplyEnvironment();
  const std::vector<std::string> lines = line.VariableLines();
  const auto has = [&](const std::string& text) {
    return std::find(lines.begin(), lines.end(), text) != lines.end();
  };
  EXPECT_TRUE(has("STEPS=12"));
  EXPECT_TRUE(has("SEQ_LEN=64"));
  EXPECT_TRUE(has("BATCH_SIZE=16"));
  EXPECT_TRUE(has("CORPUS="));
  // As typed, not as converted ("2", "4194304").
  EXPECT_TRUE(has("IO_ENGINE=threads"));
  EXPECT_TRUE(has("READ_AHEAD=4MiB"));
  EXPECT_TRUE(has("IO_DEPTH=auto"));
  EXPECT_TRUE(has("EOS_ID=5"));
}

TEST(Settings, TrainerProblemsNameTheFlag) {
  TrainerSettings trainer;
  trainer.lr = 0;
  trainer.clip = -1;
  trainer.vocab = -2;
  EXPECT_EQ(trainer.Problems(),
            (std::vector<std::string>{"--lr 0 must be a number above 0",
                                      "--clip -1 must be 0 (no clipping) or above",
                                      "--vocab -2 is negative"}));
}

}  // namespace
}  // namespace stoker::program
