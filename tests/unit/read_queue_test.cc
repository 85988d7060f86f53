// ReadQueue (os/read_queue.h), each engine on a real file, through the page cache and through
// O_DIRECT: many reads in flight at any offset and of any size return the file's bytes; a read
// past the end stops there; a bad descriptor, or a read the I/O seam fails, comes back with its
// errno while the others still succeed; the depth is never exceeded; Reap without waiting never
// blocks; auto takes io_uring here, or says why not.
#include "os/read_queue.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "os/posix_io.h"
#include "os/unique_fd.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::TempDir;

constexpr uint64_t kFileBytes = 1 << 20;

uint8_t ByteAt(uint64_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 13); }

// Whether this kernel lets this process set up an io_uring (kernel.io_uring_disabled or a
// container's seccomp profile may refuse it), asked of the kernel itself, without liburing.
bool UringAllowed() {
  io_uring_params params{};
  const int fd = static_cast<int>(::syscall(__NR_io_uring_setup, 1, &params));
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

struct Reading {
  IoEngine engine;
  bool direct;  // through ReadRequest::direct_fd
};

class ReadQueueTest : public ::testing::TestWithParam<Reading> {
 protected:
  ReadQueueTest() : path_(dir_ / "file.bin") {
    std::vector<char> bytes(kFileBytes);
    for (uint64_t i = 0; i < kFileBytes; ++i) bytes[i] = static_cast<char>(ByteAt(i));
    std::ofstream(path_, std::ios::binary).write(bytes.data(), kFileBytes);
    fd_ = UniqueFd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (GetParam().direct) {
      direct_fd_ = UniqueFd(::open(path_.c_str(), O_RDONLY | O_DIRECT));
      align_ = direct_fd_.get() >= 0 ? DirectAlignment(direct_fd_.get()) : 0;
    }
  }
  void SetUp() override {
    if (GetParam().engine == IoEngine::kUring && !UringAllowed())
      GTEST_SKIP() << "this kernel refuses io_uring to this process: " << std::strerror(errno);
    if (GetParam().direct && align_ == 0)
      GTEST_SKIP() << "no O_DIRECT on the file system of " << path_ << ": " << std::strerror(errno);
  }
  ReadRequest Request(uint64_t offset, uint64_t bytes, std::vector<char>* out, uint64_t tag) {
    out->assign(bytes, 0);
    return {.fd = fd_.get(),
            .direct_fd = GetParam().direct ? direct_fd_.get() : -1,
            .direct_align = align_,
            .offset = offset,
            .bytes = bytes,
            .out = out->data(),
            .path = &path_,
            .tag = tag};
  }
  std::unique_ptr<ReadQueue> Queue(uint32_t depth) {
    return MakeReadQueue(GetParam().engine, depth);
  }

  TempDir dir_;
  std::string path_;
  UniqueFd fd_;
  UniqueFd direct_fd_;
  uint32_t align_ = kDirectAlign;  // what the file system asks of direct reads
};

// Submits every request, at most `depth` in flight, and reaps them all: results by tag.
std::map<uint64_t, ReadResult> RunAll(ReadQueue& queue, const std::vector<ReadRequest>& requests) {
  std::map<uint64_t, ReadResult> results;
  std::vector<ReadDone> done;
  size_t next = 0;
  while (results.size() < requests.size()) {
    while (next < requests.size() && queue.in_flight() < queue.depth()) {
      queue.Submit(requests[next++]);
    }
    EXPECT_LE(queue.in_flight(), queue.depth());
    done.clear();
    queue.Reap(&done, /*wait=*/true);
    for (const ReadDone& d : done) EXPECT_TRUE(results.emplace(d.tag, d.result).second);
  }
  EXPECT_EQ(queue.in_flight(), 0u);
  return results;
}

TEST_P(ReadQueueTest, ManyReadsInFlightReturnTheFilesBytes) {
  const auto queue = Queue(8);
  EXPECT_EQ(queue->engine(), GetParam().engine);
  std::vector<std::vector<char>> out(200);
  std::vector<ReadRequest> requests;
  for (uint64_t i = 0; i < out.size(); ++i) {
    const uint64_t offset = (i * 7919 * 64) % (kFileBytes - 20000);
    requests.push_back(Request(offset + i % 5, 1 + (i * 104729) % 20000, &out[i], i));
  }
  const auto results = RunAll(*queue, requests);
  for (uint64_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(results.at(i).error, 0) << "read " << i;
    ASSERT_EQ(results.at(i).bytes, requests[i].bytes) << "read " << i;
    for (uint64_t b = 0; b < requests[i].bytes; ++b) {
      ASSERT_EQ(static_cast<uint8_t>(out[i][b]), ByteAt(requests[i].offset + b))
          << "read " << i << ", byte " << b;
    }
  }
}

TEST_P(ReadQueueTest, AReadPastTheEndStopsThereAndABadDescriptorFails) {
  const auto queue = Queue(4);
  std::vector<char> tail, beyond, bad;
  ReadRequest broken = Request(0, 100, &bad, 3);
  broken.fd = 1 << 20;  // no such descriptor
  if (broken.direct_fd >= 0) broken.direct_fd = 1 << 20;
  const auto results = RunAll(*queue, {Request(kFileBytes - 100, 4096, &tail, 1),
                                       Request(kFileBytes + 10, 10, &beyond, 2), broken});
  EXPECT_EQ(results.at(1).bytes, 100u);
  EXPECT_EQ(results.at(1).error, 0);
  EXPECT_EQ(static_cast<uint8_t>(tail[99]), ByteAt(kFileBytes - 1));
  EXPECT_EQ(results.at(2).bytes, 0u);
  EXPECT_EQ(results.at(2).error, 0);
  EXPECT_EQ(results.at(3).error, EBADF);
}

TEST_P(ReadQueueTest, TheSeamFailsTheReadsCoveringItsByteOnly) {
  ScopedFaultPlan plan("pread:file.bin:@50000");
  const auto queue = Queue(4);
  std::vector<char> before, covering, after;
  const auto results =
      RunAll(*queue, {Request(0, 50000, &before, 1), Request(49000, 2000, &covering, 2),
                      Request(50001, 5000, &after, 3)});
  EXPECT_EQ(results.at(1).error, 0);
  EXPECT_EQ(results.at(1).bytes, 50000u);
  EXPECT_EQ(results.at(2).error, EIO);
  EXPECT_EQ(results.at(3).error, 0);
  EXPECT_EQ(static_cast<uint8_t>(after[0]), ByteAt(50001));
  EXPECT_EQ(FaultsInjected(), 1u);
}

TEST_P(ReadQueueTest, ReapWithoutWaitingReturnsWhatIsDoneAndEveryReadComesBackOnce) {
  const auto queue = Queue(16);
  std::vector<std::vector<char>> out(16);
  for (uint64_t i = 0; i < out.size(); ++i) queue->Submit(Request(i * 4096, 4096, &out[i], i));
  std::vector<ReadDone> done;
  queue->Reap(&done, /*wait=*/false);  // may hold any number of them
  while (queue->in_flight() > 0) queue->Reap(&done, /*wait=*/true);
  ASSERT_EQ(done.size(), out.size());
  std::vector<bool> seen(out.size());
  for (const ReadDone& d : done) {
    EXPECT_FALSE(seen.at(d.tag)) << "read " << d.tag << " came back twice";
    seen.at(d.tag) = true;
    EXPECT_EQ(d.result.bytes, 4096u);
  }
  done.clear();
  queue->Reap(&done, /*wait=*/true);  // nothing in flight: returns at once
  EXPECT_TRUE(done.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Engines, ReadQueueTest,
    ::testing::Values(Reading{IoEngine::kThreads, false}, Reading{IoEngine::kUring, false},
                      Reading{IoEngine::kThreads, true}, Reading{IoEngine::kUring, true}),
    [](const auto& info) {
      return std::string(IoEngineName(info.param.engine)) + (info.param.direct ? "_direct" : "");
    });

TEST(ReadQueue, AutoTakesIoUringWhereAllowedOrSaysWhyNot) {
  const auto queue = MakeReadQueue(IoEngine::kAuto, 4);
  if (UringAllowed()) {
    EXPECT_EQ(queue->engine(), IoEngine::kUring) << queue->fallback_reason();
    EXPECT_TRUE(queue->fallback_reason().empty());
  } else {
    EXPECT_EQ(queue->engine(), IoEngine::kThreads);
    EXPECT_FALSE(queue->fallback_reason().empty());
  }
}

TEST(ReadQueue, EngineNamesParseAndOthersAreRefused) {
  for (IoEngine e : {IoEngine::kAuto, IoEngine::kUring, IoEngine::kThreads}) {
    EXPECT_EQ(ParseIoEngine(IoEngineName(e)), e);
  }
  EXPECT_THROW(ParseIoEngine("aio"), ConfigError);
  for (DirectIo d : {DirectIo::kAuto, DirectIo::kOn, DirectIo::kOff}) {
    EXPECT_EQ(ParseDirectIo(DirectIoName(d)), d);
  }
  EXPECT_THROW(ParseDirectIo("yes"), ConfigError);
}

}  // namespace
}  // namespace stoker
