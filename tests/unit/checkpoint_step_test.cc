// CheckpointStep: a step folder loads into one checked value only when its rank files form one
// checkpoint, one save of one run; anything else is refused naming the folder or the file.
#include "checkpoint/checkpoint_step.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/reshard.h"
#include "common/test_support.h"
#include "os/files.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::TempDir;

constexpr uint64_t kLogicalShards = 12;

RankCheckpoint RankFile(uint64_t rank, uint64_t world) {
  RankCheckpoint c;
  c.identity = {.corpus_fingerprint = "00112233445566778899aabbccddeeff",
                .seed = 3,
                .logical_shards = kLogicalShards,
                .seq_len = 64,
                .eos_id = 9,
                .datasets = {"a", "b"}};
  c.weights = {0.5, 0.5};
  c.schedule = MixSchedule::Constant(c.weights);
  c.world = world;
  c.rank = rank;
  c.run = "9b2c00000000000000000000000000aa";
  c.state = InitialRankState(2, kLogicalShards, world, rank);
  c.state.step = 7;
  return c;
}

// Writes a step folder of `world` rank files, rank `odd` changed by `change` (if given).
std::string WriteStep(const std::string& dir, uint64_t world, uint64_t odd = 0,
                      const std::function<void(RankCheckpoint*)>& change = {}) {
  for (uint64_t r = 0; r < world; ++r) {
    RankCheckpoint c = RankFile(r, world);
    if (change && r == odd) change(&c);
    WriteCheckpointFile(CheckpointPath(dir, r, world), c);
  }
  return dir;
}

