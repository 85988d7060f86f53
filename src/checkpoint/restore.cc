#include "checkpoint/restore.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "base/bytes.h"
#include "base/check.h"
#include "checkpoint/checkpoint_lock.h"
#include "checkpoint/checkpoint_step.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/corpus_record_file.h"
#include "checkpoint/interrupted_steps.h"
#include "order/partition.h"
#include "state/rescale.h"

namespace stoker {

std::optional<std::string> FindNewestCompleteStep(const mpi::Comm& comm,
                                                  const std::string& checkpoint_dir,
                                                  const std::vector<std::string>& required_files) {
  std::string chosen;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    if (const auto newest = NewestResumableStep(checkpoint_dir, required_files)) {
      chosen = newest->path;
    }
  });
  comm.Broadcast(&chosen, 0);
  if (chosen.empty()) return std::nullopt;
  return chosen;
}

void SetAsideStepsAfter(const mpi::Comm& comm, const std::string& checkpoint_dir,
                        const std::optional<std::string>& resume_dir) {
  LockCheckpointFolder(comm, checkpoint_dir);
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    if (resume_dir) CheckRoomForAStep(checkpoint_dir, *resume_dir);
    const uint64_t resume_step = resume_dir ? DescribeStepFolder(*resume_dir).step : 0;
    for (const StepFolder& folder : ListStepFolders(checkpoint_dir)) {
      if (folder.step <= resume_step) continue;
      const std::string aside = InterruptedStepName(folder.path);
      std::error_code ec;
      std::filesystem::rename(folder.path, aside, ec);
      STOKER_CHECK(!ec, IoError, "cannot move the interrupted step {} aside to {}: {}", folder.path,
                   aside, ec.message());
      spdlog::warn("moved the interrupted step {} aside to {}: this run saves its own", folder.path,
                   aside);
    }
    if (const size_t aside = ListInterruptedSteps(checkpoint_dir, false).size();
        aside > kInterruptedStepsKept) {
      spdlog::warn(
          "{} holds {} step folders set aside by resumes: `stoker steps {} --interrupted "
          "--remove` deletes all but the newest {}",
          checkpoint_dir, aside, checkpoint_dir, kInterruptedStepsKept);
    }
  });
}

void PrepareFreshStart(const mpi::Comm& comm, const std::string& checkpoint_dir, bool start_over) {
  LockCheckpointFolder(comm, checkpoint_dir);
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    const std::vector<StepFolder> steps = ListStepFolders(checkpoint_dir);
    if (steps.empty()) return;
    STOKER_CHECK(start_over, ConfigError,
                 "{} already holds {} step folders of an earlier run (step {} to {}, the newest "
                 "{}): this run would start at step 0 and overwrite them. Go on from them with "
                 "--resume, choose another --checkpoint-dir, or pass --start-over to delete them",
                 checkpoint_dir, steps.size(), steps.front().step, steps.back().step,
                 steps.back().path);
    for (const StepFolder& step : steps) {
      std::error_code ec;
      std::filesystem::remove_all(step.path, ec);
      STOKER_CHECK(!ec, IoError, "--start-over: cannot delete {}: {}", step.path, ec.message());
      spdlog::warn("--start-over: deleted {} of an earlier run", step.path);
    }
  });
}

void CheckIdentity(const CheckpointStep& step, const OrderIdentity& now,
                   const CorpusTable& corpus) {
  std::vector<std::string> differences = IdentityDifferences(step.identity, now);
  if (differences.empty()) return;
  if (step.identity.corpus_fingerprint != now.corpus_fingerprint) {
    differences.push_back(CorpusChangeNote(step.path, step.identity.corpus_fingerprint, corpus));
  }
  throw ConfigError(fmt::format(
      "checkpoint {} does not belong to this run; it was saved with another configuration "
      "(the weights, the number of ranks and the batch size may change at a resume; these may "
      "not):\n  {}",
      CheckpointPath(step.path, 0, step.world), fmt::join(differences, "\n  ")));
}

