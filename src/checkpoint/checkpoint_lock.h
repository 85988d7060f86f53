// One run saves into a checkpoint folder at a time. Two runs on one --checkpoint-dir (a job
// submitted twice) would set aside or overwrite each other's step folders and leave steps whose
// rank files come from two runs; the second is refused instead, at start-up, naming the first.
//
// LockCheckpointFolder is collective: rank 0 takes the lock on CHECKPOINT_DIR/.stoker-lock
// (os/file_lock.h: released by the kernel when the process dies, however it dies, so a killed job
// never leaves a stale lock; the holder writes who it is there) and holds it until the process
// ends. Locking the same folder again in the same process is a no-op. Where the file system
// refuses locks, the run is refused saying so (docs/operations.md).
#pragma once

#include <string>

#include "mpi/comm.h"

namespace stoker {

// Collective. ConfigError on every rank when another process holds the folder's lock (naming
// the folder and the holder) or the file system cannot lock; IoError when the lock file cannot
// be created.
void LockCheckpointFolder(const mpi::Comm& comm, const std::string& checkpoint_dir);

// The same in this process alone (rank 0's part; `stoker reshard` for the folder it writes
// into). Throws as above.
void LockCheckpointFolder(const std::string& checkpoint_dir);

}  // namespace stoker
