// `stoker job settings` and `stoker job start`: what a job script (jobs/common.sh) asks before it
// launches the trainer, so the script decides nothing itself.
//
//   settings [--launch slurm|mpirun]
//       the job's settings (job/job_settings.h) from the environment, their defaults filled in,
//       as NAME=VALUE lines on stdout for the script to export; exit 2 naming each wrong one.
//   start --mode train|resume [--ranks N] [--limit TEXT [--script FILE]] [-- ARGS...]
//       the trainer's own check of its settings (STOKER_TRAIN --check ARGS, one process without
//       MPI), the time limit (squeue's %l) against the warning offset (WARNING_SECONDS,
//       SBATCH_SIGNAL or the script's #SBATCH --signal line), then CHECKPOINT_DIR: where the
//       run starts (made when it does not exist). Prints the trainer's last step (its STEPS) on
//       the first line, then the lines the script prints; exit 2 when the job must not start (a
//       wrong setting, a time limit too short, nothing to resume, step folders none complete).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/digits.h"
#include "checkpoint/checkpoint_step.h"
#include "checkpoint/checkpoint_store.h"
#include "cli/job_commands.h"
#include "job/job_settings.h"
#include "job/slurm_time.h"
#include "os/child_process.h"
#include "os/files.h"

namespace stoker::cli {

namespace fs = std::filesystem;

std::optional<std::string> Environment(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

job::JobSettings ReadJobSettings(job::Launch launch) {
  const std::string home = Environment("STOKER_HOME").value_or("");
  std::error_code ec;
  const bool package = !home.empty() && fs::is_directory(home + "/build/python/stoker", ec);
  job::JobSettings settings = job::ResolveJobSettings(Environment, launch, package);
  STOKER_CHECK(settings.problems.empty(), ConfigError, "{}; nothing was launched",
               fmt::join(settings.problems, "; "));
  return settings;
}

namespace {

int PrintSettings(const std::string& launch) {
  const job::JobSettings settings =
      ReadJobSettings(launch == "mpirun" ? job::Launch::kMpirun : job::Launch::kSlurm);
  std::string out;
  for (const auto& [name, value] : settings.values) {
    // An empty PYTHONPATH is left out rather than exported: the user's environment stays as is.
    if (name != "PYTHONPATH" || !value.empty()) out += fmt::format("{}={}\n", name, value);
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

struct StartOptions {
  std::string mode = "train";             // --mode
  std::string ranks = "?";                // --ranks
  std::string limit;                      // --limit
  std::string script;                     // --script
  std::vector<std::string> trainer_args;  // after --: the trainer's flags at the launch
};

// The trainer checks its own settings (`--check`, naming each wrong flag and its variable, on
// stderr) and prints them as NAME=VALUE; its STEPS is the run's last step, for the requeue.
uint64_t CheckTrainerSettings(const StartOptions& o, const job::JobSettings& settings) {
  const std::string& program = settings.Value("STOKER_TRAIN");
  std::error_code ec;
  STOKER_CHECK(fs::is_regular_file(program, ec) && ::access(program.c_str(), X_OK) == 0,
               ConfigError,
               "STOKER_TRAIN is not an executable program: {} (set STOKER_TRAIN, or "
               "build it); nothing was launched",
               program);
  std::vector<std::string> argv = {program, "--check"};
  argv.insert(argv.end(), o.trainer_args.begin(), o.trainer_args.end());
  const ChildResult check = RunChild(argv);
  STOKER_CHECK(check.status <= 128, ConfigError, "{} --check was killed (exit {})", program,
               check.status);
  const std::string& extra = settings.Value("TRAIN_ARGS");
  STOKER_CHECK(check.status == 0, ConfigError,
               "wrong setting: {} --check said so (above, exit {}{}); nothing was launched",
               program, check.status,
               extra.empty() ? "" : fmt::format("; TRAIN_ARGS='{}' gave flags", extra));
  std::optional<uint64_t> steps;
  for (size_t at = 0; at < check.output.size();) {
    const size_t end = std::min(check.output.find('\n', at), check.output.size());
    const std::string_view line = std::string_view(check.output).substr(at, end - at);
    if (line.starts_with("STEPS=")) steps = ParseDigits(line.substr(6));
    at = end + 1;
  }
  STOKER_CHECK(steps.has_value(), ConfigError,
               "{} --check printed no STEPS=N line (a trainer of one's own prints its settings "
               "as stoker-train --check does)",
               program);
  return *steps;
}

// The time limit against the warning offset; false when the job must not start.
bool CheckLimit(const StartOptions& o, const job::JobSettings& settings,
                std::vector<std::string>* lines) {
  if (o.limit.empty()) return true;
  std::string spec = Environment("SBATCH_SIGNAL").value_or("");
  if (spec.empty() && !o.script.empty()) {
    std::error_code ec;
    STOKER_CHECK(fs::is_regular_file(o.script, ec), ConfigError,
                 "--script {}: no such batch script, so its #SBATCH --signal line cannot be read",
                 o.script);
    spec = job::ScriptSignalSpec(ReadFile(o.script));
  }
  const std::optional<uint64_t> warning = settings.WarningSeconds();
  if (!warning && spec.empty()) return true;
  const job::TimeLimitCheck check = job::CheckTimeLimit(o.limit, spec, warning);
  lines->push_back(check.message);
  return check.verdict != job::TimeLimitCheck::Verdict::kTooShort;
}

// Where the run starts in CHECKPOINT_DIR.
void CheckCheckpoints(const StartOptions& o, const job::JobSettings& settings,
                      std::vector<std::string>* lines) {
  const std::string& dir = settings.Value("CHECKPOINT_DIR");
  const std::optional<StepFolder> newest = NewestResumableStep(dir, settings.TrainerFiles());
  if (!newest) {
    STOKER_CHECK(o.mode != "resume", ConfigError,
                 "nothing to resume: no complete step-<N> folder in CHECKPOINT_DIR={} (a complete "
                 "one holds loader/rank-R-of-W.ckpt for every rank R < W and the files its "
                 "trainer.files names). Start with train instead, or set CHECKPOINT_DIR",
                 dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    STOKER_CHECK(!ec, IoError, "cannot create CHECKPOINT_DIR={}: {}", dir, ec.message());
    const size_t incomplete = ListStepFolders(dir).size();
    lines->push_back(
        incomplete == 0
            ? fmt::format("no checkpoint in {} yet: the trainer starts at step 0", dir)
            : fmt::format("no complete checkpoint in {} ({} step folders, none complete, which "
                          "the trainer sets aside): it starts at step 0",
                          dir, incomplete));
    return;
  }
  const std::string world = newest->world ? fmt::format("{}", *newest->world) : "?";
  lines->push_back(fmt::format(
      "newest complete checkpoint: {}, saved on {} ranks, now {}: the trainer resumes from it{}",
      newest->path, world, o.ranks,
      world == o.ranks ? "" : " and the loader rescales its state (no token lost or repeated)"));
}

int Start(const StartOptions& o) {
  const job::JobSettings settings = ReadJobSettings(job::Launch::kSlurm);
  const uint64_t steps = CheckTrainerSettings(o, settings);
  std::vector<std::string> lines;
  const bool fits = CheckLimit(o, settings, &lines);
  if (fits) CheckCheckpoints(o, settings, &lines);
  std::string out = fmt::format("{}\n", steps);
  for (const std::string& line : lines) out += line + "\n";
  std::fputs(out.c_str(), stdout);
  return fits ? 0 : 2;
}

}  // namespace

JobCommand AddJobSettings(CLI::App* job) {
  auto launch = std::make_shared<std::string>("slurm");
  CLI::App* sub = job->add_subcommand(
      "settings", "Print the job's settings from the environment, defaults filled in");
  std::string footer =
      "Prints NAME=VALUE lines (jobs/common.sh exports them); refuses (exit 2) a wrong one, "
      "naming it. A variable set to nothing keeps nothing. The trainer's own settings are "
      "listed by stoker settings --program trainer. The job's:";
  for (const job::JobVariable& v : job::JobVariables()) {
    footer += fmt::format("\n  {:<16}{}{}", v.name, v.help,
                          v.fallback.empty() ? "" : fmt::format(" (default: {})", v.fallback));
  }
  sub->footer(footer + "\n({home}: STOKER_HOME, the stoker checkout.)");
  sub->add_option("--launch", *launch, "Where the job runs: slurm (jobs/slurm/) or mpirun")
      ->check(CLI::IsMember({"slurm", "mpirun"}))
      ->capture_default_str();
  return {sub, [launch] { return PrintSettings(*launch); }};
}

JobCommand AddJobStart(CLI::App* job) {
  auto o = std::make_shared<StartOptions>();
  CLI::App* sub = job->add_subcommand(
      "start",
      "Check the trainer's settings, the time limit and CHECKPOINT_DIR before the launch; say "
      "where it starts");
  sub->footer(
      "Reads the job's settings as stoker job settings does (STOKER_TRAIN, CHECKPOINT_DIR, "
      "TRAINER_FILES, WARNING_SECONDS, ...) and SBATCH_SIGNAL from the environment, then runs "
      "STOKER_TRAIN --check ARGS (the flags after --, those the launch gives the trainer): the "
      "trainer names each wrong setting. Prints the trainer's STEPS on the first line, then the "
      "lines the script prints. Exit 2 when the job must not start: a wrong setting, a "
      "time limit at or below the warning offset (Slurm would warn at once, every run, and the "
      "job requeue itself for ever) or --mode resume without a complete step folder. Step "
      "folders of which none is complete (a job killed during its first saves) start --mode "
      "train at step 0: the trainer sets them aside.");
  sub->add_option("--mode", o->mode,
                  "train (start at step 0 when there is no checkpoint) or resume")
      ->check(CLI::IsMember({"train", "resume"}))
      ->capture_default_str();
  sub->add_option("--ranks", o->ranks, "The number of ranks the job launches, for the message");
  sub->add_option("--limit", o->limit, "The job's time limit as squeue -o %l prints it");
  sub->add_option("--script", o->script,
                  "The batch script, whose #SBATCH --signal line gives the warning offset when "
                  "neither WARNING_SECONDS nor SBATCH_SIGNAL does");
  sub->add_option("args", o->trainer_args,
                  "After --: the trainer's flags, as the launch will give them (the rest of its "
                  "settings come from the environment)");
  return {sub, [o] { return Start(*o); }};
}

}  // namespace stoker::cli
