// CheckpointWriter: writes checkpoint files on a background thread, so that the trainer's thread
// only pays for a copy of the state.
//
// Submit() hands over a snapshot and returns at once; the file is encoded and written atomically
// (temporary file, fsync, rename, fsync of the folder) on the writer's thread. One write is in
// flight at a time: a Submit() or Wait() first waits for the previous write and rethrows its
// error (an IoError naming the file), so a failed save is never silent. The destructor waits for
// the last write and logs its error. Submit/Wait from one thread (the trainer's).
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "state/checkpoint_codec.h"

namespace stoker {

class CheckpointWriter {
 public:
  CheckpointWriter();
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // A file written before the rank file, the same way: rank 0's corpus record
  // (corpus_record_file.h), so that a step whose rank file 0 is there has its record too. The
  // bytes are shared, not copied: they are the same at every save, and a save after the first
  // makes the file a hard link of the last one written (os/files.h, LinkFile) where it can: one
  // link, not the bytes again, whatever the size of the corpus.
  struct FirstFile {
    std::string path;
    std::shared_ptr<const std::string> bytes;
  };

  void Submit(std::string path, RankCheckpoint snapshot, std::optional<FirstFile> first = {});
  // Waits until the last submitted file is written; rethrows its error.
  void Wait();
  // Wait(), waiting at most `timeout`: false when the file is still being written then.
  bool WaitFor(std::chrono::milliseconds timeout);

 private:
  struct Job {
    std::string path;
    RankCheckpoint snapshot;
    std::optional<FirstFile> first;
  };
  void Run();
  void WriteFirstFile(const FirstFile& first);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<Job> job_;  // submitted, not yet written
  bool busy_ = false;       // a job is being written
  bool stopping_ = false;
  std::exception_ptr error_;
  FirstFile last_first_;  // the last first file written or linked (the writer's thread)
  std::thread thread_;
};

}  // namespace stoker
