#include "checkpoint/checkpoint_lock.h"

#include <filesystem>
#include <map>
#include <mutex>

#include "base/check.h"
#include "os/file_lock.h"

namespace stoker {

namespace {

namespace fs = std::filesystem;

constexpr char kLockName[] = ".stoker-lock";

}  // namespace

void LockCheckpointFolder(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, FileLock> held;  // canonical folder -> its lock
  std::error_code ec;
  fs::create_directories(dir, ec);
  STOKER_CHECK(!ec, IoError, "cannot create the checkpoint folder {}: {}", dir, ec.message());
  std::string key = fs::canonical(dir, ec).string();
  if (ec) key = fs::absolute(dir).lexically_normal().string();
  std::lock_guard<std::mutex> guard(mutex);
  if (held.count(key)) return;
  const LockWords words{
      .action = fmt::format("save into {}", dir),
      .in_use = fmt::format("checkpoint folder {} is in use by another run", dir),
      .advice =
          "two runs saving into one folder would mix their steps. Wait for it to end, or "
          "choose another --checkpoint-dir",
      .guarantee = "no other run saves into this folder"};
  held.emplace(key, FileLock::Take(dir + "/" + kLockName, words));  // held until the process ends
}

void LockCheckpointFolder(const mpi::Comm& comm, const std::string& checkpoint_dir) {
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) LockCheckpointFolder(checkpoint_dir);
  });
}

}  // namespace stoker
