// I/O faults injected through the seam (os/posix_io.h) into a running Loader at 1, 2 and 4 ranks:
//   - a write, fsync or rename failing on the last rank while it saves step 8: that rank's
//     WaitForSave() throws an IoError naming its file and the call, the other ranks save; step 8
//     stays incomplete (no rank file, no temporary file of that rank), FindResumeStep picks step
//     4, and a Loader resumed from it delivers exactly the batches 5..8 of the first run;
//   - a read error at a byte in the middle of one shard's tokens or document offsets, with either
//     engine, through the page cache or O_DIRECT: the rank(s) whose reading thread meets it get
//     an IoError from Next() naming the file, its dataset, the array and the byte offset (no
//     hang: the others go on), and at least one rank meets it within an epoch (the offsets of a
//     walked dataset; a dealt one's are all read at set-up, where every rank gets the error);
//   - a shard that grows on disk during the run (pools of one open file, so files are reopened):
//     a DataError from Next() naming the file, saying its size changed and that the corpus must
//     not change during a run.
// No rank throws out of a collective: the faults are met and caught between collectives.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "mpi/comm.h"
#include "os/posix_io.h"
#include "shard/discovery.h"
#include "stoker/checkpoint.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#include "tokens/token_type.h"
#include "tools/synth.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::ExpectMentions;

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SynthSpec spec;
    spec.out = dir_ / "corpus";
    spec.datasets = {{"a", 12000, 60}, {"b", 8000, 150}};
    spec.files = 3;
    spec.seed = 5;
    spec.unique_tokens = true;
    SynthesizeCorpus(comm_, spec);
  }
  LoaderConfig Config() const {
    LoaderConfig config;
    config.data = dir_ / "corpus";
    config.seq_len = 63;
    config.batch_size = 2;
    config.seed = 3;
    config.logical_shards = 16;
    return config;
  }
  // `deal_max_docs`: the datasets are small enough to be dealt by default.
  void ExpectReadErrorNamed(uint64_t byte, const std::string& array,
                            uint64_t deal_max_docs = LoaderConfig{}.deal_max_docs);
  // Steps that take every rank through epoch 0 of the whole corpus, and a few more.
  uint64_t StepsPastEpoch0() const {
    const uint64_t per_step = comm_.size() * Config().batch_size * (Config().seq_len + 1);
    return 2 * (20000 + 2000) / per_step + 10;  // tokens plus EOS, twice over
  }
  bool last_rank() const { return comm_.rank() == comm_.size() - 1; }

  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
};

std::vector<std::vector<int64_t>> Pull(Loader& loader, int n) {
  std::vector<std::vector<int64_t>> batches;
  for (int i = 0; i < n; ++i) batches.push_back(loader.Next().value().tokens);
  return batches;
}

TEST_F(FaultsTest, FailedSaveKeepsThePreviousStepForResume) {
  for (const std::string call : {"write", "fsync", "rename"}) {
    SCOPED_TRACE(call);
    const std::string ckpt = dir_ / ("ckpt-" + call);
    const std::string file =
        fmt::format("step-8/loader/rank-{:05}-of-{:05}.ckpt", comm_.size() - 1, comm_.size());
    std::vector<std::vector<int64_t>> after4;
    {
      Loader loader(MPI_COMM_WORLD, Config());
      Pull(loader, 4);
      loader.Save(ckpt + "/step-4");
      loader.WaitForSave();
      after4 = Pull(loader, 4);
      std::optional<ScopedFaultPlan> plan;
      if (last_rank()) plan.emplace(call + ":" + file + ":1");
      loader.Save(ckpt + "/step-8");
      if (last_rank()) {
        try {
          loader.WaitForSave();
          ADD_FAILURE() << "the failed save was not reported";
        } catch (const IoError& e) {
          ExpectMentions(e.what(), ckpt + "/" + file);
          ExpectMentions(e.what(), "(" + call + ")");
          ExpectMentions(e.what(), "Input/output error");
        }
        EXPECT_EQ(FaultsInjected(), 1u);
      } else {
        EXPECT_NO_THROW(loader.WaitForSave());
      }
      comm_.Barrier();
    }
    EXPECT_FALSE(fs::exists(ckpt + "/" + file));
    EXPECT_FALSE(fs::exists(ckpt + "/" + file + ".tmp")) << "a temporary file was left";
    const auto step = FindResumeStep(MPI_COMM_WORLD, ckpt);
    EXPECT_EQ(step.value_or(""), ckpt + "/step-4");
    LoaderConfig resumed = Config();
    resumed.resume_from = step.value_or(ckpt + "/step-4");
    Loader again(MPI_COMM_WORLD, resumed);
    EXPECT_EQ(Pull(again, 4), after4) << "the resumed run differs from the first";
  }
}

