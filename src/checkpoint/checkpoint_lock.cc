#include "checkpoint/checkpoint_lock.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>

#include "base/check.h"
#include "os/files.h"
#include "os/host.h"
#include "os/posix_io.h"

namespace stoker {

namespace {

namespace fs = std::filesystem;

constexpr char kLockName[] = ".stoker-lock";

// Who holds the lock, as the next run's refusal names it.
std::string HolderDescription() {
  const std::string host = HostName();
  const std::time_t now = std::time(nullptr);
  char started[32] = {};
  std::strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  const char* job = std::getenv("SLURM_JOB_ID");
  return fmt::format("host {}, pid {}{}, started {}", host, ::getpid(),
                     job != nullptr ? fmt::format(", Slurm job {}", job) : "", started);
}

// The description the holder wrote (empty if it has not yet, or the file is unreadable).
std::string ReadHolder(int fd) {
  char text[512] = {};
  const ReadResult got = ReadAt(fd, 0, sizeof(text) - 1, text, kLockName);
  std::string holder(text, got.bytes);
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder;
}

}  // namespace

void LockCheckpointFolder(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, int> held;  // canonical folder -> lock file
  std::error_code ec;
  fs::create_directories(dir, ec);
  STOKER_CHECK(!ec, IoError, "cannot create the checkpoint folder {}: {}", dir, ec.message());
  std::string key = fs::canonical(dir, ec).string();
  if (ec) key = fs::absolute(dir).lexically_normal().string();
  std::lock_guard<std::mutex> guard(mutex);
  if (held.count(key)) return;
  const std::string path = dir + "/" + kLockName;
  const int fd = posix::Open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  STOKER_CHECK(fd >= 0, IoError,
               "cannot save into {}: its lock file {} cannot be created ({}); the folder must "
               "be writable",
               dir, path, std::strerror(errno));
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &lock) != 0) {
    const int error = errno;
    const std::string holder = ReadHolder(fd);
    ::close(fd);
    STOKER_CHECK(error != EAGAIN && error != EACCES, ConfigError,
                 "checkpoint folder {} is in use by another run ({}): two runs saving into one "
                 "folder would mix their steps. Wait for it to end, or choose another "
                 "--checkpoint-dir",
                 dir, holder.empty() ? "it has not said who it is yet" : holder);
    throw ConfigError(fmt::format(
        "cannot lock {} ({}): the file system refuses locks, so stoker cannot make sure that "
        "no other run saves into this folder. Mount it with locking (NFS without `nolock`, "
        "Lustre with `-o flock`) or choose a --checkpoint-dir on such storage "
        "(docs/operations.md)",
        path, std::strerror(error)));
  }
  held[key] = fd;  // held from here on, whatever happens to the description below
  try {
    if (::ftruncate(fd, 0) == 0) WriteAll(fd, HolderDescription() + "\n", path);
  } catch (const IoError& e) {
    spdlog::warn("{}: could not write who holds the lock ({}); it is held all the same", path,
                 e.what());
  }
}

void LockCheckpointFolder(const mpi::Comm& comm, const std::string& checkpoint_dir) {
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) LockCheckpointFolder(checkpoint_dir);
  });
}

}  // namespace stoker
