// Loader checkpoints at 1, 2 and 4 ranks, on a corpus of unique token values with three datasets
// mixed by weight: a resume at the same world size is bit-exact after 0, 1, 10 and 100 steps;
// FindResumeStep takes the newest complete step and passes over a newer incomplete one; a
// checkpoint of another corpus, seed, logical-shard count, seq_len or EOS/BOS is refused on every
// rank with one message that says what differs, and a missing, truncated or bit-flipped rank file
// with one that names it; weights may change at a resume and then rule; and across rescales (the
// MPI collective, and the offline ReshardCheckpoint, which must agree bit for bit) every framed
// token of epoch 0 is delivered exactly once. Resumed on fewer ranks, a rank delivers the rests
// of documents several ranks began, one after another, and the document boundary fields still
// follow the pieces.
//
// Batch::pieces say which framed positions of which document each batch holds; every batch's
// tokens are checked against them (the values of a document are consecutive integers), and
// exactly-once is counted over the pieces of every rank, before and after the rescale.
#include "stoker/checkpoint.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/reshard.h"
#include "common/boundary_reference.h"
#include "common/loader_streams.h"
#include "common/test_support.h"
#include "mpi/comm.h"
#include "os/posix_io.h"
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#include "tools/synth.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::ExpectEpochZeroExactlyOnce;
using testing::ExpectSameStream;
using testing::ExpectTokensMatchPieces;
using testing::Pull;
using testing::PullPastEpochZero;
using testing::ReadTruth;
using testing::Stream;
using testing::Truth;

// Collective. Constructing a loader of `config` must fail on every rank with Kind, marked
// collective, the same message everywhere, mentioning every one of `words`.
template <typename Kind>
void ExpectRefused(const mpi::Comm& comm, const LoaderConfig& config,
                   const std::vector<std::string>& words) {
  std::string message;
  try {
    Loader loader(MPI_COMM_WORLD, config);
    ADD_FAILURE() << "resuming from " << config.resume_from << " was accepted";
  } catch (const Kind& e) {
    message = e.what();
    EXPECT_TRUE(e.collective()) << message;
  } catch (const std::exception& e) {
    message = e.what();
    ADD_FAILURE() << "not the expected kind of error: " << message;
  }
  for (const auto& word : words) testing::ExpectMentions(message, word);
  const std::vector<std::string> all = comm.AllGather(message);
  for (size_t r = 0; r < all.size(); ++r) EXPECT_EQ(all[r], message) << "rank " << r;
}

void FlipBit(const std::string& path, size_t byte) {
  std::string bytes = testing::ReadFileBytes(path);
  bytes.at(byte) = static_cast<char>(bytes[byte] ^ 0x10);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SynthSpec spec;
    spec.out = dir_ / "corpus";
    spec.datasets = {{"a", 12000, 60}, {"b", 8000, 150}, {"c", 3000, 20}};
    spec.files = 2;
    spec.seed = 21;
    spec.unique_tokens = true;
    SynthesizeCorpus(comm_, spec);
    truth_ = ReadTruth(comm_, spec.out);
  }
  LoaderConfig Config() const {
    LoaderConfig config;
    config.data = dir_ / "corpus";
    config.weights = {{"a", 0.5}, {"b", 0.3}, {"c", 0.2}};
    config.seq_len = 64;
    config.batch_size = 2;
    config.seed = 7;
    config.logical_shards = 37;
    return config;
  }
  // Rank 0 runs `make` (file surgery, offline resharding); every rank fails together.
  void OnRankZero(const std::function<void()>& make) { testing::OnRankZero(comm_, make); }
  // Every rank saves `step_dir` and waits for its file; the barrier makes the step complete for
  // all before anyone looks at it (as a trainer's barrier after saving its model would).
  void SaveAll(Loader& loader, const std::string& step_dir) {
    loader.Save(step_dir);
    loader.WaitForSave();
    comm_.Barrier();
  }

  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
  Truth truth_;
};

