// CheckpointWriter: writes checkpoint files on a background thread, so that the trainer's thread
// only pays for a copy of the state.
//
// Submit() hands over a snapshot and returns at once; the file is encoded and written atomically
// (temporary file, fsync, rename, fsync of the folder) on the writer's thread. One write is in
// flight at a time: a Submit() or Wait() first waits for the previous write and rethrows its
// error (an IoError naming the file), so a failed save is never silent. The destructor waits for
// the last write and logs its error. Submit/Wait from one thread (the trainer's).
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/checkpoint_codec.h"

namespace stoker {

class CheckpointWriter {
 public:
  CheckpointWriter();
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void Submit(std::string path, RankCheckpoint snapshot);
  // Waits until the last submitted file is written; rethrows its error.
  void Wait();

 private:
  struct Job {
    std::string path;
    RankCheckpoint snapshot;
  };
  void Run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<Job> job_;  // submitted, not yet written
  bool busy_ = false;       // a job is being written
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace stoker
