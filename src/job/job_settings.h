// The job scripts' own settings (jobs/): which trainer and launcher, how many ranks, whether to
// requeue, where the corpus and the checkpoints are. Their defaults and checks live here, in one
// place; `stoker job settings` reads them from the environment and prints them resolved, and
// jobs/common.sh exports what it prints. The trainer's settings are the trainer's
// (`stoker settings --program trainer`). Pure: the environment comes in as a lookup, the one fact
// about files as a flag. Thread safe (no state).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stoker::job {

// A variable of the environment, nullopt when unset (set to nothing is "").
using Lookup = std::function<std::optional<std::string>(std::string_view name)>;

// Where the job runs: a Slurm batch script (jobs/slurm/) or plain mpirun (jobs/mpirun/).
enum class Launch { kSlurm, kMpirun };

// One setting of the job scripts. `fallback` is its value when unset ("{home}" stands for
// STOKER_HOME); a variable set to nothing keeps nothing, and is refused where nothing is wrong.
struct JobVariable {
  std::string_view name;
  std::string_view fallback;
  std::string_view help;
};

// Every setting, in the order `stoker job settings` prints them.
std::span<const JobVariable> JobVariables();

struct JobSettings {
  std::vector<std::pair<std::string, std::string>> values;  // NAME, VALUE: JobVariables() order
  std::vector<std::string> problems;                        // each names its variable and value

  // The value of `name` (one of JobVariables()).
  const std::string& Value(std::string_view name) const;
  // TRAINER_FILES, split on white space.
  std::vector<std::string> TrainerFiles() const;
  // WARNING_SECONDS, nullopt when not set (checked: a whole number).
  std::optional<uint64_t> WarningSeconds() const;
};

// The settings from `env` (STOKER_HOME must be set). `python_package`: whether the package is
// built in the checkout (STOKER_HOME/build/python/stoker); TRAINER=python then puts it on
// PYTHONPATH, after one of the user's own.
JobSettings ResolveJobSettings(const Lookup& env, Launch launch, bool python_package);

// The spec of a batch script's first `#SBATCH --signal=SPEC` (or `--signal SPEC`) line, or ""
// when it has none. As sbatch, only the lines before the first one that is neither blank nor a
// comment count: a #SBATCH line after a command is a comment to Slurm.
std::string ScriptSignalSpec(std::string_view script);

}  // namespace stoker::job