TEST_F(CheckpointTest, ResumeAtTheSameWorldSizeIsBitExactAfter0_1_10And100Steps) {
  LoaderConfig with_bos = Config();
  with_bos.seq_len = 100;
  with_bos.batch_size = 3;
  with_bos.bos_id = truth_.tokens + 1;
  with_bos.logical_shards = LoaderConfig().logical_shards;
  with_bos.weights = {{"a", 1}, {"b", 1}, {"c", 2}};
  with_bos.prefetch = 2;
  constexpr uint64_t kAfter = 20;  // batches compared after each resume
  int index = 0;
  for (const LoaderConfig& config : {Config(), with_bos}) {
    SCOPED_TRACE(fmt::format("seq_len {}, batch {}, BOS {}", config.seq_len, config.batch_size,
                             config.bos_id.has_value()));
    const std::string dir = dir_ / fmt::format("exact-{}", index++);
    Stream first;
    {
      Loader a(MPI_COMM_WORLD, config);
      for (uint64_t n : {0, 1, 10, 100}) {
        for (Batch& b : Pull(a, n - first.size())) first.push_back(std::move(b));
        EXPECT_EQ(a.step(), n);
        SaveAll(a, dir + "/" + StepFolderName(n));
      }
      for (Batch& b : Pull(a, kAfter)) first.push_back(std::move(b));
      ExpectTokensMatchPieces(truth_, first, a);
    }
    for (uint64_t n : {0, 1, 10, 100}) {
      LoaderConfig resumed = config;
      resumed.resume_from = dir + "/" + StepFolderName(n);
      Loader b(MPI_COMM_WORLD, resumed);
      EXPECT_EQ(b.step(), n) << "the resumed loader's step before its first batch";
      const Stream want(first.begin() + static_cast<ptrdiff_t>(n),
                        first.begin() + static_cast<ptrdiff_t>(std::min(n + kAfter, first.size())));
      ExpectSameStream(want, Pull(b, kAfter), fmt::format("resumed after {} steps", n),
                       comm_.rank());
    }
  }
}

// Loader::EncodedState and LoaderConfig::resume_state: a rank's state kept by the trainer, with
// no step folder, goes on bit for bit on as many ranks; another world size, another rank's state
// and states of two steps are refused on every rank, naming the problem.
TEST_F(CheckpointTest, AnEncodedStateResumesBitExactWithNoStepFolder) {
  Stream first;
  std::vector<std::string> states;  // after 0, 3 and 17 batches
  {
    Loader a(MPI_COMM_WORLD, Config());
    for (uint64_t n : {0, 3, 17}) {
      for (Batch& b : Pull(a, n - first.size())) first.push_back(std::move(b));
      states.push_back(a.EncodedState());
    }
    for (Batch& b : Pull(a, 10)) first.push_back(std::move(b));
  }
  for (size_t i = 0; i < states.size(); ++i) {
    const uint64_t n = std::vector<uint64_t>{0, 3, 17}[i];
    LoaderConfig resumed = Config();
    resumed.resume_state = states[i];
    Loader b(MPI_COMM_WORLD, resumed);
    EXPECT_EQ(b.step(), n);
    const Stream want(first.begin() + static_cast<ptrdiff_t>(n),
                      first.begin() + static_cast<ptrdiff_t>(n + 10));
    ExpectSameStream(want, Pull(b, 10), fmt::format("resumed inline after {} steps", n),
                     comm_.rank());
  }
  const auto refused = [&](const std::string& state, const std::string& says) {
    LoaderConfig config = Config();
    config.resume_state = state;
    testing::ExpectCollectiveError<ConfigError>([&] { Loader c(MPI_COMM_WORLD, config); }, {says});
  };
  if (comm_.size() > 1) {
    const std::vector<std::string> all = comm_.AllGather(states[1]);
    refused(all[(comm_.rank() + 1) % comm_.size()], "was given the state of rank");
    refused(comm_.rank() == 0 ? states[1] : states[2], "are not of one step of one run");
  }
  // A state of one rank given alone to a world of one, from a run of more: another world size.
  MPI_Comm self = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, comm_.rank(), 0, &self);
  if (comm_.size() > 1) {
    LoaderConfig config = Config();
    config.resume_state = states[1];
    try {
      Loader d(self, config);
      ADD_FAILURE() << "a state of " << comm_.size() << " ranks resumed on one";
    } catch (const ConfigError& e) {
      testing::ExpectMentions(e.what(), "resume from the step folder of a save");
    }
  }
  MPI_Comm_free(&self);
}

