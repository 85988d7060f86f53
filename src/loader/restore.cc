#include "loader/restore.h"

#include <spdlog/spdlog.h>

#include <cstring>

#include "base/bytes.h"
#include "base/check.h"
#include "core/rescale.h"
#include "io/checkpoint_store.h"

namespace stoker {

std::optional<std::string> FindNewestCompleteStep(const mpi::Comm& comm,
                                                  const std::string& checkpoint_dir) {
  std::string chosen;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    const std::vector<StepFolder> steps = ListStepFolders(checkpoint_dir);
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      if (it->complete()) {
        chosen = it->path;
        return;
      }
      spdlog::warn("passing over incomplete checkpoint {} (a save was interrupted?): {}", it->path,
                   fmt::join(it->problems, "; "));
    }
  });
  comm.Broadcast(&chosen, 0);
  if (chosen.empty()) return std::nullopt;
  return chosen;
}

void CheckIdentity(const RankCheckpoint& saved, const OrderIdentity& now, const std::string& path) {
  const std::vector<std::string> differences = IdentityDifferences(saved.identity, now);
  if (differences.empty()) return;
  throw ConfigError(fmt::format(
      "checkpoint {} does not belong to this run; it was saved with another configuration "
      "(only the weights may change at a resume):\n  {}",
      path, fmt::join(differences, "\n  ")));
}

namespace {

// The world size the step folder was saved by, checked by rank 0 and known to every rank.
uint64_t SavedWorld(const mpi::Comm& comm, const std::string& step_dir) {
  uint64_t world = 0;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    const StepFolder folder = DescribeStepFolder(step_dir);
    STOKER_CHECK(folder.complete(), ConfigError, "checkpoint {} is incomplete: {}", step_dir,
                 fmt::join(folder.problems, "; "));
    world = *folder.world;
  });
  std::string bytes(reinterpret_cast<const char*>(&world), sizeof(world));
  comm.Broadcast(&bytes, 0);
  std::memcpy(&world, bytes.data(), sizeof(world));
  return world;
}

RankCheckpoint ReadChecked(const std::string& path, const OrderIdentity& now, uint64_t world) {
  RankCheckpoint saved = ReadCheckpointFile(path);
  CheckIdentity(saved, now, path);
  STOKER_CHECK(saved.world == world, DataError, "{}: saved by a world of {}, not {}", path,
               saved.world, world);
  return saved;
}

}  // namespace

RankState RestoreRankState(const mpi::Comm& comm, const std::string& step_dir,
                           const OrderIdentity& now) {
  const uint64_t old_world = SavedWorld(comm, step_dir);
  const auto world = static_cast<uint64_t>(comm.size());
  const auto rank = static_cast<uint64_t>(comm.rank());
  RankState state;
  if (old_world == world) {
    mpi::FailTogether(comm, [&] {
      state = ReadChecked(CheckpointPath(step_dir, rank, world), now, world).state;
    });
    return state;
  }
  std::vector<std::string> to_each(world);
  mpi::FailTogether(comm, [&] {
    for (uint64_t k = rank; k < old_world; k += world) {
      const RankCheckpoint old = ReadChecked(CheckpointPath(step_dir, k, old_world), now, old_world);
      const auto parts = SplitState(old.state, k, now.logical_shards, world);
      for (uint64_t n = 0; n < world; ++n) {
        ByteWriter framed;
        framed.PutString(EncodeRescalePart(parts[n]));
        to_each[n] += framed.bytes();
      }
    }
  });
  const std::vector<std::string> received = comm.AllToAll(to_each);
  mpi::FailTogether(comm, [&] {
    std::vector<RescalePart> parts;
    for (const std::string& bytes : received) {
      ByteReader in(bytes);
      while (!in.done()) parts.push_back(DecodeRescalePart(in.GetString()));
    }
    STOKER_CHECK(parts.size() == old_world, DataError, "rank {} received {} parts of {} rank files",
                 rank, parts.size(), old_world);
    state = AssembleState(std::move(parts), now.datasets.size(), now.logical_shards, world, rank);
  });
  spdlog::info("resumed from {}: step {}, rescaled from {} to {} ranks", step_dir, state.step,
               old_world, world);
  return state;
}

}  // namespace stoker
