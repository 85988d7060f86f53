// ReadQueue: many reads of stoker's files in flight at once, so that storage that is not in the
// page cache is read at the rate of its queue depth, not at the rate of one read at a time.
//
// Two engines do the same thing:
//   uring    io_uring (liburing): one system call starts every queued read; reads the page
//            cache holds finish at once, the others asynchronously in the kernel.
//   threads  a pool of reader threads (started as needed, up to the depth). A read is first tried
//            on the caller's thread without blocking (preadv2 with RWF_NOWAIT): one the page cache
//            holds never waits for a thread; the others go to the pool.
// MakeReadQueue(kAuto) takes io_uring when the kernel allows it (it may be disabled:
// /proc/sys/kernel/io_uring_disabled, or a container's seccomp profile), else threads, and says
// why in fallback_reason().
//
// A read behaves as ReadAt (os/files.h): it retries interrupted and short reads and stops early
// only where the file ends or a read fails (its errno in the result). Every read consults the
// I/O seam once, as one pread of its whole range (os/posix_io.h): a rule that fails a pread fails
// the read with its errno, a delay rule delays Submit.
//
// Owned by one thread (Submit, Flush and Reap from the same thread); the engines' own threads
// never call back into the caller. Destroying the queue waits for the reads being done (the
// pool's reads no thread has started yet are dropped): their buffers may go after it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "os/files.h"
#include "stoker/io_engine.h"

namespace stoker {

// Reads through O_DIRECT (ReadRequest::direct_fd) cover whole aligned stretches of the file, read
// into memory of the queue's own (aligned to kDirectAlign, which covers every alignment
// DirectAlignment gives): kept between reads up to kDirectKeep bytes per read in flight.
inline constexpr uint64_t kDirectAlign = 4096;
inline constexpr uint64_t kDirectKeep = 64 << 10;

struct ReadRequest {
  int fd = -1;
  // The same file opened with O_DIRECT, or -1. With one, the read goes to storage through it,
  // bypassing the page cache: the stretch around it aligned to `direct_align` (a power of two
  // up to kDirectAlign: os/files.h, DirectAlignment), into memory of the queue's own
  // (kDirectKeep), then copied. A file system refusing O_DIRECT reads
  // (EINVAL) gets them through `fd`. (No look into the page cache first: a read with RWF_NOWAIT
  // that misses starts the kernel's own read of those pages, which would read them twice.)
  int direct_fd = -1;
  uint32_t direct_align = kDirectAlign;
  uint64_t offset = 0;  // byte offset in the file
  uint64_t bytes = 0;
  void* out = nullptr;                // bytes of room, untouched until the read is reaped
  const std::string* path = nullptr;  // the file's path, for the seam; must outlive the read
  uint64_t tag = 0;                   // the caller's, handed back with the result
};

struct ReadDone {
  uint64_t tag = 0;
  ReadResult result;
};

class ReadQueue {
 public:
  virtual ~ReadQueue() = default;

  // Queues a read; it may start at once. Requires in_flight() < depth().
  virtual void Submit(const ReadRequest& request) = 0;
  // Starts every queued read without waiting for any.
  virtual void Flush() = 0;
  // Starts every queued read and appends every finished one to `done`, in no particular order.
  // With `wait`, first waits until at least one has finished (returns at once when none is in
  // flight).
  virtual void Reap(std::vector<ReadDone>* done, bool wait) = 0;

  uint32_t depth() const { return depth_; }
  uint32_t in_flight() const { return in_flight_; }  // submitted and not yet reaped
  IoEngine engine() const { return engine_; }
  // Why kAuto did not get io_uring (empty when it did, or when the engine was named).
  const std::string& fallback_reason() const { return fallback_reason_; }

 protected:
  ReadQueue(IoEngine engine, uint32_t depth) : depth_(depth), engine_(engine) {}
  uint32_t depth_;
  uint32_t in_flight_ = 0;

 private:
  friend std::unique_ptr<ReadQueue> MakeReadQueue(IoEngine engine, uint32_t depth);
  IoEngine engine_;
  std::string fallback_reason_;
};

// A queue of `depth` reads in flight (at least 1). kUring when io_uring cannot be set up:
// IoError saying why.
std::unique_ptr<ReadQueue> MakeReadQueue(IoEngine engine, uint32_t depth);

}  // namespace stoker
