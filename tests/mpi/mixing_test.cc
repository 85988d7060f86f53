// Weights that change during a run (LoaderConfig::weight_schedule, Loader::SetWeights), at 1, 2
// and 4 ranks, on a corpus of unique token values with three datasets:
// - each rank's tokens follow the schedule through jumps and along a ramp: from each jump on, a
//   dataset's tokens stay within a few documents of what the weights of their steps give it;
// - a resume on the same number of ranks goes on bit for bit when it falls before, at or after a
//   jump, and in the middle of a ramp;
// - over a chain of resumes on other rank counts that crosses a jump and a ramp, and changes the
//   schedule at a resume for the steps not yet run, every framed token of epoch 0 is delivered
//   exactly once (counted over every rank's pieces);
// - SetWeights after step S gives the stream a schedule with a jump at S gives, its save records
//   the change, and weights the corpus cannot follow are refused with the stream unchanged.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/loader_streams.h"
#include "common/test_support.h"
#include "mpi/comm.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#include "stoker/weights.h"
#include "tools/synth.h"

namespace stoker {
namespace {

using testing::ExpectEpochZeroExactlyOnce;
using testing::ExpectSameStream;
using testing::ExpectTokensMatchPieces;
using testing::Pull;
using testing::PullPastEpochZero;
using testing::Stream;
using testing::Truth;

// Jumps at 40 and 100, b alone until 130, a ramp from 130 to 160, then constant.
const char* const kSchedule =
    "0:a=0.6,b=0.3,c=0.1;40:a=0.1,b=0.2,c=0.7;100:b=1;130:b=1;~160:a=0.4,c=0.6";
const std::vector<std::string> kNames = {"a", "b", "c"};

// The schedule's weight of dataset `d` at `step`, normalized, written apart from the loader's
// code from the rule: an entry rules from its step on; the entry after it, if a ramp, takes the
// weights linearly to its own, reached at its step.
double ScheduledWeight(const WeightSchedule& schedule, uint64_t step, uint32_t d) {
  const auto normalized = [&](size_t k) {
    double total = 0;
    for (const auto& [name, w] : schedule[k].weights) total += w;
    const auto it = schedule[k].weights.find(kNames[d]);
    return it == schedule[k].weights.end() ? 0.0 : it->second / total;
  };
  size_t k = 0;
  while (k + 1 < schedule.size() && schedule[k + 1].step <= step) ++k;
  if (k + 1 == schedule.size() || !schedule[k + 1].ramp) return normalized(k);
  const double t = static_cast<double>(step - schedule[k].step) /
                   static_cast<double>(schedule[k + 1].step - schedule[k].step);
  return (1 - t) * normalized(k) + t * normalized(k + 1);
}

class MixingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SynthSpec spec;
    spec.out = dir_ / "corpus";
    spec.datasets = {{"a", 60000, 40}, {"b", 40000, 60}, {"c", 20000, 20}};
    spec.files = 2;
    spec.seed = 5;
    spec.unique_tokens = true;
    SynthesizeCorpus(comm_, spec);
    truth_ = testing::ReadTruth(comm_, spec.out);
  }
  LoaderConfig Config(const std::string& schedule = kSchedule) const {
    LoaderConfig config;
    config.data = dir_ / "corpus";
    config.weight_schedule = ParseWeightSchedule(schedule);
    config.seq_len = 127;
    config.batch_size = 4;
    config.seed = 3;
    config.logical_shards = 41;
    return config;
  }
  void SaveAll(Loader& loader, const std::string& step_dir) {
    loader.Save(step_dir);
    loader.WaitForSave();
  }
  // The longest framed document of the corpus.
  double LongestDocument() const {
    uint64_t longest = 0;
    for (const auto& lengths : truth_.length) {
      for (uint64_t n : lengths) longest = std::max(longest, n + 1);
    }
    return static_cast<double>(longest);
  }

  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
  Truth truth_;
};