// Rank 0 writes the corpus record's bytes at the first save of a run and links them at later
// ones (one file on disk); where no link can be made (a failing link) it writes them again.
// Either way every step holds the same record, and resumes.
TEST_F(CheckpointTest, TheCorpusRecordIsWrittenOnceARunAndLinkedAtLaterSaves) {
  Loader a(MPI_COMM_WORLD, Config());
  std::vector<std::string> steps;
  for (uint64_t n = 1; n <= 3; ++n) {
    ASSERT_TRUE(a.Next());
    steps.push_back(dir_ / StepFolderName(n));
    if (n == 3) {
      ScopedFaultPlan plan("link:corpus.table:*");
      SaveAll(a, steps.back());
    } else {
      SaveAll(a, steps.back());
    }
  }
  OnRankZero([&] {
    struct stat one {
    }, two{}, three{};
    ASSERT_EQ(::stat(CorpusRecordPath(steps[0]).c_str(), &one), 0);
    ASSERT_EQ(::stat(CorpusRecordPath(steps[1]).c_str(), &two), 0);
    ASSERT_EQ(::stat(CorpusRecordPath(steps[2]).c_str(), &three), 0);
    EXPECT_EQ(one.st_ino, two.st_ino) << "the second save wrote the record again";
    EXPECT_EQ(two.st_nlink, 2u);
    EXPECT_NE(three.st_ino, one.st_ino) << "a failing link made no file of its own";
    EXPECT_EQ(testing::ReadFileBytes(CorpusRecordPath(steps[2])),
              testing::ReadFileBytes(CorpusRecordPath(steps[0])));
  });
  LoaderConfig config = Config();
  config.resume_from = steps[1];
  Loader resumed(MPI_COMM_WORLD, config);
  EXPECT_EQ(resumed.step(), 2u);
}

TEST_F(CheckpointTest, FindResumeStepTakesTheNewestCompleteStep) {
  const std::string dir = dir_ / "ckpt";
  EXPECT_EQ(FindResumeStep(MPI_COMM_WORLD, dir), std::nullopt) << "no folder yet";
  Stream first;
  {
    Loader a(MPI_COMM_WORLD, Config());
    for (uint64_t step : {3, 6, 9}) {
      for (Batch& b : Pull(a, 3)) first.push_back(std::move(b));
      a.Save(dir + "/" + StepFolderName(step));
    }
    for (Batch& b : Pull(a, 5)) first.push_back(std::move(b));
    a.WaitForSave();
    comm_.Barrier();  // every rank's file is written before rank 0 looks
  }
  auto found = FindResumeStep(MPI_COMM_WORLD, dir);
  EXPECT_EQ(found ? fs::path(*found).filename().string() : "none", "step-9");
  // A save killed half-way through step 9; newer folders with nothing complete in them.
  OnRankZero([&] {
    const std::string newest = dir + "/step-9";
    const std::string victim = CheckpointPath(newest, comm_.size() - 1, comm_.size());
    if (comm_.size() == 1) {
      fs::rename(victim, victim + ".tmp");  // as a writer killed before its rename leaves it
    } else {
      fs::remove(victim);
    }
    fs::create_directories(dir + "/step-12/loader");
    fs::create_directories(dir + "/step-15");
    fs::create_directories(dir + "/step-x/loader");
    testing::WriteText(dir + "/step-18", "not a folder");
  });
  found = FindResumeStep(MPI_COMM_WORLD, dir);
  EXPECT_EQ(found ? fs::path(*found).filename().string() : "none", "step-6")
      << "the newest complete step is step-6: step-9 lacks a rank file";
  if (!found) return;
  LoaderConfig resumed = Config();
  resumed.resume_from = *found;
  Loader b(MPI_COMM_WORLD, resumed);
  EXPECT_EQ(b.step(), 6u);
  ExpectSameStream(Stream(first.begin() + 6, first.end()), Pull(b, first.size() - 6),
                   "resumed from the step FindResumeStep found", comm_.rank());
}

