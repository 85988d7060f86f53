#include "checkpoint/reshard.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/check.h"
#include "checkpoint/checkpoint_lock.h"
#include "checkpoint/checkpoint_step.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/corpus_record_file.h"
#include "checkpoint/run_id.h"
#include "os/files.h"
#include "os/host.h"
#include "state/rescale.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

// The same world size: every rank file checked, then copied byte for byte, each atomically.
void CopyRankFiles(const CheckpointStep& step, const std::string& out_step_dir,
                   ReshardStats* stats) {
  for (uint64_t r = 0; r < step.world; ++r) {
    std::string bytes;
    ReadStepRank(step, r, &bytes);  // what is copied is what was checked
    WriteFileAtomically(CheckpointPath(out_step_dir, r, step.world), bytes);
    stats->bytes_written += bytes.size();
  }
}

// The new rank files are one save: they keep the run identity of the files they are made from, so
// that the new step says which run's training it holds (and resharding the same step twice gives
// the same files); a step of format 1 or 2, which has none, gets a new one.
void RescaleRankFiles(const CheckpointStep& step, uint64_t new_world,
                      const std::string& out_step_dir, ReshardStats* stats) {
  const OrderIdentity& identity = step.identity;
  const std::string run = step.run.empty() ? NewRunId() : step.run;
  std::vector<std::vector<RescalePart>> parts(new_world);
  for (uint64_t k = 0; k < step.world; ++k) {
    const RankCheckpoint old = ReadStepRank(step, k);
    for (RescalePart& part : SplitState(old.state, k, identity.logical_shards, new_world)) {
      parts[part.new_rank].push_back(std::move(part));
    }
  }
  for (uint64_t n = 0; n < new_world; ++n) {
    RankCheckpoint out{.identity = identity,
                       .weights = step.weights,
                       .schedule = step.schedule,
                       .world = new_world,
                       .rank = n,
                       .run = run};
    out.state = AssembleState(std::move(parts[n]), identity.datasets.size(),
                              identity.logical_shards, new_world, n);
    const std::string bytes = EncodeCheckpoint(out);
    WriteFileAtomically(CheckpointPath(out_step_dir, n, new_world), bytes);
    stats->bytes_written += bytes.size();
  }
}

// The corpus record, if the step has one (older steps have none), checked and copied byte for
// byte: it does not depend on the world size.
void CopyCorpusRecord(const std::string& step_dir, const std::string& out_step_dir,
                      ReshardStats* stats) {
  std::string bytes;
  if (!ReadCorpusRecord(step_dir, &bytes)) return;
  WriteFileAtomically(CorpusRecordPath(out_step_dir), bytes);
  stats->bytes_written += bytes.size();
}

// Copies every entry of `from` but loader/ into `to`, and syncs each regular file. Not through
// the I/O seam: these are the trainer's files, not stoker's.
void CopyOtherFiles(const std::string& from, const std::string& to) {
  for (const auto& entry : fs::directory_iterator(from)) {
    if (entry.path().filename() == "loader") continue;
    const fs::path target = fs::path(to) / entry.path().filename();
    std::error_code ec;
    fs::copy(entry.path(), target, fs::copy_options::recursive | fs::copy_options::copy_symlinks,
             ec);
    STOKER_CHECK(!ec, IoError, "cannot copy {} to {}: {}", entry.path().string(), target.string(),
                 ec.message());
    for (const auto& file : fs::recursive_directory_iterator(target, ec)) {
      if (file.is_regular_file() && !file.is_symlink()) SyncPath(file.path().string(), false);
    }
    if (fs::is_regular_file(fs::symlink_status(target))) SyncPath(target.string(), false);
  }
}

}  // namespace

ReshardStats ReshardCheckpoint(const std::string& step_dir, uint64_t new_world,
                               const std::string& out_step_dir) {
  const CheckpointStep step = OpenCheckpointStep(step_dir);
  STOKER_CHECK(new_world >= 1 && new_world <= step.identity.logical_shards, ConfigError,
               "--world-size {} is outside [1, {}] (the checkpoint's logical shards)", new_world,
               step.identity.logical_shards);
  for (uint64_t n = 0; n < new_world; ++n) {
    const std::string path = CheckpointPath(out_step_dir, n, new_world);
    STOKER_CHECK(!fs::exists(path), ConfigError,
                 "{} already exists: reshard never overwrites a checkpoint", path);
  }
  ReshardStats stats{.step = step.step, .old_world = step.world, .new_world = new_world};
  if (new_world == step.world) {
    CopyRankFiles(step, out_step_dir, &stats);
  } else {
    RescaleRankFiles(step, new_world, out_step_dir, &stats);
  }
  CopyCorpusRecord(step_dir, out_step_dir, &stats);
  return stats;
}

ReshardStats ReshardStepFolder(const std::string& step_dir, uint64_t new_world,
                               const std::string& out_step_dir) {
  fs::path out = fs::path(out_step_dir).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();
  std::error_code ec;
  STOKER_CHECK(!fs::exists(fs::symlink_status(out, ec)), ConfigError,
               "{} exists already: reshard makes a whole new step folder and never overwrites "
               "one; remove it or choose another",
               out.string());
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  STOKER_CHECK(!ec, IoError, "cannot create {}: {}", parent.string(), ec.message());
  LockCheckpointFolder(parent.string());  // no run saves into the folder while it changes
  const fs::path staging =
      parent / fmt::format(".{}.reshard-{}-{}", out.filename().string(), HostName(), ::getpid());
  fs::remove_all(staging, ec);  // a leftover of an earlier process of this host and pid
  try {
    ReshardStats stats = ReshardCheckpoint(step_dir, new_world, staging.string());
    CopyOtherFiles(step_dir, staging.string());
    SyncPath(staging.string(), true);
    // RENAME_NOREPLACE: an `out` made since the check above is never replaced.
    STOKER_CHECK(
        ::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, out.c_str(), RENAME_NOREPLACE) == 0,
        IoError, "cannot rename {} to {}: {}", staging.string(), out.string(),
        std::strerror(errno));
    SyncPath(parent.string(), true);
    return stats;
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace stoker