template <typename E>
void ExpectRefused(const std::function<void()>& f, const std::string& says) {
  try {
    f();
    ADD_FAILURE() << "not refused; expected: " << says;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(CheckpointStep, OneCheckpointLoadsWithItsIdentity) {
  TempDir tmp;
  const std::string dir = WriteStep(tmp.path() + "/step-7", 3);
  const CheckpointStep step = OpenCheckpointStep(dir);
  EXPECT_EQ(step.step, 7u);
  EXPECT_EQ(step.world, 3u);
  EXPECT_EQ(step.identity, RankFile(0, 3).identity);
  EXPECT_EQ(step.run, RankFile(0, 3).run);
  EXPECT_EQ(step.weights, RankFile(0, 3).weights);
  for (uint64_t r = 0; r < 3; ++r) EXPECT_EQ(ReadStepRank(step, r), RankFile(r, 3));
}

TEST(CheckpointStep, AMissingFolderRankFileOrRequiredFileIsNamed) {
  TempDir tmp;
  const std::string dir = WriteStep(tmp.path() + "/step-7", 3);
  std::filesystem::remove(CheckpointPath(dir, 1, 3));
  ExpectRefused<ConfigError>([&] { OpenCheckpointStep(dir); },
                             CheckpointPath(dir, 1, 3) + " is missing");
  const std::string whole = WriteStep(tmp.path() + "/step-8", 2);
  ExpectRefused<ConfigError>([&] { OpenCheckpointStep(whole, {"model.pt"}); },
                             "model.pt is missing");
  std::filesystem::create_directory(whole + "/model.pt");  // not a regular file
  ExpectRefused<ConfigError>([&] { OpenCheckpointStep(whole, {"model.pt"}); },
                             "model.pt is missing");
  ExpectRefused<ConfigError>([&] { OpenCheckpointStep(tmp.path() + "/nothing"); },
                             "nothing is missing: no such folder");
  WriteFileAtomically(tmp.path() + "/a-file", "");
  ExpectRefused<ConfigError>([&] { OpenCheckpointStep(tmp.path() + "/a-file"); },
                             "a-file is missing: not a folder");
  std::filesystem::create_directory(tmp.path() + "/empty");
  ExpectRefused<ConfigError>(
      [&] { OpenCheckpointStep(tmp.path() + "/empty"); },
      "empty is incomplete: " + tmp.path() + "/empty/loader holds no rank files");
}

// The run session records the trainer's files in trainer.files: a step lacking one of them is
// incomplete without anyone naming them, and a record cannot point outside the step folder.
TEST(CheckpointStep, FilesTheTrainerRecordedAreRequired) {
  TempDir tmp;
  const std::string dir = WriteStep(tmp.path() + "/step-7", 2);
  WriteFileAtomically(TrainerFilesPath(dir), "model.pt\n\nsub/optimizer.pt\n");
  EXPECT_EQ(ParseTrainerFiles("model.pt\n\nsub/optimizer.pt\n"),
            (std::vector<std::string>{"model.pt", "sub/optimizer.pt"}));
  ExpectRefused<ConfigError>([&] { OpenCheckpointStep(dir); }, "model.pt is missing");
  WriteFileAtomically(dir + "/model.pt", "m");
  ExpectRefused<ConfigError>([&] { OpenCheckpointStep(dir); }, "sub/optimizer.pt is missing");
  WriteFileAtomically(dir + "/sub/optimizer.pt", "o");
  EXPECT_EQ(OpenCheckpointStep(dir).step, 7u);
  EXPECT_TRUE(DescribeStepFolder(dir, {"model.pt"}).complete());  // named twice: once
  WriteFileAtomically(TrainerFilesPath(dir), "model.pt\n../elsewhere\n");
  ExpectRefused<ConfigError>([&] { OpenCheckpointStep(dir); },
                             "names ../elsewhere, outside the step folder");
}

TEST(CheckpointStep, RankFilesOfAnotherCheckpointAreRefusedNamingTheFile) {
  TempDir tmp;
  struct Case {
    std::function<void(RankCheckpoint*)> change;
    std::string says;
    bool other_run = false;  // a file of another save: ConfigError, the others DataError
  };
  const std::vector<Case> cases = {
      {[](RankCheckpoint* c) { c->identity.seed = 4; }, "seed: checkpoint 3, now 4"},
      {[](RankCheckpoint* c) { c->state.step = 8; }, "holds step 8, but rank file 0"},
      {[](RankCheckpoint* c) { c->run = "4f3a00000000000000000000000000bb"; },
       "was saved by another run than rank-00000-of-00003.ckpt of the same step folder (run "
       "4f3a00000000000000000000000000bb, step 7; rank file 0: run "
       "9b2c00000000000000000000000000aa, step 7)",
       true},
      {[](RankCheckpoint* c) {
         c->run = "4f3a00000000000000000000000000bb";
         c->state.step = 8;
       },
       "(run 4f3a00000000000000000000000000bb, step 8; rank file 0: run "
       "9b2c00000000000000000000000000aa, step 7)",
       true},
      {[](RankCheckpoint* c) { c->run.clear(); },
       "(no run identity (file format 1 or 2), step 7; rank file 0: run "
       "9b2c00000000000000000000000000aa, step 7)",
       true},
      {[](RankCheckpoint* c) {
         c->state.shards = {8, 12};
       },
       "holds logical shards [8, 12), but rank 1 of 3 owns [4, 8)"}};
  int k = 0;
  for (const Case& c : cases) {
    const std::string dir = WriteStep(tmp.path() + "/case-" + std::to_string(k++), 3, 1, c.change);
    const CheckpointStep step = OpenCheckpointStep(dir);
    for (const std::string& says : {CheckpointPath(dir, 1, 3), c.says}) {
      if (c.other_run) {
        ExpectRefused<ConfigError>([&] { ReadStepRank(step, 1); }, says);
      } else {
        ExpectRefused<DataError>([&] { ReadStepRank(step, 1); }, says);
      }
    }
  }
}

// The newest step a resume can go on from: a newer one with a truncated or corrupt rank file is
// passed over, naming it; one with a rank file of another run is refused; none complete is none.
TEST(CheckpointStep, TheNewestResumableStepHasEveryRankFileRead) {
  TempDir tmp;
  const std::string ck = tmp.path() + "/ck";
  WriteStep(ck + "/step-5", 3);
  const std::string newest = WriteStep(ck + "/step-7", 3);
  EXPECT_EQ(NewestResumableStep(ck)->path, newest);
  const std::string rank1 = CheckpointPath(newest, 1, 3);
  const std::string whole = ReadFile(rank1);
  std::filesystem::resize_file(rank1, whole.size() - 1);
  EXPECT_EQ(NewestCompleteStep(ck)->path, newest) << "by names, still complete";
  EXPECT_EQ(NewestResumableStep(ck)->path, ck + "/step-5") << "a truncated rank file";
  WriteFileAtomically(rank1, whole);
  EXPECT_EQ(NewestResumableStep(ck)->path, newest);
  WriteStep(ck + "/step-7", 3, 2,
            [](RankCheckpoint* c) { c->run = "4f3a00000000000000000000000000bb"; });
  ExpectRefused<ConfigError>([&] { NewestResumableStep(ck); }, "was saved by another run");
  std::filesystem::remove(CheckpointPath(ck + "/step-5", 0, 3));
  std::filesystem::remove(CheckpointPath(ck + "/step-7", 0, 3));
  EXPECT_EQ(NewestResumableStep(ck), std::nullopt) << "step folders none of which is complete";
}

// Rank file 0 of another run: the other files are named as differing from it, with both runs.
TEST(CheckpointStep, ARankFileZeroOfAnotherRunIsNamedWithTheFileThatDiffers) {
  TempDir tmp;
  const std::string dir = WriteStep(tmp.path() + "/step-7", 3, 0, [](RankCheckpoint* c) {
    c->run = "4f3a00000000000000000000000000bb";
  });
  const CheckpointStep step = OpenCheckpointStep(dir);
  EXPECT_EQ(ReadStepRank(step, 0).run, "4f3a00000000000000000000000000bb");
  for (uint64_t r : {1, 2}) {
    ExpectRefused<ConfigError>(
        [&] { ReadStepRank(step, r); },
        CheckpointPath(dir, r, 3) + " was saved by another run than rank-00000-of-00003.ckpt");
    ExpectRefused<ConfigError>([&] { ReadStepRank(step, r); },
                               "rank file 0: run 4f3a00000000000000000000000000bb");
  }
}

// Where the other rank files outvote rank file 0 (3 ranks or more), the newest-step search names
// rank file 0 as the one of another run, not rank file 1.
TEST(CheckpointStep, TheNewestStepSearchNamesARankFileZeroOfAnotherRun) {
  TempDir tmp;
  const std::string ck = tmp.path() + "/ck";
  const std::string dir = WriteStep(
      ck + "/step-7", 3, 0, [](RankCheckpoint* c) { c->run = "4f3a00000000000000000000000000bb"; });
  ExpectRefused<ConfigError>(
      [&] { NewestResumableStep(ck); },
      CheckpointPath(dir, 0, 3) +
          " was saved by another run than the 2 "
          "other rank files of the same step "
          "folder (run 4f3a00000000000000000000000000bb, step 7; the others: run "
          "9b2c00000000000000000000000000aa, step 7)");
  const std::string two = WriteStep(
      ck + "/step-9", 2, 0, [](RankCheckpoint* c) { c->run = "4f3a00000000000000000000000000bb"; });
  ExpectRefused<ConfigError>([&] { NewestResumableStep(ck); }, CheckpointPath(two, 1, 2) +
                                                                   " was saved by another run than "
                                                                   "rank-00000-of-00002.ckpt");
}

// A step folder of `world` rank files as a stoker before run identities saved it (format 2).
std::string WriteStepWithoutRunIdentity(const std::string& dir, uint64_t world) {
  for (uint64_t r = 0; r < world; ++r) {
    RankCheckpoint c = RankFile(r, world);
    c.run.clear();
    WriteCheckpointFile(CheckpointPath(dir, r, world), c);
  }
  return dir;
}

// Files of format 1 or 2 carry no run identity: a step of them all reads as before.
TEST(CheckpointStep, FilesWithoutARunIdentityAreOneSaveAsBefore) {
  TempDir tmp;
  const std::string dir = WriteStepWithoutRunIdentity(tmp.path() + "/step-7", 3);
  const CheckpointStep step = OpenCheckpointStep(dir);
  EXPECT_TRUE(step.run.empty());
  for (uint64_t r = 0; r < 3; ++r) EXPECT_TRUE(ReadStepRank(step, r).run.empty());
}

// A reshard makes one save: its rank files keep the run identity of the step they are made from;
// a step without one gets a new one, the same in every new file.
TEST(CheckpointStep, AReshardWritesOneRunIdentity) {
  TempDir tmp;
  const std::string out = tmp.path() + "/two/step-7";
  ReshardCheckpoint(WriteStep(tmp.path() + "/step-7", 3), 2, out);
  const CheckpointStep kept = OpenCheckpointStep(out);
  EXPECT_EQ(kept.run, RankFile(0, 3).run);
  EXPECT_EQ(ReadStepRank(kept, 1).run, kept.run);
  const std::string old_out = tmp.path() + "/old-two/step-7";
  ReshardCheckpoint(WriteStepWithoutRunIdentity(tmp.path() + "/old/step-7", 3), 2, old_out);
  const CheckpointStep drawn = OpenCheckpointStep(old_out);
  EXPECT_EQ(drawn.run.size(), 32u);
  EXPECT_NE(drawn.run, kept.run);
  EXPECT_EQ(ReadStepRank(drawn, 1).run, drawn.run);
}

TEST(CheckpointStep, RankFileZeroIsCheckedAlone) {
  TempDir tmp;
  const std::string dir = WriteStep(tmp.path() + "/step-7", 2, 0, [](RankCheckpoint* c) {
    c->state.shards = {6, 12};
  });
  ExpectRefused<DataError>([&] { OpenCheckpointStep(dir); }, "but rank 0 of 2 owns [0, 6)");
}

}  // namespace
}  // namespace stoker
