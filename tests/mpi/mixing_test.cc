// Weights that change during a run (LoaderConfig::weight_schedule, Loader::SetWeights), at 1, 2
// and 4 ranks, on a corpus of unique token values with three datasets:
// - each rank's tokens follow the schedule through jumps and along a ramp: a dataset's tokens
//   stay within a few documents of what the weights of their steps give it, from step 0 on;
// - a weight of 1e-9 gets no token over all ranks, and a weight ramped up from 0 starts when its
//   share has earned a document;
// - a resume on the same number of ranks goes on bit for bit when it falls before, at or after a
//   jump, and in the middle of a ramp;
// - over a chain of resumes on other rank counts that crosses a jump and a ramp, and changes the
//   schedule at a resume for the steps not yet run, every framed token of epoch 0 is delivered
//   exactly once (counted over every rank's pieces);
// - SetWeights after step S gives the stream a schedule with a jump at S gives, its save records
//   the change, and weights the corpus cannot follow are refused with the stream unchanged;
// - Loader::Shares counts each dataset's tokens over all ranks since the weights last changed
//   (and since step 0, through a resume on fewer ranks), beside the tokens the weights of their
//   steps promise, as the test counts them batch by batch.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
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
using testing::Stage;
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

// A rank's tokens of each dataset and those the schedule's weights give it, batch by batch (each
// batch's tokens at the weights of the step it was planned at).
struct ScheduleCount {
  std::vector<double> delivered = std::vector<double>(3, 0);
  std::vector<double> owed = std::vector<double>(3, 0);

  // Counts `batch`; false (reported) when a dataset strays beyond `bound` tokens.
  bool Add(const Batch& batch, const WeightSchedule& schedule, double bound, int rank) {
    const double tokens = static_cast<double>(batch.tokens.size());
    for (uint32_t d = 0; d < 3; ++d) {
      delivered[d] += static_cast<double>(batch.dataset_tokens[d]);
      owed[d] += tokens * ScheduledWeight(schedule, batch.step - 1, d);
      if (std::abs(delivered[d] - owed[d]) > bound) {
        ADD_FAILURE() << "rank " << rank << ", dataset " << kNames[d] << " at step " << batch.step
                      << ": " << delivered[d] << " tokens, the weights give " << owed[d];
        return false;
      }
    }
    return true;
  }
};

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

