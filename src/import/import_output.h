// The dataset folder an import writes, DIR/NAME, and what lies beside it while it does (names
// starting with '.', which discovery ignores):
//
//   DIR/.NAME.lock      the lock of the import that writes DIR/NAME (os/file_lock.h), taken by
//                       rank 0 before anything is touched and held to the end; a second import
//                       into DIR/NAME is refused, naming the holder (host, pid, Slurm job). The
//                       holder removes the file as it ends; the kernel releases the lock of one
//                       that dies.
//   DIR/.NAME.import    the staging folder the ranks write the shards into, renamed to DIR/NAME
//                       when every rank is done (a failed import removes it).
//   DIR/.NAME.replaced  with --force, the old DIR/NAME between two renames.
//
// An import that died (killed, its node lost) leaves its staging folder behind, and maybe
// DIR/.NAME.replaced beside the new DIR/NAME. They are leftovers once no process holds the lock:
// its owner is gone. Only the holder of the lock removes them, naming each: the next import into
// DIR/NAME, or `stoker import --remove-leftovers DIR/NAME`. DIR/.NAME.replaced without DIR/NAME
// is the only copy of a dataset: it is never removed, and the import is refused until it is
// moved back.
//
// Rank 0's part of an import, not collective (import/import.cc makes the collectives). Not
// thread safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "os/file_lock.h"

namespace stoker {

class ImportOutput {
 public:
  explicit ImportOutput(const std::string& out);  // nothing touched yet
  ~ImportOutput();                                // releases the lock (and removes its file)
  ImportOutput(const ImportOutput&) = delete;
  ImportOutput& operator=(const ImportOutput&) = delete;

  const std::string& staging() const { return staging_; }

  // Takes the lock. ConfigError when another process holds it, naming the holder and ending
  // with `advice`; IoError when the lock file cannot be created, ConfigError when the file
  // system refuses locks.
  void Lock(const std::string& advice);
  // With the lock: removes the leftovers of imports into DIR/NAME that did not finish and
  // returns each as "PATH (SIZE)"; ConfigError (nothing removed) when DIR/.NAME.replaced holds
  // the only copy of the dataset.
  std::vector<std::string> RemoveLeftovers();
  // With the lock: refuses an existing, non-empty DIR/NAME unless `force` and inputs inside
  // DIR/NAME; removes leftovers (a warning names each); makes the empty staging folder.
  void Prepare(bool force, const std::vector<std::string>& inputs);
  // With the lock, every rank's shards written: the staging folder becomes DIR/NAME (an old one
  // is replaced).
  void Commit();
  // With the lock: removes the staging folder of a failed import (a warning when it cannot).
  void RemoveStaging();

 private:
  std::string out_, lock_path_, staging_, replaced_;
  std::optional<FileLock> lock_;
};

}  // namespace stoker
