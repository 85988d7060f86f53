// `stoker reshard STEP_DIR --world-size W' --out NEW_STEP_DIR`: rewrites a loader checkpoint
// saved by W ranks into one for W' ranks, offline (checkpoint/reshard.h): one process, no MPI
// communication, so it runs on a login node before the job that resumes on W' ranks starts.
// Resuming from its output on W' ranks gives the same stream, bit for bit, as resuming from the
// original on W' ranks (the loader then rescales the same way at start-up).
//
// An --out that does not exist yet becomes a whole step folder, published in one rename: the
// loader files for W' ranks and a copy of everything else in STEP_DIR (the trainer's files), so
// a reshard killed midway leaves no half step folder. An --out that exists gets loader/ only.
// A reshard to the world size the checkpoint already has copies its files, checked, unchanged.
//
// Under mpirun only rank 0 works; the others wait for it and fail with it (mpi::FailTogether).
// Rank 0 prints one summary line on stdout.
#include "checkpoint/reshard.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "base/check.h"
#include "checkpoint/checkpoint_stats.h"
#include "checkpoint/checkpoint_store.h"
#include "cli/commands.h"

namespace stoker::cli {

namespace {

namespace fs = std::filesystem;

struct ReshardOptions {
  std::string step_dir;     // STEP_DIR (or its loader/ folder)
  uint64_t world_size = 0;  // --world-size
  std::string out;          // --out
};

// Refuses an output that already holds loader rank files of any world size: resuming from a
// folder that mixes two checkpoints would be refused later, and overwriting one would lose it.
void CheckOutputIsFree(const std::string& out) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out + "/loader", ec)) {
    const std::string name = entry.path().filename().string();
    STOKER_CHECK(!name.ends_with(".ckpt"), ConfigError,
                 "--out {} already holds a loader checkpoint ({}): reshard never overwrites "
                 "one; remove it or choose another folder",
                 out, entry.path().string());
  }
}

void WarnAboutName(const std::string& out, uint64_t step) {
  fs::path p = fs::path(out).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  if (p.filename() != StepFolderName(step)) {
    spdlog::warn(
        "reshard: --out {} is not named {}: `stoker run --resume` and FindResumeStep "
        "look only for step-<N> folders (and take N for the step); rename it before resuming",
        out, StepFolderName(step));
  }
}

int RunReshard(const ReshardOptions& options, const mpi::Comm& world) {
  if (world.size() > 1 && world.rank() == 0) {
    spdlog::info("reshard: needs no MPI; rank 0 does the work, the other {} ranks wait",
                 world.size() - 1);
  }
  ReshardStats stats;
  double seconds = 0;
  mpi::FailTogether(world, [&] {
    if (world.rank() != 0) return;
    const auto start = std::chrono::steady_clock::now();
    const std::string step_dir = CheckpointStepFolder(options.step_dir).value_or(options.step_dir);
    STOKER_CHECK(options.world_size >= 1, ConfigError, "--world-size must be at least 1, not 0");
    std::error_code ec;
    if (fs::exists(fs::symlink_status(options.out, ec))) {
      CheckOutputIsFree(options.out);
      stats = ReshardCheckpoint(step_dir, options.world_size, options.out);
    } else {
      stats = ReshardStepFolder(step_dir, options.world_size, options.out);
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  if (world.rank() == 0) {
    WarnAboutName(options.out, stats.step);
    fmt::print("resharded step {} from {} to {} ranks: {} bytes written to {}/loader in {:.3f} s\n",
               stats.step, stats.old_world, stats.new_world, stats.bytes_written, options.out,
               seconds);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

Command SetupReshard(CLI::App& app) {
  auto options = std::make_shared<ReshardOptions>();
  CLI::App* sub = app.add_subcommand(
      "reshard",
      "Rewrite a loader checkpoint for another number of ranks, offline.\n"
      "Turns a checkpoint saved by W ranks into one for W' ranks: for moving a "
      "job to another node count before the resumed job starts (e.g. on a login node). One "
      "process, no MPI communication (under mpirun rank 0 works, the others wait). Reads every "
      "rank file of step_dir/loader/ (all must be present and valid) and writes "
      "OUT/loader/rank-<r>-of-<W'>.ckpt (OUT: --out). When OUT does not exist, it becomes a "
      "whole step folder: everything else in step_dir (a trainer's own files, such as "
      "model.pt) is copied beside loader/, and the folder appears under its name in one rename "
      "once complete, so a reshard killed midway leaves nothing half written; when OUT exists, "
      "only its loader/ is written. Resuming from the output on W' ranks gives the same stream, "
      "bit for bit, as resuming from the original on W' ranks; every logical shard's cursors "
      "move to their new owner with the documents open in it, which go on where they stood, and "
      "the started tokens are summed and re-split. Prints: step, old and new world size, bytes "
      "written, "
      "seconds. To the world size it already has, the files are checked and copied unchanged. "
      "See docs/checkpoint.md.");
  sub->add_option("step_dir", options->step_dir,
                  "The checkpoint step folder to read (DIR/step-<N>, holding loader/), or its "
                  "loader/ folder. It is only read")
      ->required();
  sub->add_option("--world-size", options->world_size,
                  "W': the number of ranks the job will resume on, from 1 to the checkpoint's "
                  "logical shards")
      ->required();
  sub->add_option("--out", options->out,
                  "The step folder to write; name it step-<N> with the same N, since --resume "
                  "looks for step-<N> folders. If missing, it is made whole (loader/ and a copy "
                  "of the trainer's files) and published in one rename; if it exists, only "
                  "loader/ is written, refused if that already holds rank files")
      ->required();
  return {sub, [options](const mpi::Comm& world) { return RunReshard(*options, world); }};
}

}  // namespace stoker::cli