TEST_F(CheckpointTest, ACheckpointOfAnotherOrderIsRefusedSayingWhatDiffers) {
  const std::string step = dir_ / "ckpt/step-7";
  {
    Loader a(MPI_COMM_WORLD, Config());
    Pull(a, 7);
    SaveAll(a, step);
  }
  SynthSpec other;
  other.out = dir_ / "other";
  other.datasets = {{"a", 12000, 60}, {"b", 8000, 150}, {"c", 3000, 20}};
  other.files = 2;
  other.seed = 22;
  other.unique_tokens = true;
  SynthesizeCorpus(comm_, other);
  const int64_t eos = truth_.tokens;
  const std::vector<std::pair<std::function<void(LoaderConfig*)>, std::string>> cases = {
      {[&](LoaderConfig* c) { c->data = other.out; }, "corpus fingerprint: checkpoint "},
      {[](LoaderConfig* c) { c->seed = 8; }, "seed: checkpoint 7, now 8"},
      {[](LoaderConfig* c) { c->logical_shards = 41; }, "logical shards: checkpoint 37, now 41"},
      {[](LoaderConfig* c) { c->seq_len = 96; }, "seq_len: checkpoint 64, now 96"},
      {[&](LoaderConfig* c) { c->eos_id = eos - 5; },
       fmt::format("eos_id: checkpoint {}, now {}", eos, eos - 5)},
      {[](LoaderConfig* c) { c->bos_id = 3; }, "bos_id: checkpoint none, now 3"}};
  for (const auto& [change, says] : cases) {
    LoaderConfig config = Config();
    config.resume_from = step;
    change(&config);
    SCOPED_TRACE(says);
    ExpectRefused<ConfigError>(comm_, config, {says, "does not belong to this run"});
  }
  // The weights may change: no error.
  LoaderConfig reweighted = Config();
  reweighted.resume_from = step;
  reweighted.weights = {{"a", 1}, {"c", 1}};
  EXPECT_NO_THROW(Loader(MPI_COMM_WORLD, reweighted).Next());
}

TEST_F(CheckpointTest, AMissingTruncatedOrBitFlippedRankFileIsAnErrorNamingIt) {
  const int last = comm_.size() - 1;
  auto save = [&](const std::string& step) {
    Loader a(MPI_COMM_WORLD, Config());
    Pull(a, 5);
    SaveAll(a, step);
  };
  for (const char* name : {"missing", "truncated", "flipped", "rescaled"}) {
    save(dir_ / fmt::format("{}/step-5", name));
  }
  LoaderConfig config = Config();
  config.resume_from = dir_ / "nothing/step-5";
  ExpectRefused<ConfigError>(comm_, config, {"nothing/step-5 is missing: no such folder"});

  const std::string missing = CheckpointPath(dir_ / "missing/step-5", last, comm_.size());
  OnRankZero([&] { fs::remove(missing); });
  config.resume_from = dir_ / "missing/step-5";
  ExpectRefused<ConfigError>(comm_, config,
                             {"is incomplete", comm_.size() > 1 ? missing : "holds no rank files"});

  const std::string truncated = CheckpointPath(dir_ / "truncated/step-5", 0, comm_.size());
  OnRankZero([&] { fs::resize_file(truncated, fs::file_size(truncated) - 9); });
  config.resume_from = dir_ / "truncated/step-5";
  ExpectRefused<DataError>(comm_, config, {truncated, "not a valid stoker checkpoint"});

  const std::string flipped = CheckpointPath(dir_ / "flipped/step-5", last, comm_.size());
  OnRankZero([&] { FlipBit(flipped, fs::file_size(flipped) / 2); });
  config.resume_from = dir_ / "flipped/step-5";
  ExpectRefused<DataError>(comm_, config, {flipped, "not a valid stoker checkpoint"});

  // Read by another world size (rank k mod W reads old file k): the error still reaches all.
  const uint64_t wider = 2 * comm_.size() + 1;
  const std::string wide = CheckpointPath(dir_ / "wide/step-5", wider - 1, wider);
  OnRankZero([&] {
    ReshardCheckpoint(dir_ / "rescaled/step-5", wider, dir_ / "wide/step-5");
    FlipBit(wide, 21);
  });
  config.resume_from = dir_ / "wide/step-5";
  ExpectRefused<DataError>(comm_, config, {wide, "not a valid stoker checkpoint"});
}

