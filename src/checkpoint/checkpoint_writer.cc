#include "checkpoint/checkpoint_writer.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "checkpoint/checkpoint_store.h"
#include "os/files.h"

namespace stoker {

CheckpointWriter::CheckpointWriter() : thread_([this] { Run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  try {
    Wait();
  } catch (const std::exception& e) {
    spdlog::error("the last loader checkpoint was not written: {}", e.what());
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointWriter::Submit(std::string path, RankCheckpoint snapshot,
                              std::optional<FirstFile> first) {
  Wait();
  {
    std::lock_guard lock(mutex_);
    job_ = Job{std::move(path), std::move(snapshot), std::move(first)};
  }
  changed_.notify_all();
}

void CheckpointWriter::Wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !job_ && !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

bool CheckpointWriter::WaitFor(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] { return !job_ && !busy_; })) return false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return true;
}

// The same bytes as the last save's first file: a second name of that file, where the file
// system makes one, instead of its bytes again (a corpus record of a million shards is 20 MB).
void CheckpointWriter::WriteFirstFile(const FirstFile& first) {
  if (first.bytes == last_first_.bytes && !last_first_.path.empty()) {
    std::error_code ignored;  // a folder that cannot be made fails the write below, named
    std::filesystem::create_directories(std::filesystem::path(first.path).parent_path(), ignored);
    if (LinkFile(last_first_.path, first.path)) {
      last_first_.path = first.path;
      return;
    }
  }
  WriteFileAtomically(first.path, *first.bytes);
  last_first_ = first;
}

void CheckpointWriter::Run() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || job_.has_value(); });
    if (!job_) return;  // stopping with nothing left to write
    Job job = std::move(*job_);
    job_.reset();
    busy_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      if (job.first) WriteFirstFile(*job.first);
      WriteCheckpointFile(job.path, job.snapshot);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (error) error_ = error;
    changed_.notify_all();
  }
}

}  // namespace stoker
