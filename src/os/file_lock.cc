#include "os/file_lock.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/check.h"
#include "os/files.h"
#include "os/host.h"
#include "os/posix_io.h"

namespace stoker {

namespace {

// A holder that removes the file as another process opens it sends that process round again;
// more rounds than this in a row mean something else keeps replacing the file.
constexpr int kMaxRounds = 100;

// Who holds the lock, as a refused process names it.
std::string HolderDescription() {
  const std::time_t now = std::time(nullptr);
  char started[32] = {};
  std::strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  const char* job = std::getenv("SLURM_JOB_ID");
  return fmt::format("host {}, pid {}{}, started {}", HostName(), ::getpid(),
                     job != nullptr ? fmt::format(", Slurm job {}", job) : "", started);
}

// What the holder wrote, or that it has not written yet.
std::string ReadHolder(int fd, const std::string& path) {
  char text[512] = {};
  const ReadResult got = ReadAt(fd, 0, sizeof(text) - 1, text, path);
  std::string holder(text, got.bytes);
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder.empty() ? "it has not said who it is yet" : holder;
}

// Whether `path` still leads to the open file `fd` (a holder may have removed it meanwhile).
bool StillThere(int fd, const std::string& path) {
  struct stat open = {}, named = {};
  if (::fstat(fd, &open) != 0 || ::stat(path.c_str(), &named) != 0) return false;
  return open.st_dev == named.st_dev && open.st_ino == named.st_ino;
}

}  // namespace

FileLock FileLock::Take(const std::string& path, const LockWords& words) {
  for (int round = 0; round < kMaxRounds; ++round) {
    UniqueFd fd(posix::Open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    STOKER_CHECK(fd.get() >= 0, IoError,
                 "cannot {}: its lock file {} cannot be created ({}); the folder must be "
                 "writable",
                 words.action, path, std::strerror(errno));
    struct flock lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    if (::fcntl(fd.get(), F_OFD_SETLK, &lock) != 0) {
      const int error = errno;
      STOKER_CHECK(error != EAGAIN && error != EACCES, BusyError, "{} ({}): {}", words.in_use,
                   ReadHolder(fd.get(), path), words.advice);
      throw ConfigError(fmt::format(
          "cannot lock {} ({}): the file system refuses locks, so stoker cannot make sure that "
          "{}: mount it with locking (NFS without `nolock`, Lustre with `-o flock`) or choose "
          "storage that has it (docs/operations.md)",
          path, std::strerror(error), words.guarantee));
    }
    if (!StillThere(fd.get(), path)) continue;  // locked a file its holder has just removed
    try {
      if (::ftruncate(fd.get(), 0) == 0) WriteAll(fd.get(), HolderDescription() + "\n", path);
    } catch (const IoError& e) {
      spdlog::warn("{}: could not write who holds the lock ({}); it is held all the same", path,
                   e.what());
    }
    return FileLock(path, std::move(fd));
  }
  throw IoError(
      fmt::format("cannot {}: its lock file {} was replaced {} times while stoker took "
                  "the lock",
                  words.action, path, kMaxRounds));
}

void FileLock::RemoveAndRelease() {
  if (fd_.get() < 0) return;
  ::unlink(path_.c_str());  // a lock file that is already gone is no matter
  fd_ = UniqueFd();
}

}  // namespace stoker