// From each jump (and the ramp's first step, where a and c are read again) on, per dataset: the
// tokens delivered and the tokens the weights of their steps give it (each batch's tokens at the
// weights of the step it was planned at). The mixer
// keeps a dataset within one document ahead and one document of each other dataset behind; the
// documents cut by a batch's end at either side of the window add one each.
TEST_F(MixingTest, TokensFollowTheScheduleThroughJumpsAndAlongARamp) {
  const LoaderConfig config = Config();
  Loader loader(MPI_COMM_WORLD, config);
  const Stream stream = Pull(loader, 220);
  ExpectTokensMatchPieces(truth_, stream, loader);
  const WeightSchedule schedule = config.weight_schedule;
  const double bound = 5 * LongestDocument();
  std::vector<double> delivered(3, 0), owed(3, 0), tail(3, 0);
  for (const Batch& batch : stream) {
    const uint64_t step = batch.step - 1;                           // the step it was planned at
    if (step == 40 || step == 100 || step == 130 || step == 131) {  // the deficits start afresh
      std::fill(delivered.begin(), delivered.end(), 0.0);
      std::fill(owed.begin(), owed.end(), 0.0);
    }
    const double tokens = static_cast<double>(batch.tokens.size());
    for (uint32_t d = 0; d < 3; ++d) {
      delivered[d] += static_cast<double>(batch.dataset_tokens[d]);
      owed[d] += tokens * ScheduledWeight(schedule, step, d);
      ASSERT_LE(std::abs(delivered[d] - owed[d]), bound)
          << "rank " << comm_.rank() << ", dataset " << kNames[d] << " at step " << batch.step;
      if (step >= 160) tail[d] += static_cast<double>(batch.dataset_tokens[d]);
    }
    // Weight 0 is never read: no document of a or c starts from step 100 to the ramp's start.
    for (const DocPiece& p : batch.pieces) {
      if (step >= 100 && step < 130 && p.first == 0) {
        EXPECT_EQ(p.dataset, 1u) << "rank " << comm_.rank() << ", step " << batch.step;
      }
    }
  }
  // After the ramp, 60 steps of constant weights: the shares are the weights.
  const double all = tail[0] + tail[1] + tail[2];
  EXPECT_NEAR(tail[0] / all, 0.4, 0.03) << "rank " << comm_.rank();
  EXPECT_NEAR(tail[2] / all, 0.6, 0.03) << "rank " << comm_.rank();
  EXPECT_EQ(loader.step(), 220u);
  EXPECT_NEAR(loader.weights()[0], 0.4, 1e-12);
}

TEST_F(MixingTest, SameSizeResumeIsBitExactBeforeAtAndAfterAJumpAndInARamp) {
  Stream reference;
  {
    Loader loader(MPI_COMM_WORLD, Config());
    for (uint64_t step : {39, 40, 41, 130, 145}) {
      Stream part = Pull(loader, step - loader.step());
      reference.insert(reference.end(), part.begin(), part.end());
      SaveAll(loader, dir_ / fmt::format("ckpt/step-{}", step));
    }
    Stream rest = Pull(loader, 180 - loader.step());
    reference.insert(reference.end(), rest.begin(), rest.end());
  }
  comm_.Barrier();
  for (uint64_t step : {39, 40, 41, 130, 145}) {
    LoaderConfig config = Config();
    config.resume_from = dir_ / fmt::format("ckpt/step-{}", step);
    Loader resumed(MPI_COMM_WORLD, config);
    EXPECT_EQ(resumed.step(), step);
    const Stream after = Pull(resumed, 180 - step);
    const Stream want(reference.begin() + static_cast<std::ptrdiff_t>(step), reference.end());
    ExpectSameStream(want, after, fmt::format("resumed at step {}", step), comm_.rank());
  }
}