// Runs the loader past epoch 0 under a rule failing a pread of `byte` of shard 1, once per way of
// reading; expects an IoError from Next() on some rank naming the shard and `array`.
void FaultsTest::ExpectReadErrorNamed(uint64_t byte, const std::string& array,
                                      uint64_t deal_max_docs) {
  const CorpusTable table = DiscoverCorpus(comm_, Config().data);
  const ShardInfo& shard = table.shards.at(1);
  ScopedFaultPlan plan(fmt::format("pread:{}:@{}", shard.path, byte));
  for (IoEngine engine : {IoEngine::kAuto, IoEngine::kThreads}) {
    for (DirectIo direct : {DirectIo::kOff, DirectIo::kOn}) {
      LoaderConfig config = Config();
      config.io_engine = engine;
      config.direct_io = direct;
      config.deal_max_docs = deal_max_docs;
      uint64_t met = 0;
      {
        Loader loader(MPI_COMM_WORLD, config);
        for (uint64_t step = 0; step < StepsPastEpoch0(); ++step) {
          try {
            loader.Next();
          } catch (const IoError& e) {
            ExpectMentions(e.what(),
                           table.root + "/" + shard.path + " (dataset a): reading " + array + "[");
            ExpectMentions(e.what(), "failed (pread of");
            ExpectMentions(e.what(), "Input/output error");
            met = 1;
            break;
          }
        }
      }
      EXPECT_GE(comm_.Sum(met), 1u)
          << "no rank read byte " << byte << " of " << shard.path << " with the "
          << IoEngineName(engine) << " engine, --direct-io " << DirectIoName(direct);
    }
  }
}

TEST_F(FaultsTest, ReadErrorMidShardReachesNextNamingFileAndOffset) {
  std::vector<ArrayLocations> arrays;
  const CorpusTable table = DiscoverCorpus(comm_, Config().data, &arrays);
  const ShardInfo& shard = table.shards.at(1);
  ASSERT_TRUE(arrays.at(1).tokens.direct);
  ExpectReadErrorNamed(
      arrays.at(1).tokens.byte_offset + shard.tokens / 2 * TokenTypeSize(shard.token_type),
      "/tokens");
}

// Offsets are read ahead of the documents that need them: a failed one is met where its
// document is located, and named as a read on the spot would name it.
TEST_F(FaultsTest, ReadErrorInDocumentOffsetsReachesNextNamingFileAndOffset) {
  std::vector<ArrayLocations> arrays;
  const CorpusTable table = DiscoverCorpus(comm_, Config().data, &arrays);
  const ShardInfo& shard = table.shards.at(1);
  ASSERT_TRUE(arrays.at(1).offsets.direct);
  ExpectReadErrorNamed(arrays.at(1).offsets.byte_offset + shard.docs / 2 * 8, "/doc_offsets",
                       /*deal_max_docs=*/0);
}

// A dealt dataset's sizes are read when the Loader is made: a read error there is every rank's,
// named as the reading thread would name it.
TEST_F(FaultsTest, ReadErrorInADealtDatasetsOffsetsFailsTheLoaderOnEveryRank) {
  std::vector<ArrayLocations> arrays;
  const CorpusTable table = DiscoverCorpus(comm_, Config().data, &arrays);
  const ShardInfo& shard = table.shards.at(1);
  ScopedFaultPlan plan(fmt::format("pread:{}:@{}", shard.path,
                                   arrays.at(1).offsets.byte_offset + shard.docs / 2 * 8));
  try {
    Loader loader(MPI_COMM_WORLD, Config());
    ADD_FAILURE() << "a Loader was made over a failing read of " << shard.path;
  } catch (const IoError& e) {
    EXPECT_TRUE(e.collective());
    ExpectMentions(e.what(), table.root + "/" + shard.path + " (dataset a): reading /doc_offsets[");
    ExpectMentions(e.what(), "Input/output error");
  }
}

TEST_F(FaultsTest, ShardGrowingDuringTheRunIsDetected) {
  const CorpusTable table = DiscoverCorpus(comm_, Config().data);
  const std::string path = table.root + "/" + table.shards.at(4).path;
  LoaderConfig config = Config();
  config.max_open_files = 1;  // every switch of file reopens one
  config.prefetch = 1;
  config.read_ahead_bytes = 0;  // one batch being read: most of the epoch is read after the append
  uint64_t met = 0;
  {
    Loader loader(MPI_COMM_WORLD, config);
    Pull(loader, 2);
    comm_.Barrier();
    if (comm_.rank() == 0) std::ofstream(path, std::ios::app) << "appended bytes";
    comm_.Barrier();
    for (uint64_t step = 0; step < StepsPastEpoch0(); ++step) {
      try {
        loader.Next();
      } catch (const DataError& e) {
        // Mostly the size ("changed on disk since discovery"); but a rank whose reading thread
        // reopens the file while the append is under way may see its new modification time with
        // the old size (write(2) updates the time before the size): "changed on disk while the
        // run was going". Either is the change detected.
        ExpectMentions(e.what(), path + " (dataset b): changed on disk ");
        ExpectMentions(e.what(), "the corpus must not change during a run");
        met = 1;
        break;
      }
    }
  }
  EXPECT_GE(comm_.Sum(met), 1u) << "no rank noticed that " << path << " grew";
}

}  // namespace
}  // namespace stoker
