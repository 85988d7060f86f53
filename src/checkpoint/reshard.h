// Offline resharding: rewrites a W-rank loader checkpoint step folder into a W'-rank one, in one
// process with no MPI communication (it can run on a login node). It goes through the same
// functions as the MPI rescale at a resume (core/rescale.h), so resuming from its output on W'
// ranks gives the same stream, bit for bit, as resuming from the original on W' ranks.
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

// Reads every rank file of `step_dir` (which must be complete and consistent), and writes
// out_step_dir/loader/rank-<r>-of-<new_world>.ckpt for every new rank. Refuses new_world = 0 or
// above the checkpoint's logical-shard count (ConfigError), and an existing rank file in
// out_step_dir (ConfigError: never overwrite a checkpoint).
ReshardStats ReshardCheckpoint(const std::string& step_dir, uint64_t new_world,
                               const std::string& out_step_dir);

}  // namespace stoker
