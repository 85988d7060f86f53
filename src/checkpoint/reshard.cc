#include "checkpoint/reshard.h"

#include <filesystem>

#include "base/check.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/restore.h"
#include "core/partition.h"
#include "core/rescale.h"

namespace stoker {

ReshardStats ReshardCheckpoint(const std::string& step_dir, uint64_t new_world,
                               const std::string& out_step_dir) {
  const StepFolder folder = DescribeStepFolder(step_dir);
  STOKER_CHECK(folder.complete(), ConfigError, "checkpoint {} is incomplete: {}", step_dir,
               fmt::join(folder.problems, "; "));
  const uint64_t old_world = *folder.world;
  std::vector<RankCheckpoint> old;
  for (uint64_t k = 0; k < old_world; ++k) {
    old.push_back(ReadCheckpointFile(CheckpointPath(step_dir, k, old_world)));
    const std::string path = CheckpointPath(step_dir, k, old_world);
    CheckIdentity(old.back(), old.front().identity, path);
    STOKER_CHECK(old.back().state.step == old.front().state.step, DataError,
                 "{}: holds step {}, but rank file 0 holds step {}", path, old.back().state.step,
                 old.front().state.step);
    const IndexRange owned = OwnedLogicalShards(old.back().identity.logical_shards, old_world, k);
    STOKER_CHECK(old.back().state.shards == owned, DataError,
                 "{}: holds logical shards [{}, {}), but rank {} of {} owns [{}, {})", path,
                 old.back().state.shards.begin, old.back().state.shards.end, k, old_world,
                 owned.begin, owned.end);
  }
  const OrderIdentity& identity = old.front().identity;
  STOKER_CHECK(new_world >= 1 && new_world <= identity.logical_shards, ConfigError,
               "--world-size {} is outside [1, {}] (the checkpoint's logical shards)", new_world,
               identity.logical_shards);
  for (uint64_t n = 0; n < new_world; ++n) {
    const std::string path = CheckpointPath(out_step_dir, n, new_world);
    STOKER_CHECK(!std::filesystem::exists(path), ConfigError,
                 "{} already exists: reshard never overwrites a checkpoint", path);
  }
  ReshardStats stats{
      .step = old.front().state.step, .old_world = old_world, .new_world = new_world};
  if (new_world == old_world) {  // nothing to move: the same files, so the same stream
    for (uint64_t n = 0; n < new_world; ++n) {
      const std::string path = CheckpointPath(out_step_dir, n, new_world);
      WriteCheckpointFile(path, old[n]);
      stats.bytes_written += std::filesystem::file_size(path);
    }
    return stats;
  }
  std::vector<std::vector<RescalePart>> parts(new_world);
  for (uint64_t k = 0; k < old_world; ++k) {
    for (RescalePart& part : SplitState(old[k].state, k, identity.logical_shards, new_world)) {
      parts[part.new_rank].push_back(std::move(part));
    }
  }
  for (uint64_t n = 0; n < new_world; ++n) {
    RankCheckpoint out{
        .identity = identity, .weights = old.front().weights, .world = new_world, .rank = n};
    out.state = AssembleState(std::move(parts[n]), identity.datasets.size(),
                              identity.logical_shards, new_world, n);
    const std::string path = CheckpointPath(out_step_dir, n, new_world);
    WriteCheckpointFile(path, out);
    stats.bytes_written += std::filesystem::file_size(path);
  }
  return stats;
}

}  // namespace stoker
