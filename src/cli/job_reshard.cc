// `stoker job reshard`: the reshard job (jobs/slurm/reshard.sbatch, jobs/mpirun/reshard.sh).
// From the environment (the job's settings as `stoker job settings` reads them, and WORLD_SIZE,
// STEP, NEW_CHECKPOINT_DIR): step STEP of CHECKPOINT_DIR (default: the newest complete one, as
// `stoker steps --newest` finds it, TRAINER_FILES required too), rewritten for WORLD_SIZE ranks
// into a whole new NEW_CHECKPOINT_DIR/step-<N> (default "$CHECKPOINT_DIR-to-$WORLD_SIZE"),
// published in one rename (checkpoint/reshard.h), never over an existing one. Logs what it does;
// prints the new step folder on stdout, for the script's `stoker inspect`.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/digits.h"
#include "checkpoint/checkpoint_step.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/reshard.h"
#include "cli/job_commands.h"

namespace stoker::cli {

namespace {

StepFolder StepToReshard(const std::string& dir, const std::vector<std::string>& required) {
  const std::string step = Environment("STEP").value_or("");
  if (!step.empty()) {
    const std::optional<uint64_t> n = ParseDigits(step);
    STOKER_CHECK(n.has_value(), ConfigError, "STEP must be a step number, not '{}'", step);
    return CompleteStep(dir, *n, required);
  }
  std::optional<StepFolder> newest = NewestResumableStep(dir, required);
  STOKER_CHECK(newest.has_value(), ConfigError,
               "no step-<N> folder in CHECKPOINT_DIR={} to reshard", dir);
  return *std::move(newest);
}

int Reshard() {
  const job::JobSettings settings = ReadJobSettings(job::Launch::kSlurm);
  const std::string& dir = settings.Value("CHECKPOINT_DIR");
  STOKER_CHECK(!dir.empty(), ConfigError, "set CHECKPOINT_DIR to the folder of step-<N> folders");
  const std::string world_text = Environment("WORLD_SIZE").value_or("");
  const std::optional<uint64_t> world = ParseDigits(world_text);
  STOKER_CHECK(world && *world > 0, ConfigError,
               "set WORLD_SIZE to the number of ranks the job will resume on (now '{}')",
               world_text);
  const StepFolder from = StepToReshard(dir, settings.TrainerFiles());
  std::string new_dir = Environment("NEW_CHECKPOINT_DIR").value_or("");
  if (new_dir.empty()) new_dir = fmt::format("{}-to-{}", dir, *world);
  const std::string out = fmt::format("{}/{}", new_dir, StepFolderName(from.step));
  std::error_code ec;
  STOKER_CHECK(!std::filesystem::exists(std::filesystem::symlink_status(out, ec)), ConfigError,
               "{} exists already: reshard never overwrites a step folder; remove it or set "
               "NEW_CHECKPOINT_DIR",
               out);
  spdlog::info("resharding {} (saved on {} ranks) for {} ranks into {}", from.path,
               from.world.value_or(0), *world, out);
  std::filesystem::create_directories(new_dir, ec);
  STOKER_CHECK(!ec, IoError, "cannot create NEW_CHECKPOINT_DIR={}: {}", new_dir, ec.message());
  const ReshardStats stats = ReshardStepFolder(from.path, *world, out);
  spdlog::info(
      "resharded step {} from {} to {} ranks: {} bytes written; resume from it with "
      "CHECKPOINT_DIR={} on {} ranks",
      stats.step, stats.old_world, stats.new_world, stats.bytes_written, new_dir, *world);
  std::printf("%s\n", out.c_str());
  return 0;
}

}  // namespace

JobCommand AddJobReshard(CLI::App* job) {
  CLI::App* sub = job->add_subcommand(
      "reshard", "Reshard a step of CHECKPOINT_DIR for WORLD_SIZE ranks into a new step folder");
  sub->footer(
      "From the environment: CHECKPOINT_DIR, WORLD_SIZE (required: the ranks the job will "
      "resume on), STEP (default: the newest complete step), NEW_CHECKPOINT_DIR (default "
      "\"$CHECKPOINT_DIR-to-$WORLD_SIZE\"), TRAINER_FILES. Writes NEW_CHECKPOINT_DIR/step-<N> "
      "whole (the loader files for WORLD_SIZE ranks, the trainer's files copied) in one "
      "rename, as stoker reshard does; refuses (exit 2) a missing or incomplete step and an "
      "existing output. Prints the new step folder.");
  return {sub, [] { return Reshard(); }};
}

}  // namespace stoker::cli