// One stage of a chain: ranks [0, ranks) resume from `from` (empty: start), pull to `to` (or
// past epoch 0 when 0) and save to `save`; the other ranks wait. Returns this rank's batches.
Stream Stage(const mpi::Comm& world, const LoaderConfig& base, int ranks, const std::string& from,
             uint64_t to, const std::string& save) {
  Stream stream;
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world.rank() < ranks ? 0 : MPI_UNDEFINED, world.rank(), &sub);
  if (sub != MPI_COMM_NULL) {
    try {
      LoaderConfig config = base;
      config.resume_from = from;
      Loader loader(sub, config);
      stream = to == 0 ? PullPastEpochZero(loader) : Pull(loader, to - loader.step());
      if (!save.empty()) {
        loader.Save(save);
        loader.WaitForSave();
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "stage on " << ranks << " ranks from '" << from << "': " << e.what();
    }
    MPI_Comm_free(&sub);
  }
  world.Barrier();
  return stream;
}

TEST_F(MixingTest, EveryTokenOnceOverResumesOnOtherRankCountsAcrossChanges) {
  const int w = comm_.size();
  const int fewer = std::max(1, w - 1);
  // Saved before the jump at 40, resumed across it and the one at 100; the ramp changed at the
  // third resume (steps not yet run); the last stage on one rank reads to the end of epoch 0.
  const std::string changed = "0:a=0.6,b=0.3,c=0.1;40:a=0.1,b=0.2,c=0.7;100:b=1;~170:a=1,b=1,c=1";
  const std::vector<Stream> streams = {
      Stage(comm_, Config(), w, "", 30, dir_ / "chain/one/step-30"),
      Stage(comm_, Config(), fewer, dir_ / "chain/one/step-30", 120, dir_ / "chain/two/step-120"),
      Stage(comm_, Config(changed), w, dir_ / "chain/two/step-120", 150,
            dir_ / "chain/three/step-150"),
      Stage(comm_, Config(changed), 1, dir_ / "chain/three/step-150", 0, ""),
  };
  std::vector<const Stream*> all;
  for (const Stream& s : streams) all.push_back(&s);
  ExpectEpochZeroExactlyOnce(
      comm_, truth_, false, all,
      fmt::format("{} -> {} -> {} -> 1 ranks across a jump, a ramp and a changed schedule", w,
                  fewer, w));
}

TEST_F(MixingTest, SetWeightsIsAJumpAtTheNextBatchAndItsSaveRecordsIt) {
  const std::string jump = "0:a=0.6,b=0.3,c=0.1;25:a=0.2,c=0.8";
  Stream want;
  {
    Loader scheduled(MPI_COMM_WORLD, Config(jump));
    want = Pull(scheduled, 60);
  }
  LoaderConfig config = Config("0:a=0.6,b=0.3,c=0.1");
  Loader set(MPI_COMM_WORLD, config);
  Stream got = Pull(set, 25);
  try {
    set.SetWeights({{"a", 1}, {"nope", 1}});
    ADD_FAILURE() << "SetWeights accepted an unknown dataset";
  } catch (const ConfigError& e) {
    testing::ExpectMentions(e.what(), "nope");
  }
  set.SetWeights({{"a", 0.2}, {"c", 0.8}});
  const Stream more = Pull(set, 35);
  got.insert(got.end(), more.begin(), more.end());
  ExpectSameStream(want, got, "SetWeights after step 25 vs a jump at 25", comm_.rank());
  const WeightSchedule schedule = set.schedule();
  ASSERT_EQ(schedule.size(), 2u);
  EXPECT_EQ(schedule[1].step, 25u);
  EXPECT_DOUBLE_EQ(schedule[1].weights.at("c"), 0.8);

  // Saved after the change, resumed with the schedule that has the jump: bit for bit.
  SaveAll(set, dir_ / "set/step-60");
  comm_.Barrier();
  const Stream tail = Pull(set, 20);
  config = Config(jump);
  config.resume_from = dir_ / "set/step-60";
  Loader resumed(MPI_COMM_WORLD, config);
  ExpectSameStream(tail, Pull(resumed, 20), "resumed after SetWeights", comm_.rank());
}

}  // namespace
}  // namespace stoker