TEST_F(CheckpointTest, NewWeightsRuleFromTheResumedStepOn) {
  const std::string step = dir_ / "ckpt/step-100";
  {
    Loader a(MPI_COMM_WORLD, Config());
    Pull(a, 100);
    SaveAll(a, step);
  }
  LoaderConfig config = Config();
  config.resume_from = step;
  config.weights = {{"a", 1}, {"b", 1}, {"c", 8}};
  const std::vector<double> weights = {0.1, 0.1, 0.8};
  Loader b(MPI_COMM_WORLD, config);
  for (uint32_t d = 0; d < 3; ++d) EXPECT_NEAR(b.weights().at(d), weights[d], 1e-12);
  const Stream after = Pull(b, 600);
  ExpectTokensMatchPieces(truth_, after, b);
  std::vector<double> tokens(3, 0);
  for (const Batch& batch : after) {
    for (uint32_t d = 0; d < 3; ++d) tokens[d] += static_cast<double>(batch.dataset_tokens[d]);
  }
  auto expect_shares = [&](const std::string& who) {
    const double all = tokens[0] + tokens[1] + tokens[2];
    for (uint32_t d = 0; d < 3; ++d) {
      EXPECT_NEAR(tokens[d] / all, weights[d], 0.03)
          << who << ", dataset " << d << ": share of the " << all
          << " tokens delivered after the resume (saved with weights 0.5, 0.3, 0.2)";
    }
  };
  expect_shares(fmt::format("rank {}", comm_.rank()));
  comm_.SumInPlace(tokens);
  expect_shares("all ranks");
}

TEST_F(CheckpointTest, RescaledThereAndBackEveryTokenOnceAndOfflineEqualsMpi) {
  const uint64_t wider = 2 * comm_.size() + 1;
  const std::string there = dir_ / "there/step-23", back = dir_ / "back/step-23";
  Stream before;
  {
    Loader a(MPI_COMM_WORLD, Config());
    before = Pull(a, 23);
    SaveAll(a, dir_ / "orig/step-23");
  }
  OnRankZero([&] {
    ReshardCheckpoint(dir_ / "orig/step-23", wider, there);
    ReshardCheckpoint(there, comm_.size(), back);
  });
  LoaderConfig config = Config();
  config.resume_from = back;
  Loader b(MPI_COMM_WORLD, config);
  EXPECT_EQ(b.step(), 23u);
  const Stream after = PullPastEpochZero(b, truth_);
  ExpectTokensMatchPieces(truth_, after, b);
  const uint64_t checked = ExpectEpochZeroExactlyOnce(
      comm_, truth_, false, {&before, &after},
      fmt::format("{} -> {} -> {} ranks, offline", comm_.size(), wider, comm_.size()));
  EXPECT_EQ(checked, static_cast<uint64_t>(truth_.tokens) + truth_.length[0].size() +
                         truth_.length[1].size() + truth_.length[2].size());
  // The MPI rescale from `there` (wider -> this world) gives the same stream as `back`.
  config.resume_from = there;
  Loader c(MPI_COMM_WORLD, config);
  EXPECT_EQ(c.step(), 23u);
  ExpectSameStream(after, Pull(c, after.size()),
                   fmt::format("MPI rescale {} -> {} vs offline", wider, comm_.size()),
                   comm_.rank());
}

