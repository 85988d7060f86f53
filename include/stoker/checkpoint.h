// Checkpoint step folders, for a trainer that saves its own files beside the loader's
// (docs/checkpoint.md):
//
//   CHECKPOINT_DIR/step-<N>/loader/rank-<r>-of-<W>.ckpt   the loader's state (Loader::Save)
//                          /...                           the trainer's own files
//
// Loader::FindResumeStep, PrepareResume and PrepareFreshStart (stoker/loader.h) find, set aside
// and clear such folders; these name and describe one. Not collective; thread safe (no shared
// state); libstoker.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stoker {

// "step-<N>": the name of the step folder of global step `step` under a checkpoint folder.
std::string StepFolderName(uint64_t step);

// The world size whose rank files `step_dir`/loader/ holds (the run that saved it, or the target
// of `stoker reshard`), or nullopt when it holds none.
std::optional<uint64_t> StepFolderWorld(const std::string& step_dir);

}  // namespace stoker
