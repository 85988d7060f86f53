#include "checkpoint/checkpoint_step.h"

#include <filesystem>
#include <optional>

#include "base/check.h"
#include "checkpoint/checkpoint_store.h"
#include "order/partition.h"

namespace stoker {

namespace {

// The checks that need no other rank file: the rank's own logical shards, a world size the
// logical shards allow.
void CheckRankAlone(const RankCheckpoint& c, uint64_t rank, const std::string& path) {
  STOKER_CHECK(c.world >= 1 && c.world <= c.identity.logical_shards, DataError,
               "{}: saved by {} ranks, more than its {} logical shards", path, c.world,
               c.identity.logical_shards);
  const IndexRange owned = OwnedLogicalShards(c.identity.logical_shards, c.world, rank);
  STOKER_CHECK(c.state.shards == owned, DataError,
               "{}: holds logical shards [{}, {}), but rank {} of {} owns [{}, {})", path,
               c.state.shards.begin, c.state.shards.end, rank, c.world, owned.begin, owned.end);
}

std::string SaveText(const std::string& run, uint64_t step) {
  return run.empty() ? fmt::format("no run identity (file format 1 or 2), step {}", step)
                     : fmt::format("run {}, step {}", run, step);
}

// The rank files of a step folder are one save: written by one run (the same run identity), at
// one step, by one world size (the folder's: a file's content must match its name). A file of
// another save is refused naming it and rank file 0; which of the two is the stranger only the
// user can tell (at 2 ranks nothing else could).
//
// Such a step is refused even where --resume picks the newest step by itself, rather than
// passed over as incomplete: a killed save leaves rank files missing, never one of another run
// (each file is written under its own name, atomically, and a resume that saves sets aside the
// steps after the one it resumes from: restore.h SetAsideStepsAfter). A rank file of another run
// was put there from outside a run (copied from another checkpoint folder, synced by a tool), or
// by a trainer that saves after a resume without setting those steps aside, completing a killed
// save with files of its own: a mix that resumed wrong batches before runs had an identity.
// Passing over it would throw away the training since the step before without anyone having
// decided to, and the resume would set the mixed folder aside as interrupted: the user who
// copied the file expects to hear about it. Put the right file back, or move the step away.
void CheckSameSave(const CheckpointStep& step, const RankCheckpoint& c, const std::string& path) {
  STOKER_CHECK(c.run == step.run, ConfigError,
               "{} was saved by another run than {} of the same step folder ({}; rank file 0: "
               "{}): the rank files of a step are one save of one run, and one of these two "
               "comes from another (copied in from another checkpoint folder, or saved into "
               "this step by a later run). Put back the file of the run that saved the others, "
               "or move the step folder away (--resume then goes on from the newest step "
               "before it)",
               path, CheckpointFileName(0, step.world), SaveText(c.run, c.state.step),
               SaveText(step.run, step.step));
  STOKER_CHECK(c.state.step == step.step, DataError,
               "{}: holds step {}, but rank file 0 of the same folder holds step {}", path,
               c.state.step, step.step);
}

// Refuses a step whose rank file 0 is of another save than every other rank file (at 3 ranks or
// more, where the others outvote it): ReadStepRank names each of them against rank file 0.
void RefuseRankFileZeroOfAnotherSave(const CheckpointStep& step, size_t others) {
  if (others == 0 || step.world < 3 || others < step.world - 1) return;
  const RankCheckpoint one = ReadCheckpointFile(CheckpointPath(step.path, 1, step.world));
  throw ConfigError(fmt::format(
      "{} was saved by another run than the {} other rank files of the same step folder ({}; "
      "the others: {}): the rank files of a step are one save of one run. Put back the file of "
      "the run that saved the others, or move the step folder away (--resume then goes on from "
      "the newest step before it)",
      CheckpointPath(step.path, 0, step.world), step.world - 1, SaveText(step.run, step.step),
      SaveText(one.run, one.state.step)));
}

// Why a resume could not go on from the complete step `folder` (a rank file it cannot read or
// finds corrupt), or "". A step of two saves is refused (ConfigError), naming the odd file.
std::string UnreadableRankFile(const StepFolder& folder,
                               const std::vector<std::string>& required_files) {
  try {
    const CheckpointStep step = OpenCheckpointStep(folder.path, required_files);
    size_t others = 0;
    std::optional<ConfigError> first;
    for (uint64_t rank = 1; rank < step.world; ++rank) {
      try {
        ReadStepRank(step, rank);
      } catch (const ConfigError& e) {  // of another save than rank file 0
        ++others;
        if (!first) first = e;
      }
    }
    RefuseRankFileZeroOfAnotherSave(step, others);
    if (first) throw *first;
  } catch (const DataError& e) {
    return e.what();
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

std::optional<StepFolder> NewestResumableStep(const std::string& checkpoint_dir,
                                              const std::vector<std::string>& required_files) {
  return NewestCompleteStep(checkpoint_dir, required_files, [&](const StepFolder& folder) {
    return UnreadableRankFile(folder, required_files);
  });
}

std::vector<StepFolder> ListStepFoldersAsResumeSeesThem(
    const std::string& checkpoint_dir, const std::vector<std::string>& required_files) {
  std::vector<StepFolder> steps = ListStepFolders(checkpoint_dir, required_files);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (!it->complete()) continue;
    std::string problem;
    try {
      problem = UnreadableRankFile(*it, required_files);
    } catch (const ConfigError& e) {  // of two saves: refused, not passed over, by a resume
      problem = e.what();
    }
    if (problem.empty()) break;  // the step a resume goes on from
    it->problems.push_back(problem);
  }
  return steps;
}

CheckpointStep OpenCheckpointStep(const std::string& step_dir,
                                  const std::vector<std::string>& required_files) {
  std::error_code error;
  STOKER_CHECK(std::filesystem::is_directory(step_dir, error), ConfigError,
               "checkpoint {} is missing: {}", step_dir,
               std::filesystem::exists(step_dir, error) ? "not a folder" : "no such folder");
  const StepFolder folder = DescribeStepFolder(step_dir, required_files);
  STOKER_CHECK(folder.complete(), ConfigError, "checkpoint {} is incomplete: {}", step_dir,
               fmt::join(folder.problems, "; "));
  const std::string path = CheckpointPath(step_dir, 0, *folder.world);
  RankCheckpoint first = ReadCheckpointFile(path);
  CheckRankAlone(first, 0, path);
  return {.path = step_dir,
          .step = first.state.step,
          .world = first.world,
          .identity = std::move(first.identity),
          .run = std::move(first.run),
          .layout = std::move(first.layout),
          .weights = std::move(first.weights),
          .schedule = std::move(first.schedule)};
}

RankCheckpoint ReadStepRank(const CheckpointStep& step, uint64_t rank, std::string* bytes) {
  const std::string path = CheckpointPath(step.path, rank, step.world);
  RankCheckpoint c = ReadCheckpointFile(path, bytes);  // its rank and world: those of its name
  const std::vector<std::string> differences = IdentityDifferences(step.identity, c.identity);
  STOKER_CHECK(differences.empty(), DataError,
               "{}: does not belong with rank file 0 of {} (\"checkpoint\" below is rank file "
               "0, \"now\" this file):\n  {}",
               path, step.path, fmt::join(differences, "\n  "));
  CheckSameSave(step, c, path);
  CheckRankAlone(c, rank, path);
  return c;
}

}  // namespace stoker
