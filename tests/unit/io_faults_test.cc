// The I/O seam (os/posix_io.h) and what stoker does with the faults it injects:
//   - fault plans parse (every call, N / * / @BYTE, errno names, delay, rank) and bad ones are
//     refused naming the rule; STOKER_FAULTS keeps the rules of this process's rank only;
//   - WriteFileAtomically whose write, fsync or rename fails: IoError naming the file and the
//     call, the old file untouched, no temporary file left; the Nth call only; a failing fsync of
//     the folder (SyncPath); AppendFile adding after what is there, a failing call named;
//   - a pread failing in the middle of a shard: IoError naming the file, its dataset, the array
//     and the byte offset; reads elsewhere in the file still work; a delay only slows a read;
//   - a shard changed on disk after discovery (ShardPool): a size change, before the first open
//     or at a reopen; a file replaced, or modified in place, between two opens; /doc_offsets not
//     ending where discovery found it: DataError naming the file and what changed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "loader/shard_pool.h"
#include "os/files.h"
#include "os/posix_io.h"
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "stoker/error.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::ExpectMentions;
using testing::ReadFileBytes;
using testing::TempDir;
using testing::WriteTestShard;

// The message of the IoError `call` throws ("" and a failure when it throws none).
template <typename Kind = IoError, typename Fn>
std::string ErrorOf(Fn&& call) {
  try {
    call();
  } catch (const Kind& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST(FaultPlan, ParsesEveryForm) {
  const auto rules = ParseFaultPlan(
      "fsync:ckpt:1,write:rank-1:3:enospc,rename::*,pread:part.h5:@4096:delay=20,open:x:2:rank=3");
  ASSERT_EQ(rules.size(), 5u);
  EXPECT_EQ(rules[0], (FaultRule{.call = IoCall::kFsync, .path_contains = "ckpt", .nth = 1}));
  EXPECT_EQ(
      rules[1],
      (FaultRule{.call = IoCall::kWrite, .path_contains = "rank-1", .nth = 3, .error = ENOSPC}));
  EXPECT_EQ(rules[2], (FaultRule{.call = IoCall::kRename, .path_contains = "", .nth = 0}));
  EXPECT_EQ(rules[3], (FaultRule{.call = IoCall::kPread,
                                 .path_contains = "part.h5",
                                 .nth = 0,
                                 .at_byte = 4096,
                                 .delay_ms = 20}));
  EXPECT_EQ(rules[4],
            (FaultRule{.call = IoCall::kOpen, .path_contains = "x", .nth = 2, .rank = 3}));
  EXPECT_TRUE(ParseFaultPlan("").empty());
}

TEST(FaultPlan, RefusesBadRulesNamingThem) {
  for (const auto& [plan, words] : std::vector<std::pair<std::string, std::string>>{
           {"fsync:ckpt", "expected CALL:PATH_SUBSTRING:WHEN"},
           {"unlink:x:1", "unknown call 'unlink'"},
           {"write:x:0", "'0' is not N >= 1"},
           {"write:x:@12", "applies to pread only"},
           {"pread:x:@", "needs a byte offset"},
           {"fsync:x:1:eagain", "unknown option 'eagain'"},
           {"fsync:x:1:delay=0", "delay must be 1..600000 ms"},
           {"fsync:ok:1,write:x:y", "fault rule 'write:x:y'"}}) {
    ExpectMentions(ErrorOf<ConfigError>([&plan = plan] { ParseFaultPlan(plan); }), words);
  }
}

TEST(FaultPlan, EnvironmentKeepsThisRanksRules) {
  TempDir dir;
  const std::string path = dir / "file";
  testing::WriteText(path, "x");
  setenv("STOKER_FAULTS", "fsync:file:*:rank=1,open:file:*:rank=0", 1);
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  InstallFaultPlanFromEnvironment();
  const int fd = posix::Open(path, O_RDONLY);  // the open rule is rank 0's
  ASSERT_GE(fd, 0);
  EXPECT_EQ(posix::Fsync(fd, path), -1);
  EXPECT_EQ(errno, EIO);
  ::close(fd);
  EXPECT_EQ(FaultsInjected(), 1u);
  setenv("STOKER_FAULTS", "fsync:x:nope", 1);
  EXPECT_THROW(InstallFaultPlanFromEnvironment(), ConfigError);
  unsetenv("STOKER_FAULTS");
  unsetenv("OMPI_COMM_WORLD_RANK");
  InstallFaultPlan({});
}

// WriteFileAtomically over an existing file, with one call failing.
TEST(AtomicWriteFaults, FailingWriteFsyncOrRenameKeepsTheOldFile) {
  for (const std::string call : {"write", "fsync", "rename", "open"}) {
    SCOPED_TRACE(call);
    TempDir dir;
    const std::string path = dir / "step-4/loader/rank-00000-of-00002.ckpt";
    WriteFileAtomically(path, "the old checkpoint");
    std::string message;
    {
      ScopedFaultPlan plan(call + ":rank-00000:1:enospc");
      message = ErrorOf([&] { WriteFileAtomically(path, std::string(100000, 'n')); });
      EXPECT_EQ(FaultsInjected(), 1u);
    }
    ExpectMentions(message, path);
    ExpectMentions(message, "(" + call + ")");
    ExpectMentions(message, "No space left on device");
    EXPECT_EQ(ReadFileBytes(path), "the old checkpoint");
    EXPECT_FALSE(fs::exists(path + ".tmp")) << "a temporary file was left";
    WriteFileAtomically(path, "the new one");  // the plan is gone: works again
    EXPECT_EQ(ReadFileBytes(path), "the new one");
  }
}

TEST(AtomicWriteFaults, OnlyTheNthMatchingCallFails) {
  TempDir dir;
  ScopedFaultPlan plan("fsync:.ckpt:2");
  WriteFileAtomically(dir / "a.ckpt", "a");  // 1st fsync of a .ckpt file (the folder's: no)
  EXPECT_THROW(WriteFileAtomically(dir / "b.ckpt", "b"), IoError);
  WriteFileAtomically(dir / "c.ckpt", "c");
  EXPECT_TRUE(fs::exists(dir / "a.ckpt"));
  EXPECT_FALSE(fs::exists(dir / "b.ckpt"));
  EXPECT_TRUE(fs::exists(dir / "c.ckpt"));
  EXPECT_EQ(FaultsInjected(), 1u);
}

TEST(AtomicWriteFaults, FailingFolderSyncIsReported) {
  TempDir dir;
  fs::create_directories(dir / "loader");
  ScopedFaultPlan plan("fsync:loader:1");
  const std::string message = ErrorOf([&] { SyncPath(dir / "loader", /*folder=*/true); });
  ExpectMentions(message, dir / "loader");
  ExpectMentions(message, "(fsync)");
  ExpectMentions(message, "Input/output error");
}

// AppendFile: each call adds its bytes after the earlier ones (a requeued job's result lines);
// a failing write or fsync is an IoError naming the file and the call.
TEST(AppendFaults, AppendsEachCallAndNamesAFailingCall) {
  TempDir dir;
  const std::string path = dir / "results/run.json";
  AppendFile(path, "{\"run\": 1}\n");
  AppendFile(path, "{\"run\": 2}\n");
  EXPECT_EQ(ReadFileBytes(path), "{\"run\": 1}\n{\"run\": 2}\n");
  for (const std::string call : {"write", "fsync", "open"}) {
    SCOPED_TRACE(call);
    ScopedFaultPlan plan(call + ":run.json:1:enospc");
    const std::string message = ErrorOf([&] { AppendFile(path, "{\"run\": 3}\n"); });
    ExpectMentions(message, path);
    ExpectMentions(message, "(" + call + ")");
    ExpectMentions(message, "No space left on device");
  }
}

// One shard of 2,000 uint32 tokens in dataset "web", described as discovery would.
struct OneShard {
  TempDir dir;
  ShardInfo info;
  ArrayLocations arrays;
  OneShard() {
    std::vector<std::vector<uint64_t>> docs;
    for (uint64_t d = 0; d < 20; ++d) docs.push_back(std::vector<uint64_t>(100, d + 1));
    WriteTestShard(dir / "web/part-0.h5", docs);
    const ShardCheck check = DescribeShard(dir.path(), "web/part-0.h5", 0);
    EXPECT_TRUE(check.info && check.arrays.tokens.direct);
    info = check.info.value_or(ShardInfo{});
    arrays = check.arrays;
  }
};

TEST(ShardReadFaults, ReadErrorMidShardNamesFileDatasetAndOffset) {
  OneShard shard;
  const uint64_t bad_byte = shard.arrays.tokens.byte_offset + 1000 * 4;  // token 1000
  ScopedFaultPlan plan(fmt::format("pread:part-0.h5:@{}", bad_byte));
  ShardReader reader(shard.dir.path(), shard.info, shard.arrays, "web");
  std::vector<int64_t> out(2000);
  std::vector<char> scratch;
  reader.ReadTokens(0, 900, out.data(), &scratch);  // before the bad byte: fine
  EXPECT_EQ(out[899], 9);
  const std::string message = ErrorOf([&] { reader.ReadTokens(900, 200, out.data(), &scratch); });
  ExpectMentions(message, shard.dir / "web/part-0.h5");
  ExpectMentions(message, "(dataset web)");
  ExpectMentions(message, "/tokens[900...]");
  ExpectMentions(message,
                 fmt::format("at byte offset {}", shard.arrays.tokens.byte_offset + 900 * 4));
  ExpectMentions(message, "Input/output error");
}

TEST(ShardReadFaults, DelayOnlySlowsAReadDown) {
  OneShard shard;
  ScopedFaultPlan plan("pread:part-0.h5:1:delay=50");
  ShardReader reader(shard.dir.path(), shard.info, shard.arrays);
  std::vector<int64_t> out(100);
  std::vector<char> scratch;
  const auto start = std::chrono::steady_clock::now();
  reader.ReadTokens(100, 100, out.data(), &scratch);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(FaultsInjected(), 1u);
}

// A table of two shards of dataset "web"; pools of one open file, so that Get() reopens.
struct TwoShards {
  TempDir dir;
  CorpusTable table;
  std::vector<ArrayLocations> arrays;
  TwoShards() {
    table.root = dir.path();
    for (int s = 0; s < 2; ++s) {
      const std::string rel = fmt::format("web/part-{}.h5", s);
      WriteTestShard(dir / rel, {{1, 2, 3}, {4, 5}, {6, 7, 8, 9}});
      const ShardCheck check = DescribeShard(dir.path(), rel, 0);
      table.shards.push_back(check.info.value());
      arrays.push_back(check.arrays);
    }
    table.datasets.push_back({.name = "web", .first_shard = 0, .num_shards = 2});
  }
  std::string Path(int s) const { return dir / fmt::format("web/part-{}.h5", s); }
};

TEST(ShardChanges, SizeChangeIsDetectedAtFirstOpenAndAtReopen) {
  TwoShards corpus;
  std::ofstream(corpus.Path(1), std::ios::app) << "appended";
  ShardPool pool(corpus.table, corpus.arrays, 1);
  pool.Get(0);
  std::string message = ErrorOf<DataError>([&] { pool.Get(1); });
  ExpectMentions(message, corpus.Path(1) + " (dataset web): changed on disk since discovery");
  ExpectMentions(message, fmt::format("its size is {} bytes, discovery found {}",
                                      corpus.table.shards[1].file_bytes + 8,
                                      corpus.table.shards[1].file_bytes));
  ExpectMentions(message, "the corpus must not change during a run");
  TwoShards other;
  ShardPool reopening(other.table, other.arrays, 1);
  reopening.Get(0);
  reopening.Get(1);  // closes 0
  fs::resize_file(other.Path(0), other.table.shards[0].file_bytes - 10);
  message = ErrorOf<DataError>([&] { reopening.Get(0); });
  ExpectMentions(message, other.Path(0));
  ExpectMentions(message, fmt::format("its size is {} bytes, discovery found {}",
                                      other.table.shards[0].file_bytes - 10,
                                      other.table.shards[0].file_bytes));
}

TEST(ShardChanges, ReplacedOrModifiedBetweenOpensIsDetected) {
  TwoShards corpus;
  ShardPool pool(corpus.table, corpus.arrays, 1);
  pool.Get(0);
  pool.Get(1);  // closes 0
  // Replaced by a file of the same size and content (another inode).
  fs::copy_file(corpus.Path(0), corpus.Path(0) + ".new");
  fs::rename(corpus.Path(0) + ".new", corpus.Path(0));
  std::string message = ErrorOf<DataError>([&] { pool.Get(0); });
  ExpectMentions(message, corpus.Path(0) + " (dataset web): changed on disk while the run");
  ExpectMentions(message, "replaced by another file");
  // Modified in place (same size; the modification time moves).
  ShardPool again(corpus.table, corpus.arrays, 1);
  again.Get(1);
  again.Get(0);
  const auto later = fs::last_write_time(corpus.Path(1)) + std::chrono::seconds(5);
  fs::last_write_time(corpus.Path(1), later);
  message = ErrorOf<DataError>([&] { again.Get(1); });
  ExpectMentions(message, corpus.Path(1));
  ExpectMentions(message, "modified (modification time differs)");
  again.Get(0);  // still open: the failed Get(1) closed nothing
  EXPECT_EQ(again.opens(), 2u);
}

TEST(ShardChanges, OffsetsNotEndingWhereDiscoveryFoundAreDetected) {
  TwoShards corpus;
  corpus.table.shards[1].tokens = 8;  // as if discovery saw a file of 8 tokens, same size
  ShardPool pool(corpus.table, corpus.arrays, 4);
  pool.Get(0);
  const std::string message = ErrorOf<DataError>([&] { pool.Get(1); });
  ExpectMentions(message, corpus.Path(1));
  ExpectMentions(message, "/doc_offsets runs from 0 to 9, discovery found 0 to 8");
}

TEST(ShardChanges, FailingFstatIsAnIoErrorNamingTheFile) {
  TwoShards corpus;
  ScopedFaultPlan plan("fstat:part-1:1");
  ShardPool pool(corpus.table, corpus.arrays, 4);
  pool.Get(0);
  const std::string message = ErrorOf([&] { pool.Get(1); });
  ExpectMentions(message, corpus.Path(1));
  ExpectMentions(message, "(fstat)");
}

}  // namespace
}  // namespace stoker