// From step 0 on, through the jumps and the ramp, per dataset: the tokens delivered and the
// tokens the weights of their steps give it (each batch's tokens at the weights of the step it
// was planned at). Nothing starts afresh: each rank's documents fall due by the clock of the
// whole schedule (mixing/lane.h), within about a document of it; the documents cut by a batch's
// end add one.
TEST_F(MixingTest, TokensFollowTheScheduleThroughJumpsAndAlongARamp) {
  const LoaderConfig config = Config();
  Loader loader(MPI_COMM_WORLD, config);
  const Stream stream = Pull(loader, 220);
  ExpectTokensMatchPieces(truth_, stream, loader);
  const WeightSchedule schedule = config.weight_schedule;
  const double bound = 5 * LongestDocument();
  ScheduleCount count;
  std::vector<double> tail(3, 0);
  for (const Batch& batch : stream) {
    const uint64_t step = batch.step - 1;  // the step it was planned at
    if (!count.Add(batch, schedule, bound, comm_.rank())) break;
    for (uint32_t d = 0; d < 3 && step >= 160; ++d) {
      tail[d] += static_cast<double>(batch.dataset_tokens[d]);
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

// A weight of 1e-9 beside three jumps and a ramp from 0 (mixing/mix_clock.h: nothing starts
// afresh at a change): over all ranks together, c gets its share of the tokens within one
// document (its share is far below one: no token), not a document a rank at every change; b,
// ramped up from 0, starts on no rank before its share over all ranks has earned the document it
// starts; every rank's tokens of a and b stay within a few documents of the clock throughout.
TEST_F(MixingTest, ATinyWeightGetsItsShareOverAllRanksAndARampFromZeroStartsWhenEarned) {
  const std::string tiny =
      "0:a=1,c=0.000000001;30:a=1,b=0,c=0.000000001;~90:a=1,b=1,c=0.000000001;"
      "100:a=3,b=1,c=0.000000001;140:a=1,b=3,c=0.000000001";
  const LoaderConfig config = Config(tiny);
  Loader loader(MPI_COMM_WORLD, config);
  const Stream stream = Pull(loader, 180);
  ExpectTokensMatchPieces(truth_, stream, loader);
  const WeightSchedule schedule = config.weight_schedule;
  const double step_tokens =
      static_cast<double>(comm_.size() * config.batch_size * (config.seq_len + 1));
  const double bound = 3 * LongestDocument();
  ScheduleCount count;
  double earned_b = 0;  // the clock of b over all ranks, by the end of the step
  bool b_started = false;
  for (const Batch& batch : stream) {
    const uint64_t step = batch.step - 1;
    earned_b += step_tokens * ScheduledWeight(schedule, step, 1);
    for (const DocPiece& p : batch.pieces) {
      if (p.dataset != 1 || p.first != 0 || b_started) continue;
      b_started = true;
      const double framed = static_cast<double>(truth_.length[1][p.doc] + 1);
      EXPECT_GE(earned_b, framed) << "rank " << comm_.rank() << " started b at step " << step
                                  << " before its share had earned the document";
    }
    if (!count.Add(batch, schedule, bound, comm_.rank())) break;
  }
  EXPECT_TRUE(b_started) << "rank " << comm_.rank() << ": b never started";
  std::vector<double> c = {count.delivered[2], count.owed[2]};
  comm_.SumInPlace(std::span<double>(c));
  const double all_c = c[0], owed_c = c[1];
  double longest_c = 0;
  for (uint64_t n : truth_.length[2]) longest_c = std::max(longest_c, static_cast<double>(n + 1));
  EXPECT_LE(all_c, owed_c + longest_c) << "c, of weight 1e-9, over all ranks";
  EXPECT_EQ(all_c, 0.0) << "c's share of " << owed_c << " tokens is far below a document";
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

TEST_F(MixingTest, EveryTokenOnceOverResumesOnOtherRankCountsAcrossChanges) {
  const int w = comm_.size();
  const int fewer = std::max(1, w - 1);
  // Saved before the jump at 40, resumed across it and the one at 100; the ramp changed at the
  // third resume (steps not yet run); the last stage on one rank reads to the end of epoch 0.
  const std::string changed = "0:a=0.6,b=0.3,c=0.1;40:a=0.1,b=0.2,c=0.7;100:b=1;~170:a=1,b=1,c=1";
  const std::vector<Stream> streams = {
      Stage(comm_, truth_, Config(), w, "", 30, dir_ / "chain/one/step-30"),
      Stage(comm_, truth_, Config(), fewer, dir_ / "chain/one/step-30", 120,
            dir_ / "chain/two/step-120"),
      Stage(comm_, truth_, Config(changed), w, dir_ / "chain/two/step-120", 150,
            dir_ / "chain/three/step-150"),
      Stage(comm_, truth_, Config(changed), 1, dir_ / "chain/three/step-150", 0, ""),
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

// A rank's tokens of each dataset from some step on, and those the weights of their steps give
// it, as Loader::Shares counts them over all ranks.
struct SharesCount {
  uint64_t from = 0;
  std::vector<uint64_t> tokens = std::vector<uint64_t>(3, 0);
  std::vector<double> promised = std::vector<double>(3, 0);

  void Add(const Batch& batch, const WeightSchedule& schedule) {
    uint64_t all = 0;
    for (uint32_t d = 0; d < 3; ++d) all += batch.dataset_tokens[d];
    for (uint32_t d = 0; d < 3; ++d) {
      tokens[d] += batch.dataset_tokens[d];
      promised[d] += static_cast<double>(all) * ScheduledWeight(schedule, batch.step - 1, d);
    }
  }
  // The sums over `comm` (collective).
  SharesCount Over(const mpi::Comm& comm) const {
    SharesCount sum = *this;
    comm.SumInPlace(std::span<uint64_t>(sum.tokens));
    comm.SumInPlace(std::span<double>(sum.promised));
    return sum;
  }
};

void ExpectShares(const MixingShares& got, const SharesCount& want, uint64_t to,
                  const std::string& what) {
  EXPECT_EQ(got.from_step, want.from) << what << " at step " << to;
  EXPECT_EQ(got.to_step, to) << what;
  EXPECT_EQ(got.datasets, kNames) << what;
  EXPECT_EQ(got.tokens, want.tokens) << what << " at step " << to;
  for (uint32_t d = 0; d < 3; ++d) {
    EXPECT_NEAR(got.promised[d], want.promised[d], 1e-6 * (1 + want.promised[d]))
        << what << " at step " << to << ", dataset " << kNames[d];
  }
}

// Loader::Shares against the test's own count over all ranks, batch by batch: since the entry in
// force (jumps at 40 and 100, 130 where the ramp to 160 starts, 160, a SetWeights at 210), and
// since step 0; its text adds the promised shares along the ramp only. Resumed on fewer ranks
// (a rescale) at 220: since step 0 still, the first run's batches included (the change at 210
// came before this loader), until a jump at 225 it delivers. The gap since step 0 stays within
// the documents the mixer may lead by.
TEST_F(MixingTest, SharesCountSinceTheWeightsLastChangedOverAllRanks) {
  LoaderConfig config = Config();
  WeightSchedule schedule = config.weight_schedule;
  const std::vector<uint64_t> changes = {0, 40, 100, 130, 160, 210};
  SharesCount part, run;
  {
    Loader loader(MPI_COMM_WORLD, config);
    for (uint64_t step = 0; step < 220; ++step) {
      if (step == 210) {
        loader.SetWeights({{"a", 0.5}, {"c", 0.5}});
        schedule = loader.schedule();
      }
      if (std::find(changes.begin(), changes.end(), step) != changes.end()) part = {.from = step};
      const Batch batch = *loader.Next();
      part.Add(batch, schedule);
      run.Add(batch, schedule);
      if ((step + 1) % 15 != 0 && step + 1 != 220) continue;
      ExpectShares(loader.Shares(), part.Over(comm_), step + 1, "since the weights last changed");
      ExpectShares(loader.Shares(true), run.Over(comm_), step + 1, "since step 0");
      const std::string text = loader.Shares().Text();
      EXPECT_EQ(text.find("| promised ") != std::string::npos, step >= 130 && step < 159) << text;
      testing::ExpectMentions(text, fmt::format("shares since step {} ", part.from));
    }
    EXPECT_LE(loader.Shares(true).LargestGap(), 5 * LongestDocument() * comm_.size());
    SaveAll(loader, dir_ / "shares/step-220");
  }
  comm_.Barrier();

  // Fewer ranks, and a jump at 225 added for the steps not yet run.
  const int fewer = std::max(1, comm_.size() - 1);
  schedule.push_back({.step = 225, .ramp = false, .weights = {{"b", 1}}});
  config.weight_schedule = schedule;
  config.resume_from = dir_ / "shares/step-220";
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, comm_.rank() < fewer ? 0 : MPI_UNDEFINED, comm_.rank(), &sub);
  std::optional<Loader> resumed;
  if (sub != MPI_COMM_NULL) resumed.emplace(sub, config);
  SharesCount jumped{.from = 225};
  for (uint64_t step = 220; step < 230; ++step) {
    if (resumed) {
      const Batch batch = *resumed->Next();
      run.Add(batch, schedule);
      if (step >= 225) jumped.Add(batch, schedule);
    }
    if (step != 224 && step != 229) continue;
    const SharesCount since_zero = run.Over(comm_), since_jump = jumped.Over(comm_);
    if (!resumed) continue;
    const std::string what = fmt::format("resumed on {} ranks", fewer);
    ExpectShares(resumed->Shares(), step == 224 ? since_zero : since_jump, step + 1, what);
    ExpectShares(resumed->Shares(true), since_zero, step + 1, what + ", since step 0");
  }
  resumed.reset();
  if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
}

}  // namespace
}  // namespace stoker
