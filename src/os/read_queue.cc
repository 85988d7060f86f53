#include "os/read_queue.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "base/check.h"
#include "os/posix_io.h"

#ifdef STOKER_HAVE_URING
#include <liburing.h>
#endif

namespace stoker {

std::string_view IoEngineName(IoEngine engine) {
  switch (engine) {
    case IoEngine::kAuto:
      return "auto";
    case IoEngine::kUring:
      return "uring";
    case IoEngine::kThreads:
      return "threads";
  }
  return "?";
}

IoEngine ParseIoEngine(std::string_view text) {
  for (IoEngine engine : {IoEngine::kAuto, IoEngine::kUring, IoEngine::kThreads}) {
    if (text == IoEngineName(engine)) return engine;
  }
  throw ConfigError(fmt::format("unknown I/O engine '{}': expected auto, uring or threads", text));
}

std::string_view DirectIoName(DirectIo mode) {
  switch (mode) {
    case DirectIo::kAuto:
      return "auto";
    case DirectIo::kOn:
      return "on";
    case DirectIo::kOff:
      return "off";
  }
  return "?";
}

DirectIo ParseDirectIo(std::string_view text) {
  for (DirectIo mode : {DirectIo::kAuto, DirectIo::kOn, DirectIo::kOff}) {
    if (text == DirectIoName(mode)) return mode;
  }
  throw ConfigError(fmt::format("unknown --direct-io '{}': expected auto, on or off", text));
}

namespace {

// The seam's one look at a read (as a pread of its whole range): true, errno set, to fail it.
bool Faulted(const ReadRequest& r) {
  return internal::Faulted(IoCall::kPread, *r.path, r.offset, r.bytes);
}

// Reads what the page cache holds of `r`, never blocking on storage. True when the read is done
// (complete, or the file ends); false when the rest must wait for storage, and then *supported is
// false if the system cannot read without blocking at all (RWF_NOWAIT refused).
bool ReadWithoutWaiting(const ReadRequest& r, ReadResult* result, bool* supported) {
  auto* out = static_cast<char*>(r.out);
  while (result->bytes < r.bytes) {
    iovec part{out + result->bytes, r.bytes - result->bytes};
    const ssize_t n =
        ::preadv2(r.fd, &part, 1, static_cast<off_t>(r.offset + result->bytes), RWF_NOWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *supported = errno == EAGAIN;  // EOPNOTSUPP, EINVAL: not here; real errors: the pool's read
      return false;
    }
    if (n == 0) return true;
    result->bytes += static_cast<uint64_t>(n);
  }
  return true;
}

// A read's aligned copy for O_DIRECT (ReadRequest::direct_fd): the aligned stretch of the file
// that covers the rest of a read, read into memory of its own and copied into the read's buffer.
class DirectPart {
 public:
  // The stretch for what is left of `r` after `result`; returns its length, or 0 when no memory
  // could be had for it (the read then goes through the page cache instead).
  uint64_t Aim(const ReadRequest& r, const ReadResult& result) {
    const uint64_t align = r.direct_align;
    begin_ = (r.offset + result.bytes) / align * align;
    const uint64_t end = (r.offset + r.bytes + align - 1) / align * align;
    length_ = std::min<uint64_t>(end - begin_, kMaxPart);
    if (length_ > capacity_) {
      capacity_ = (length_ + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
      buffer_.reset(static_cast<char*>(std::aligned_alloc(kDirectAlign, capacity_)));
      if (buffer_ == nullptr) capacity_ = 0;
    }
    return length_ <= capacity_ ? length_ : 0;
  }
  char* buffer() const { return buffer_.get(); }
  uint64_t begin() const { return begin_; }
  uint64_t length() const { return length_; }
  // Copies what of the `got` bytes read of the stretch `r` wants into its buffer; returns how
  // many (0: the file ends before them).
  uint64_t Take(const ReadRequest& r, uint64_t got, ReadResult* result) const {
    const uint64_t lead = r.offset + result->bytes - begin_;
    if (got <= lead) return 0;
    const uint64_t n = std::min(got - lead, r.bytes - result->bytes);
    std::memcpy(static_cast<char*>(r.out) + result->bytes, buffer_.get() + lead, n);
    result->bytes += n;
    return n;
  }
  // Lets go of a large buffer (kept ones stay small).
  void Trim() {
    if (capacity_ > kKeep) {
      buffer_.reset();
      capacity_ = 0;
    }
  }

 private:
  static constexpr uint64_t kMaxPart = uint64_t{1} << 30;
  static constexpr uint64_t kKeep = kDirectKeep;
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> buffer_;
  uint64_t capacity_ = 0;
  uint64_t begin_ = 0;
  uint64_t length_ = 0;
};

// What is left of `r` after `result->bytes`, read with blocking preads (ReadAt without the seam,
// which the read consulted once already): through `r.direct_fd` in aligned stretches when it has
// one (where the file system refuses them, EINVAL, through `r.fd`), else through `r.fd`.
void FinishRead(const ReadRequest& r, ReadResult* result, DirectPart* direct) {
  bool buffered = r.direct_fd < 0;
  while (result->bytes < r.bytes) {
    const uint64_t aimed = buffered ? 0 : direct->Aim(r, *result);
    buffered = aimed == 0;
    const uint64_t want = buffered ? r.bytes - result->bytes : aimed;
    const ssize_t n = buffered ? ::pread(r.fd, static_cast<char*>(r.out) + result->bytes, want,
                                         static_cast<off_t>(r.offset + result->bytes))
                               : ::pread(r.direct_fd, direct->buffer(), want,
                                         static_cast<off_t>(direct->begin()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && !buffered) {
      buffered = true;
      continue;
    }
    if (n < 0) {
      result->error = errno;
      break;
    }
    if (n == 0) break;  // the file ends here
    if (buffered) {
      result->bytes += static_cast<uint64_t>(n);
    } else if (direct->Take(r, static_cast<uint64_t>(n), result) == 0) {
      break;  // the file ends before the bytes wanted
    }
  }
  direct->Trim();
}

// A pool of reader threads, started as reads need them, up to the depth.
class ThreadReadQueue final : public ReadQueue {
 public:
  explicit ThreadReadQueue(uint32_t depth) : ReadQueue(IoEngine::kThreads, depth) {}
  ~ThreadReadQueue() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  void Submit(const ReadRequest& r) override {
    STOKER_ASSERT(in_flight_ < depth_, "{} reads in flight, depth {}", in_flight_, depth_);
    ++in_flight_;
    ReadDone done{.tag = r.tag};
    if (Faulted(r)) {
      done.result.error = errno;
      ready_.push_back(done);
      return;
    }
    if (r.direct_fd < 0 && nowait_ && ReadWithoutWaiting(r, &done.result, &nowait_)) {
      ready_.push_back(done);
      return;
    }
    std::lock_guard lock(mutex_);
    pending_.push_back({r, done});
    // A worker woken but not yet running still counts as idle: start one for each read beyond
    // the idle ones, so that as many reads are in flight as were submitted.
    if (pending_.size() > idle_ && workers_.size() < depth_)
      workers_.emplace_back([this] { Work(); });
    work_.notify_one();
  }

  void Flush() override {}

  void Reap(std::vector<ReadDone>* done, bool wait) override {
    std::unique_lock lock(mutex_);
    if (wait && ready_.empty() && finished_.empty() && in_flight_ > 0)
      reaped_.wait(lock, [&] { return !finished_.empty(); });
    done->insert(done->end(), ready_.begin(), ready_.end());
    done->insert(done->end(), finished_.begin(), finished_.end());
    in_flight_ -= static_cast<uint32_t>(ready_.size() + finished_.size());
    ready_.clear();
    finished_.clear();
  }

 private:
  struct Pending {
    ReadRequest request;
    ReadDone done;  // with what the page cache held already
  };

  void Work() {
    DirectPart direct;
    std::unique_lock lock(mutex_);
    while (true) {
      ++idle_;
      work_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      --idle_;
      if (stopping_) return;
      Pending p = pending_.front();
      pending_.pop_front();
      lock.unlock();
      FinishRead(p.request, &p.done.result, &direct);
      lock.lock();
      finished_.push_back(p.done);
      reaped_.notify_one();
    }
  }

  bool nowait_ = true;           // the caller's thread: RWF_NOWAIT works here
  std::vector<ReadDone> ready_;  // the caller's thread: reads done at Submit
  std::mutex mutex_;
  std::condition_variable work_, reaped_;
  std::deque<Pending> pending_;
  std::vector<ReadDone> finished_;
  std::vector<std::thread> workers_;
  uint32_t idle_ = 0;
  bool stopping_ = false;
};

#ifdef STOKER_HAVE_URING

// io_uring: one slot per read in flight; a short read is queued again for its rest.
class UringReadQueue final : public ReadQueue {
 public:
  // Null, with the reason in *why, when this kernel or process cannot use io_uring for reads.
  static std::unique_ptr<UringReadQueue> Make(uint32_t depth, std::string* why) {
    auto queue = std::unique_ptr<UringReadQueue>(new UringReadQueue(depth));
    // A read's completion is posted by the reading thread itself when it next enters the kernel
    // (or peeks and sees the flag), not by interrupting it wherever it is: the thread plans the
    // batches ahead between reaps, and being interrupted for every completion cost it about a
    // sixth of the cold rate. Kernels before 5.19 refuse the flags (EINVAL): then without them.
    const unsigned entries = std::min<uint32_t>(depth, 32768);
    int failed = io_uring_queue_init(entries, &queue->ring_,
                                     IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
    if (failed == -EINVAL) failed = io_uring_queue_init(entries, &queue->ring_, 0);
    if (failed < 0) {
      *why = fmt::format("io_uring_setup failed: {}", std::strerror(-failed));
      return nullptr;
    }
    queue->ready_ring_ = true;
    // Reads the kernel cannot start without blocking (pages not cached, no read-ahead to wait
    // on) go to its worker threads, by default at most 4 per CPU: allow one per read in flight.
    unsigned workers[2] = {depth, 0};
    (void)io_uring_register_iowq_max_workers(&queue->ring_, workers);
    io_uring_probe* probe = io_uring_get_probe_ring(&queue->ring_);
    const bool reads = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_READ);
    if (probe != nullptr) io_uring_free_probe(probe);
    if (!reads) {
      *why = "this kernel's io_uring has no IORING_OP_READ";
      return nullptr;
    }
    return queue;
  }
  ~UringReadQueue() override {
    if (!ready_ring_) return;
    std::vector<ReadDone> drained;
    while (in_flight_ > 0) Reap(&drained, true);
    io_uring_queue_exit(&ring_);
  }

  void Submit(const ReadRequest& r) override {
    STOKER_ASSERT(in_flight_ < depth_, "{} reads in flight, depth {}", in_flight_, depth_);
    ++in_flight_;
    if (Faulted(r)) {
      ready_.push_back({r.tag, {.bytes = 0, .error = errno}});
      return;
    }
    const uint32_t slot = free_.back();
    free_.pop_back();
    Slot& s = slots_[slot];
    s.request = r;
    s.result = {};
    s.direct = r.direct_fd >= 0;
    Queue(slot);
  }

  void Flush() override {
    while (queued_ > 0) {
      const int started = io_uring_submit(&ring_);
      if (started == -EINTR) continue;
      STOKER_CHECK(started >= 0, IoError, "io_uring_submit failed: {}", std::strerror(-started));
      STOKER_ASSERT(started > 0, "io_uring_submit started none of {} reads", queued_);
      queued_ -= static_cast<uint32_t>(started);
    }
  }

  void Reap(std::vector<ReadDone>* done, bool wait) override {
    Flush();
    const bool had_ready = !ready_.empty();
    done->insert(done->end(), ready_.begin(), ready_.end());
    in_flight_ -= static_cast<uint32_t>(ready_.size());
    ready_.clear();
    if (Collect(done) || had_ready || !wait) return;
    while (in_flight_ > 0) {
      io_uring_cqe* cqe = nullptr;
      const int waited = io_uring_wait_cqe(&ring_, &cqe);
      STOKER_CHECK(waited == 0 || waited == -EINTR, IoError, "io_uring_wait_cqe failed: {}",
                   std::strerror(-waited));
      if (Collect(done)) return;
    }
  }

 private:
  struct Slot {
    ReadRequest request;
    ReadResult result;
    bool direct = false;  // the rest through request.direct_fd, in aligned stretches
    DirectPart part;
  };

  explicit UringReadQueue(uint32_t depth) : ReadQueue(IoEngine::kUring, depth), slots_(depth) {
    for (uint32_t i = depth; i > 0; --i) free_.push_back(i - 1);
  }

  void Queue(uint32_t slot) {
    Slot& s = slots_[slot];
    const uint64_t length = s.direct ? s.part.Aim(s.request, s.result) : 0;
    s.direct = length > 0;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    STOKER_ASSERT(sqe != nullptr, "no submission entry with {} reads in flight", in_flight_);
    if (s.direct) {
      io_uring_prep_read(sqe, s.request.direct_fd, s.part.buffer(), static_cast<unsigned>(length),
                         s.part.begin());
    } else {
      const uint64_t left = std::min<uint64_t>(s.request.bytes - s.result.bytes, 1u << 30);
      io_uring_prep_read(sqe, s.request.fd, static_cast<char*>(s.request.out) + s.result.bytes,
                         static_cast<unsigned>(left), s.request.offset + s.result.bytes);
    }
    io_uring_sqe_set_data64(sqe, slot);
    ++queued_;
  }

  // Takes every completion there is; true when a read finished.
  bool Collect(std::vector<ReadDone>* done) {
    bool finished = false;
    io_uring_cqe* cqe = nullptr;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
      const auto slot = static_cast<uint32_t>(io_uring_cqe_get_data64(cqe));
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (Completed(slot, res)) {
        slots_[slot].part.Trim();
        done->push_back({slots_[slot].request.tag, slots_[slot].result});
        free_.push_back(slot);
        --in_flight_;
        finished = true;
      }
    }
    if (queued_ > 0) Flush();  // rests of short reads
    return finished;
  }

  // Applies one completion to its slot: true when the read is over.
  bool Completed(uint32_t slot, int res) {
    Slot& s = slots_[slot];
    if (res == -EINTR || res == -EAGAIN || (res == -EINVAL && s.direct)) {
      s.direct = s.direct && res != -EINVAL;  // a file system that refuses O_DIRECT reads
      Queue(slot);
      return false;
    }
    if (res < 0) {
      s.result.error = -res;
      return true;
    }
    const uint64_t got = s.direct ? s.part.Take(s.request, static_cast<uint64_t>(res), &s.result)
                                  : static_cast<uint64_t>(res);
    if (!s.direct) s.result.bytes += got;
    if (got == 0 || s.result.bytes == s.request.bytes) return true;
    Queue(slot);
    return false;
  }

  io_uring ring_{};
  bool ready_ring_ = false;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::vector<ReadDone> ready_;  // failed by the seam at Submit
  uint32_t queued_ = 0;          // prepared, not yet submitted
};

#endif  // STOKER_HAVE_URING

}  // namespace

std::unique_ptr<ReadQueue> MakeReadQueue(IoEngine engine, uint32_t depth) {
  depth = std::max<uint32_t>(depth, 1);
  std::string why = "stoker was built without liburing";
  if (engine != IoEngine::kThreads) {
#ifdef STOKER_HAVE_URING
    if (auto queue = UringReadQueue::Make(depth, &why)) return queue;
#endif
    STOKER_CHECK(engine == IoEngine::kAuto, IoError,
                 "the io_uring engine cannot read here: {} (the threads engine can)", why);
  }
  std::unique_ptr<ReadQueue> queue = std::make_unique<ThreadReadQueue>(depth);
  if (engine == IoEngine::kAuto) queue->fallback_reason_ = why;
  return queue;
}

}  // namespace stoker
