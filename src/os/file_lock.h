// FileLock: one process at a time on something stoker writes (a checkpoint folder, the dataset
// folder of an import), held for as long as the process needs it and released by the kernel
// when the process dies, however it dies: a killed job never leaves a stale lock.
//
// It is an open-file-description lock (fcntl F_OFD_SETLK, a write lock on the whole file) on a
// lock file, created when missing. The holder writes who it is into the file (host, pid, Slurm
// job, start time); a process refused the lock reads that for its message. A holder may remove
// the lock file as it lets go (RemoveAndRelease): a process that opened the old file meanwhile
// sees, once it has the lock, that the path no longer leads to the file it locked, and starts
// again on the new one, so two processes never both hold a lock on one path.
//
// Where the lock works: local file systems; NFS (v3 through the lock manager, v4 natively; not
// with the `nolock` mount option: over NFS the server releases the lock when the dead client's
// lease ends), Lustre mounted with `flock` (with `localflock` the lock only sees processes on the
// same node), GPFS, BeeGFS. Where the file system refuses locks (ENOLCK, EOPNOTSUPP, ...), Take
// refuses, saying so (docs/operations.md). Two FileLocks of one process on the same file exclude
// each other too. Not thread safe: one owner.
#pragma once

#include <string>

#include "os/unique_fd.h"

namespace stoker {

// How the errors of FileLock::Take name what the lock guards.
struct LockWords {
  std::string action;     // "save into ckpt": "cannot save into ckpt: its lock file ..."
  std::string in_use;     // "checkpoint folder ckpt is in use by another run", before the holder
  std::string advice;     // after the holder: "Wait for it to end, or choose another ..."
  std::string guarantee;  // "no other run saves into this folder", which needs locks
};

class FileLock {
 public:
  // Takes the lock on `path` (creating the file) without waiting. ConfigError when another
  // process holds it: "IN_USE (host node17, pid 4242, Slurm job 991, started 2026-12-01 16:18:47
  // UTC): ADVICE", the holder as it wrote itself; IoError when the file cannot be created;
  // ConfigError when the file system refuses locks.
  static FileLock Take(const std::string& path, const LockWords& words);

  FileLock(FileLock&&) = default;
  FileLock& operator=(FileLock&&) = default;
  ~FileLock() = default;  // releases the lock; the file stays

  const std::string& path() const { return path_; }
  // Removes the lock file, then releases the lock. Never throws.
  void RemoveAndRelease();

 private:
  FileLock(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

  std::string path_;
  UniqueFd fd_;
};

}  // namespace stoker
