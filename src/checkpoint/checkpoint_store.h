// Where loader checkpoints live on disk (docs/checkpoint.md):
//
//   CHECKPOINT_DIR/step-<N>/loader/rank-<RRRRR>-of-<WWWWW>.ckpt
//   CHECKPOINT_DIR/step-<N>/loader/corpus.table   (rank 0's corpus record; not in older steps)
//   CHECKPOINT_DIR/step-<N>/trainer.files         (the trainer's files, one name a line)
//
// A trainer saves its own files (model, optimizer) beside `loader/` in the same step folder; the
// run session (stoker/run_session.h) records their names in trainer.files before any rank file
// is written. A step is complete when every rank file of its world size is there and every file
// trainer.files names (a job killed while saving leaves a step with some files missing, or only
// .tmp files, which are never read). Not collective; thread safe (no shared state).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "state/checkpoint_codec.h"
#include "stoker/checkpoint.h"  // StepFolderName

namespace stoker {

std::string CheckpointFileName(uint64_t rank, uint64_t world);
// step_dir/loader/rank-...-of-....ckpt
std::string CheckpointPath(const std::string& step_dir, uint64_t rank, uint64_t world);
// step_dir/loader/corpus.table: the corpus record rank 0 writes (corpus_record_file.h). Not a
// rank file: it plays no part in whether a step is complete.
std::string CorpusRecordPath(const std::string& step_dir);
// step_dir/trainer.files: the names of the trainer's files, relative to the step folder.
std::string TrainerFilesPath(const std::string& step_dir);
// The names of a trainer.files text (one a line; empty lines skipped).
std::vector<std::string> ParseTrainerFiles(std::string_view text);

struct StepFolder {
  std::string path;
  uint64_t step = 0;                  // from the folder's name
  std::optional<uint64_t> world;      // the world size its rank files were saved by
  std::vector<std::string> problems;  // why it is not complete; empty when complete
  bool complete() const { return problems.empty(); }
};

// One step folder: its rank files, and whether they are all there. `required_files`: a
// trainer's own files (relative to the step folder, e.g. "model.pt"), beside those its
// trainer.files names; a step lacking one, or holding something other than a regular file by
// that name, is not complete. Reads names and trainer.files only, never a rank file's content
// (CheckpointStep, checkpoint_step.h, checks those).
StepFolder DescribeStepFolder(const std::string& step_dir,
                              const std::vector<std::string>& required_files = {});

// Every step-<N> folder under `checkpoint_dir`, by increasing N (none when it does not exist).
std::vector<StepFolder> ListStepFolders(const std::string& checkpoint_dir,
                                        const std::vector<std::string>& required_files = {});

// The newest complete step folder under `checkpoint_dir`, or nullopt when it holds none. Newer
// incomplete ones (a job killed while saving) are logged and passed over; when none is complete
// (a job killed during its first saves), that is logged too: the job goes on from step 0, as it
// would had it been killed before them (PrepareResume sets the folders aside). Names only: a step
// whose rank files are of two saves is complete here, and refused by the resume rather than passed
// over (checkpoint_step.cc says why). `check`, when given, is asked about each complete step from
// the newest on: its problem (the step is then passed over as an incomplete one is), or ""
// (checkpoint_step.h, NewestResumableStep, reads the rank files so).
std::optional<StepFolder> NewestCompleteStep(
    const std::string& checkpoint_dir, const std::vector<std::string>& required_files = {},
    const std::function<std::string(const StepFolder&)>& check = nullptr);

// Step `step` under `checkpoint_dir`; ConfigError when there is no such folder or it is not
// complete, naming what it lacks.
StepFolder CompleteStep(const std::string& checkpoint_dir, uint64_t step,
                        const std::vector<std::string>& required_files = {});

// Refuses (IoError, with both figures) a checkpoint folder whose file system has less free space
// than the step folder `previous_step` takes: the next save would fail part way.
void CheckRoomForAStep(const std::string& checkpoint_dir, const std::string& previous_step);

void WriteCheckpointFile(const std::string& path, const RankCheckpoint& checkpoint);
// Throws IoError (cannot read) or DataError (corrupt), naming the file. With `bytes`, also the
// file's bytes as read.
RankCheckpoint ReadCheckpointFile(const std::string& path, std::string* bytes = nullptr);

}  // namespace stoker