namespace {

// The step folder, checked by rank 0 (which also reads rank file 0 and checks it against `now`)
// and known to every rank; its identity is `now`'s, which rank file 0's matched. Rank 0 alone
// reads the corpus record: to name the files that differ in a refusal, and to warn of a record
// that could not (corrupt, or of another corpus) in a resume that goes on. FailTogether carries the
// refusal's text to every rank, which throw it together.
CheckpointStep OpenStepTogether(const mpi::Comm& comm, const std::string& step_dir,
                                const OrderIdentity& now, const CorpusTable& corpus) {
  ByteWriter out;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    const CheckpointStep step = OpenCheckpointStep(step_dir);
    CheckIdentity(step, now, corpus);
    if (const CorpusRecordCheck record = CheckCorpusRecord(step_dir, now.corpus_fingerprint);
        !record.problem.empty()) {
      spdlog::warn(
          "resuming from {}, whose corpus record cannot be used: {}. The resume goes on (the "
          "rank files name the corpus), but were the corpus to change, a resume from this step "
          "could not name the files that differ",
          step_dir, record.problem);
    }
    out.Put<uint64_t>(step.world);
    out.Put<uint64_t>(step.step);
    out.PutString(step.run);
    out.PutString(EncodeMixSchedule(step.schedule));
  });
  std::string bytes = out.Take();
  comm.Broadcast(&bytes, 0);
  ByteReader in(bytes);
  CheckpointStep step{.path = step_dir, .identity = now};
  step.world = in.Get<uint64_t>();
  step.step = in.Get<uint64_t>();
  step.run = in.GetString();
  step.schedule = DecodeMixSchedule(in.GetString(), now.datasets.size(), step_dir);
  step.weights = step.schedule.WeightsAt(step.step);
  return step;
}

}  // namespace

RestoredState RestoreRankState(const mpi::Comm& comm, const std::string& step_dir,
                               const OrderIdentity& now, const CorpusTable& corpus) {
  CheckpointStep saved = OpenStepTogether(comm, step_dir, now, corpus);
  const uint64_t old_world = saved.world;
  const auto world = static_cast<uint64_t>(comm.size());
  const auto rank = static_cast<uint64_t>(comm.rank());
  RankState state;
  if (old_world == world) {  // each rank's own file (schedules agree: SetWeights is collective)
    RankCheckpoint mine;
    mpi::FailTogether(comm, [&] { mine = ReadStepRank(saved, rank); });
    return {std::move(mine.state), std::move(mine.schedule)};
  }
  std::vector<std::string> to_each(world);
  mpi::FailTogether(comm, [&] {
    for (uint64_t k = rank; k < old_world; k += world) {
      const RankCheckpoint old = ReadStepRank(saved, k);
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
  return {std::move(state), std::move(saved.schedule)};
}

void CheckStateFits(const RankState& state, const PlannerConfig& planner,
                    const std::string& step_dir) {
  const auto bad = [&](const std::string& what) {
    throw DataError(fmt::format("checkpoint {} does not fit the corpus: {}", step_dir, what));
  };
  for (uint32_t d = 0; d < state.datasets; ++d) {
    uint64_t active = 0;
    for (uint64_t j = state.shards.begin; j < state.shards.end; ++j) {
      const uint64_t slice = SplitRange(planner.datasets[d].docs, planner.logical_shards, j).size();
      const ShardCursor& c = state.cursor(j, d);
      active += slice > 0;
      if ((slice > 0 && c.position >= slice) ||
          (slice == 0 && (c.position != 0 || c.offset != 0))) {
        bad(fmt::format("logical shard {} of dataset {} stands at position {} of {}", j,
                        planner.datasets[d].name, c.position, slice));
      }
    }
    if (state.interleave[d].index >= std::max<uint64_t>(active, 1)) {
      bad(fmt::format("the interleaving of dataset {} stands at {} of {} shards",
                      planner.datasets[d].name, state.interleave[d].index, active));
    }
  }
  for (const OpenUnit& open : state.lane.open) {
    const PlannerDataset& dataset = planner.datasets[open.unit.dataset];
    if (open.unit.dealt.unit >= dataset.docs) {
      bad(fmt::format("a document open in dataset {} is number {} of {}", dataset.name,
                      open.unit.dealt.unit, dataset.docs));
    }
  }
  for (size_t i = 0; i < state.unfinished.size(); ++i) {
    const UnfinishedDoc& u = state.unfinished[i];
    if (state.cursor(u.shard, u.dataset).offset == 0) bad("an unfinished document was not cut");
    for (size_t k = 0; k < i; ++k) {
      if (state.unfinished[k] == u) bad("an unfinished document is listed twice");
    }
  }
}

}  // namespace stoker
