#include "checkpoint/checkpoint_step.h"

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

}  // namespace

CheckpointStep OpenCheckpointStep(const std::string& step_dir,
                                  const std::vector<std::string>& required_files) {
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
  STOKER_CHECK(c.state.step == step.step, DataError,
               "{}: holds step {}, but rank file 0 of the same folder holds step {}", path,
               c.state.step, step.step);
  CheckRankAlone(c, rank, path);
  return c;
}

}  // namespace stoker