TEST_F(CheckpointTest, FromFewerRanksOfflineReshardEqualsMpiRescaleAndEveryTokenOnce) {
  if (comm_.size() == 1) GTEST_SKIP() << "needs ranks to leave idle while fewer save";
  const int saving = comm_.size() - 1;
  const std::string original = dir_ / "orig/step-31", offline = dir_ / "offline/step-31";
  Stream before;
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, comm_.rank() < saving ? 0 : MPI_UNDEFINED, comm_.rank(), &sub);
  if (sub != MPI_COMM_NULL) {
    try {
      Loader a(sub, Config());
      before = Pull(a, 31);
      a.Save(original);
      a.WaitForSave();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "saving on " << saving << " ranks: " << e.what();
    }
    MPI_Comm_free(&sub);
  }
  comm_.Barrier();
  OnRankZero([&] { ReshardCheckpoint(original, comm_.size(), offline); });
  LoaderConfig config = Config();
  config.resume_from = original;
  Loader mpi_rescaled(MPI_COMM_WORLD, config);
  config.resume_from = offline;
  Loader resharded(MPI_COMM_WORLD, config);
  EXPECT_EQ(mpi_rescaled.step(), 31u);
  EXPECT_EQ(resharded.step(), 31u);
  const Stream after = PullPastEpochZero(mpi_rescaled, truth_);
  ExpectTokensMatchPieces(truth_, after, mpi_rescaled);
  ExpectSameStream(after, Pull(resharded, after.size()),
                   fmt::format("offline reshard {} -> {} vs MPI rescale", saving, comm_.size()),
                   comm_.rank());
  ExpectEpochZeroExactlyOnce(comm_, truth_, false, {&before, &after},
                             fmt::format("{} -> {} ranks", saving, comm_.size()));
}

// Saved on every rank, resumed on rank 0 alone: it takes over every rank's unfinished document,
// so pieces that go on with a document begin within rows as well as at row starts, and each is a
// sequence of its own in every field.
TEST_F(CheckpointTest, BoundaryFieldsFollowThePiecesOnFewerRanks) {
  if (comm_.size() == 1) GTEST_SKIP() << "needs more ranks to save than to resume";
  const std::string step_dir = dir_ / "wide/step-17";
  {
    Loader a(MPI_COMM_WORLD, Config());
    Pull(a, 17);
    SaveAll(a, step_dir);
  }
  MPI_Comm alone = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, comm_.rank() == 0 ? 0 : MPI_UNDEFINED, 0, &alone);
  if (alone != MPI_COMM_NULL) {
    try {
      LoaderConfig config = Config();
      config.resume_from = step_dir;
      config.boundaries = BoundaryFields::All(PositionIds::kContinue);
      Loader b(alone, config);
      const Stream after = Pull(b, 40);
      ExpectTokensMatchPieces(truth_, after, b);
      uint64_t rests_within_rows = 0;
      for (const Batch& batch : after) {
        testing::ExpectFields(
            batch.boundaries,
            testing::ReferenceBoundaries(testing::OwnersOf(batch), PositionIds::kContinue),
            config.boundaries);
        for (const DocPiece& p : batch.pieces) rests_within_rows += p.first > 0 && p.row_offset > 0;
      }
      EXPECT_GT(rests_within_rows, 0u) << "no rest of a document began within a row";
    } catch (const std::exception& e) {
      ADD_FAILURE() << "resuming on 1 rank: " << e.what();
    }
    MPI_Comm_free(&alone);
  }
  comm_.Barrier();
}

}  // namespace
}  // namespace stoker
