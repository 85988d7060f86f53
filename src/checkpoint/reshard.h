// Offline resharding: rewrites a W-rank loader checkpoint step folder into a W'-rank one, in one
// process with no MPI communication (it can run on a login node). It goes through the same
// functions as the MPI rescale at a resume (state/rescale.h), so resuming from its output on W'
// ranks gives the same stream, bit for bit, as resuming from the original on W' ranks.
//
// To the world size the checkpoint already has, the rank files are checked and copied byte for
// byte: a resume on the same world size does not rescale (a rescale starts a new interleaving),
// so a rewrite would not match resuming from the original.
#pragma once

#include <cstdint>
#include <string>

namespace stoker {

struct ReshardStats {
  uint64_t step = 0;
  uint64_t old_world = 0;
  uint64_t new_world = 0;
  uint64_t bytes_written = 0;
};

// Reads every rank file of `step_dir` (a complete, consistent CheckpointStep) and writes
// out_step_dir/loader/rank-<r>-of-<new_world>.ckpt for every new rank, and a copy of the step's
// corpus record (corpus_record_file.h) when it has one. Refuses new_world = 0 or above the
// checkpoint's logical-shard count (ConfigError), and an existing rank file in out_step_dir
// (ConfigError: never overwrite a checkpoint).
ReshardStats ReshardCheckpoint(const std::string& step_dir, uint64_t new_world,
                               const std::string& out_step_dir);

// A whole new step folder: ReshardCheckpoint into a hidden folder beside `out_step_dir`, every
// entry of `step_dir` other than loader/ (a trainer's own files: model, optimizer, ...) copied
// beside it and synced, then published as `out_step_dir` in one rename, so that a process killed
// midway leaves no half step folder under a step-<N> name. Refuses an `out_step_dir` that
// exists (ConfigError). The trainer's files are copied unchanged: right for a data-parallel
// trainer whose files do not depend on the world size.
ReshardStats ReshardStepFolder(const std::string& step_dir, uint64_t new_world,
                               const std::string& out_step_dir);

}  // namespace stoker
