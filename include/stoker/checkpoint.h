// Checkpoint step folders, for a trainer that saves its own files beside the loader's
// (docs/checkpoint.md):
//
//   CHECKPOINT_DIR/step-<N>/loader/rank-<r>-of-<W>.ckpt   the loader's state (Loader::Save)
//                          /...                           the trainer's own files
//
// FindResumeStep, PrepareResume and PrepareFreshStart find, set aside and clear such folders
// (collective; the run session, stoker/run_session.h, calls them in the right order for a
// trainer); StepFolderName and StepFolderWorld name and describe one (not collective, thread
// safe). libstoker.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

// "step-<N>": the name of the step folder of global step `step` under a checkpoint folder.
std::string StepFolderName(uint64_t step);

// A trainer's own file `name` (a path relative to the step folder, e.g. "model.pt") in
// `step_dir`, written the way stoker writes its own: atomically (a temporary file, fsync, rename,
// fsync of the folder), so after a crash it is the old file or the new one, whole; parent
// folders are made. Throws IoError naming the path and the failing call. Not collective.
void WriteStepFile(const std::string& step_dir, const std::string& name, std::string_view bytes);

// The whole of the trainer's file `name` in `step_dir`. Throws IoError naming the path.
std::string ReadStepFile(const std::string& step_dir, const std::string& name);

// The world size whose rank files `step_dir`/loader/ holds (the run that saved it, or the target
// of `stoker reshard`), or nullopt when it holds none.
std::optional<uint64_t> StepFolderWorld(const std::string& step_dir);

// Collective over `comm`: the newest complete step folder under `checkpoint_dir` (for
// LoaderConfig::resume_from), or nullopt (also when none is complete, logged). Incomplete newer
// steps are logged and passed over, and so are steps with a rank file rank 0 cannot read or finds
// corrupt (it reads every rank file of the steps it tries); a step of two saves is refused.
// A step folder is complete when every rank file is there and every file its trainer.files names
// (docs/checkpoint.md); `required_files` (relative to the step folder, e.g. "model.pt") names
// more, for step folders saved without a run session.
std::optional<std::string> FindResumeStep(MPI_Comm comm, const std::string& checkpoint_dir,
                                          const std::vector<std::string>& required_files = {});

// Collective over `comm`: takes the folder's lock for this process's life (a second run on the
// folder is refused), FindResumeStep, then every step folder newer than the one found (or every
// step folder, when none is found) is renamed to step-<N>.interrupted, logged: such folders hold
// some ranks' files of a killed run, and this run's saves must never complete them with files of
// its own. A job that will save into `checkpoint_dir` calls this instead.
std::optional<std::string> PrepareResume(MPI_Comm comm, const std::string& checkpoint_dir,
                                         const std::vector<std::string>& required_files = {});

// Collective over `comm`: for a run that starts at step 0 and will save into `checkpoint_dir`.
// Step folders already there belong to an earlier run, which this run's saves would overwrite or
// mix with: refused (ConfigError on every rank, naming them), unless `start_over`, when they are
// deleted (each logged). Call it once the run is known to start (after the Loader and the
// trainer's own state are built) and before the first Save: a run that fails to start then
// deletes nothing.
void PrepareFreshStart(MPI_Comm comm, const std::string& checkpoint_dir, bool start_over);

}  // namespace stoker
