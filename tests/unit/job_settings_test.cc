// The job scripts' own settings: defaults from STOKER_HOME, a value set to nothing kept, each
// wrong one named with its value, and the #SBATCH --signal line of a batch script.
#include "job/job_settings.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace stoker::job {
namespace {

using Env = std::map<std::string, std::string>;

JobSettings Resolve(Env env, Launch launch = Launch::kSlurm, bool package = false) {
  env.emplace("STOKER_HOME", "/home/s");
  return ResolveJobSettings(
      [&env](std::string_view name) -> std::optional<std::string> {
        auto it = env.find(std::string(name));
        if (it == env.end()) return std::nullopt;
        return it->second;
      },
      launch, package);
}

std::string Value(const JobSettings& s, std::string_view name) {
  for (const auto& [n, v] : s.values) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no " << name;
  return "";
}

TEST(JobSettings, DefaultsComeFromTheCheckout) {
  const JobSettings s = Resolve({});
  EXPECT_TRUE(s.problems.empty());
  EXPECT_EQ(Value(s, "STOKER_TRAIN"), "/home/s/build/stoker-train");
  EXPECT_EQ(Value(s, "CORPUS"), "/home/s/out/corpus");
  EXPECT_EQ(Value(s, "CHECKPOINT_DIR"), "/home/s/out/checkpoints");
  EXPECT_EQ(Value(s, "LAUNCHER"), "mpirun");
  EXPECT_EQ(Value(s, "NP"), "2");
  EXPECT_EQ(Value(s, "REQUEUE"), "1");
  EXPECT_EQ(Value(s, "IDLE_REQUEUES"), "3");
  EXPECT_EQ(Value(s, "WARNING_SECONDS"), "");
  EXPECT_EQ(s.values.size(), JobVariables().size());
}

TEST(JobSettings, PythonTrainerAndItsPackage) {
  JobSettings s = Resolve({{"TRAINER", "python"}}, Launch::kSlurm, true);
  EXPECT_EQ(Value(s, "STOKER_TRAIN"), "/home/s/src/train/train.py");
  EXPECT_EQ(Value(s, "PYTHONPATH"), "/home/s/build/python");
  s = Resolve({{"TRAINER", "python"}, {"PYTHONPATH", "/mine"}}, Launch::kSlurm, true);
  EXPECT_EQ(Value(s, "PYTHONPATH"), "/mine:/home/s/build/python");
  s = Resolve({{"TRAINER", "python"}, {"PYTHONPATH", "/mine"}}, Launch::kSlurm, false);
  EXPECT_EQ(Value(s, "PYTHONPATH"), "/mine");
  s = Resolve({{"STOKER_TRAIN", "/my/trainer"}});
  EXPECT_EQ(Value(s, "STOKER_TRAIN"), "/my/trainer");
}

TEST(JobSettings, SetToNothingStaysNothing) {
  const JobSettings s = Resolve({{"CHECKPOINT_DIR", ""}, {"CORPUS", ""}});
  EXPECT_TRUE(s.problems.empty());  // the trainer refuses them, by flag and variable
  EXPECT_EQ(Value(s, "CHECKPOINT_DIR"), "");
  EXPECT_EQ(Value(s, "CORPUS"), "");
  EXPECT_EQ(Value(Resolve({{"CHECKPOINT_DIR", "/ck//"}}), "CHECKPOINT_DIR"), "/ck");
  EXPECT_EQ(Value(Resolve({{"CHECKPOINT_DIR", "/"}}), "CHECKPOINT_DIR"), "/");
}

void ExpectProblem(const Env& env, Launch launch, const std::string& text) {
  const JobSettings s = Resolve(env, launch);
  ASSERT_EQ(s.problems.size(), 1u) << text;
  EXPECT_NE(s.problems[0].find(text), std::string::npos) << s.problems[0];
}

TEST(JobSettings, EachWrongOneNamed) {
  ExpectProblem({{"TRAINER", "ruby"}}, Launch::kSlurm, "TRAINER must be stoker-train or python");
  ExpectProblem({{"TRAINER", ""}}, Launch::kSlurm, "not ''");
  ExpectProblem({{"LAUNCHER", "ssh"}}, Launch::kSlurm, "LAUNCHER must be mpirun or srun");
  ExpectProblem({{"LAUNCHER", "srun"}}, Launch::kMpirun, "with mpirun only, not LAUNCHER=srun");
  ExpectProblem({{"MPIRUN", "  "}}, Launch::kSlurm, "MPIRUN is empty");
  ExpectProblem({{"NP", "0"}}, Launch::kMpirun, "NP must be the number of ranks, 1 to 2147483647");
  ExpectProblem({{"NP", "9223372036854775808"}}, Launch::kMpirun,
                "NP must be the number of ranks, 1 to 2147483647, not '9223372036854775808'");
  ExpectProblem({{"NP", "2147483648"}}, Launch::kMpirun, "NP must be the number of ranks");
  ExpectProblem({{"NP", "two"}}, Launch::kMpirun, "not 'two'");
  ExpectProblem({{"NP", ""}}, Launch::kMpirun, "not ''");
  EXPECT_TRUE(Resolve({{"NP", "0"}}, Launch::kSlurm).problems.empty());  // tasks decide
  ExpectProblem({{"REQUEUE", "yes"}}, Launch::kSlurm, "REQUEUE must be 0 or 1, not 'yes'");
  ExpectProblem({{"IDLE_REQUEUES", "-1"}}, Launch::kSlurm, "IDLE_REQUEUES must be a whole");
  ExpectProblem({{"WARNING_SECONDS", "3m"}}, Launch::kSlurm, "WARNING_SECONDS must be a whole");
  ExpectProblem({{"TRAIN_ARGS", "--dim 8\n--layers 1"}}, Launch::kSlurm, "TRAIN_ARGS holds a line");
  const JobSettings two = Resolve({{"REQUEUE", "2"}, {"NP", "x"}}, Launch::kMpirun);
  EXPECT_EQ(two.problems.size(), 2u);
}

TEST(JobSettings, TrainerFilesAndWarningSeconds) {
  const JobSettings s = Resolve(
      {{"TRAINER_FILES", " model.pt\toptimizer.pt  meta/a.json "}, {"WARNING_SECONDS", "90"}});
  EXPECT_EQ(s.TrainerFiles(),
            (std::vector<std::string>{"model.pt", "optimizer.pt", "meta/a.json"}));
  EXPECT_EQ(s.WarningSeconds(), 90u);
  EXPECT_TRUE(Resolve({}).TrainerFiles().empty());
  EXPECT_FALSE(Resolve({}).WarningSeconds().has_value());
  EXPECT_EQ(s.Value("NP"), "2");
  EXPECT_THROW(s.Value("NOPE"), std::logic_error);
}

TEST(ScriptSignal, FirstSbatchSignalLine) {
  EXPECT_EQ(ScriptSignalSpec("#!/bin/bash\n#SBATCH --time=10\n#SBATCH --signal=B:USR1@180\n"),
            "B:USR1@180");
  EXPECT_EQ(ScriptSignalSpec("#SBATCH   --signal USR1@90  # comment\n#SBATCH --signal=9"),
            "USR1@90");
  EXPECT_EQ(ScriptSignalSpec("#SBATCH --signal=B:USR1@60\r\n"), "B:USR1@60");
  EXPECT_EQ(ScriptSignalSpec("# SBATCH --signal=USR1\n#SBATCH --signals=x\necho --signal=1\n"), "");
  EXPECT_EQ(ScriptSignalSpec(""), "");
  // As sbatch: only the lines before the first command count; blank lines and comments do not
  // end them.
  EXPECT_EQ(ScriptSignalSpec("#!/bin/bash\n\n  \n# a comment\n#SBATCH --signal=B:USR1@120\n"),
            "B:USR1@120");
  EXPECT_EQ(ScriptSignalSpec("#!/bin/bash\nset -e\n#SBATCH --signal=B:USR1@120\n"), "");
  EXPECT_EQ(ScriptSignalSpec("#!/bin/bash\n  echo hi\n#SBATCH --signal=B:USR1@120\n"), "");
}

}  // namespace
}  // namespace stoker::job
