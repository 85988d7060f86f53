// CheckpointStep: one loader checkpoint step folder, loaded into one checked value. It is the
// only code that decides whether a step folder's rank files form one checkpoint; the resume
// (restore.h), the offline reshard (reshard.h), `stoker inspect` (checkpoint_stats.h) and
// `stoker steps`, which the job scripts call, all go through it.
//
// OpenCheckpointStep checks what the folder holds (every rank file of one world size, and the
// trainer's required files: checkpoint_store.h) and reads rank file 0; ReadStepRank reads any
// rank's file and checks that it belongs with rank file 0: the same identity (corpus, seed,
// logical shards, seq_len, EOS/BOS), the same save (run identity, step and world size), and the
// logical shards its rank owns.
// Memory: one rank file at a time. Not collective, no MPI; thread safe (no shared state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "state/checkpoint_codec.h"

namespace stoker {

struct CheckpointStep {
  std::string path;             // the step folder
  uint64_t step = 0;            // of the loader state (rank file 0)
  uint64_t world = 0;           // the ranks that saved it
  OrderIdentity identity;       // rank file 0's, which every other rank file shares
  std::string run;              // the run that saved rank file 0, which every other rank file
                                // shares (empty: files of format 1 or 2, which carry none)
  std::string layout;           // the parallel layout it was saved under (RankCheckpoint::layout;
                                // empty: none); `world` is then its dp size
  std::vector<double> weights;  // as saved by rank 0, normalized, corpus order
  MixSchedule schedule;         // as saved by rank 0 (a rescale gives every rank file rank 0's)
};

// Throws ConfigError when the folder is not a complete step (naming what is missing, at most a
// few files), IoError when it cannot be read, DataError when rank file 0 is corrupt or saved by
// more ranks than it has logical shards. `required_files`: a trainer's own files, relative to
// the step folder (e.g. "model.pt"), which must be there too.
CheckpointStep OpenCheckpointStep(const std::string& step_dir,
                                  const std::vector<std::string>& required_files = {});

// The newest step folder under `checkpoint_dir` a resume can go on from: complete
// (NewestCompleteStep, checkpoint_store.h), and every rank file read and checked as the resume
// does (OpenCheckpointStep, ReadStepRank). A newer step with a rank file that cannot be read or
// is corrupt (a truncated copy, a failing disk) is logged, naming the file, and passed over as an
// incomplete one is; one holding rank files of two saves is refused (ConfigError), as the resume
// refuses it. nullopt when none can be resumed. What the resume, `stoker steps --newest` and the
// job scripts' decisions take for the newest step. Reads every rank file of the steps it tries:
// one open each, about D x L bytes in all (kilobytes to a few megabytes; docs/checkpoint.md).
std::optional<StepFolder> NewestResumableStep(const std::string& checkpoint_dir,
                                              const std::vector<std::string>& required_files = {});

// The step folders of `checkpoint_dir` (ListStepFolders) as a resume sees them: each complete one
// from the newest down to the one a resume goes on from is checked as NewestResumableStep checks
// it, and one whose rank files a resume cannot take (a damaged file, files of two saves) gets
// that as a problem, naming the file. What `stoker steps` lists.
std::vector<StepFolder> ListStepFoldersAsResumeSeesThem(
    const std::string& checkpoint_dir, const std::vector<std::string>& required_files = {});

// Rank `rank`'s file of `step`, checked against it: DataError naming the file otherwise; of
// another save, ConfigError naming rank file 0 too, and both files' runs and steps. With `bytes`,
// also the file's bytes as read.
RankCheckpoint ReadStepRank(const CheckpointStep& step, uint64_t rank,
                            std::string* bytes = nullptr);

}  // namespace stoker
