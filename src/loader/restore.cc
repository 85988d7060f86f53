#include "loader/restore.h"

#include <spdlog/spdlog.h>

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
    // Starting over would repeat every token already trained on: refuse instead.
    STOKER_CHECK(steps.empty(), ConfigError,
                 "{} holds {} step folders but none is complete: refusing to start over from "
                 "step 0 (move the folder away to start afresh)",
                 checkpoint_dir, steps.size());
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

RankCheckpoint ReadChecked(const std::string& path, const OrderIdentity& now, uint64_t world);

// The world size the step folder was saved by and the weights it was saved with, checked by rank
// 0 (which also reads rank file 0) and known to every rank.
std::pair<uint64_t, std::vector<double>> SavedWorldAndWeights(const mpi::Comm& comm,
                                                              const std::string& step_dir,
                                                              const OrderIdentity& now) {
  ByteWriter out;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    const StepFolder folder = DescribeStepFolder(step_dir);
    STOKER_CHECK(folder.complete(), ConfigError, "checkpoint {} is incomplete: {}", step_dir,
                 fmt::join(folder.problems, "; "));
    const RankCheckpoint first = ReadChecked(CheckpointPath(step_dir, 0, *folder.world), now,
                                             *folder.world);
    out.Put<uint64_t>(*folder.world);
    out.Put<uint64_t>(first.weights.size());
    for (double w : first.weights) out.Put(w);
  });
  std::string bytes = out.Take();
  comm.Broadcast(&bytes, 0);
  ByteReader in(bytes);
  const auto world = in.Get<uint64_t>();
  std::vector<double> weights(in.Get<uint64_t>());
  for (double& w : weights) w = in.Get<double>();
  return {world, weights};
}

RankCheckpoint ReadChecked(const std::string& path, const OrderIdentity& now, uint64_t world) {
  RankCheckpoint saved = ReadCheckpointFile(path);
  CheckIdentity(saved, now, path);
  STOKER_CHECK(saved.world == world, DataError, "{}: saved by a world of {}, not {}", path,
               saved.world, world);
  return saved;
}

}  // namespace

RestoredState RestoreRankState(const mpi::Comm& comm, const std::string& step_dir,
                               const OrderIdentity& now) {
  auto [old_world, saved_weights] = SavedWorldAndWeights(comm, step_dir, now);
  const auto world = static_cast<uint64_t>(comm.size());
  const auto rank = static_cast<uint64_t>(comm.rank());
  RankState state;
  if (old_world == world) {
    mpi::FailTogether(comm, [&] {
      state = ReadChecked(CheckpointPath(step_dir, rank, world), now, world).state;
    });
    return {std::move(state), std::move(saved_weights)};
  }
  std::vector<std::string> to_each(world);
  mpi::FailTogether(comm, [&] {
    for (uint64_t k = rank; k < old_world; k += world) {
      const RankCheckpoint old = ReadChecked(CheckpointPath(step_dir, k, old_world), now, old_world);
      for (const RescalePart& part : SplitState(old.state, k, now.logical_shards, world)) {
        ByteWriter framed;
        framed.PutString(EncodeRescalePart(part));
        to_each[part.new_rank] += framed.bytes();
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
    state = AssembleState(std::move(parts), now.datasets.size(), now.logical_shards, world, rank);
  });
  spdlog::info("resumed from {}: step {}, rescaled from {} to {} ranks", step_dir, state.step,
               old_world, world);
  return {std::move(state), std::move(saved_weights)};
}

}  // namespace stoker
