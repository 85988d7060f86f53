// Epochs of the dataset over all ranks (LoaderConfig::deal_max_docs), in one job of 7 ranks that
// runs loaders on its first 1 to 7. The corpus: a dataset of 14 documents of 100 to 1,500 tokens
// at weight 0.5 beside one of 3,000 short ones, every token value unique. Deliveries are counted
// over every rank's pieces (each batch's tokens checked against them): a document is delivered
// when a piece of its framed position 0 is.
//   - The small dataset dealt, the large one walked, at 1 to 7 ranks with 7, 16 and 65,536
//     logical shards, four epochs of the small one: at the end of every step no document of the
//     small dataset has been delivered a (k + 2)-th time while another has been delivered fewer
//     than k times, and its tokens over all ranks stay within a few documents of half of all.
//   - A chain 4 -> 3 -> 7 -> 2 with every save inside an epoch of the small dataset: the same
//     bound at every step across the chain, and every framed token of epoch 0 once.
//   - Walked (deal_max_docs 0) at 7 ranks and 16 logical shards, where ranks own 1 to 3 of the 14
//     documents, the bound breaks: what dealing is for, and that the count can fail.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/loader_streams.h"
#include "common/test_support.h"
#include "mpi/comm.h"
#include "stoker/loader.h"

namespace stoker {
namespace {

using testing::ExpectEpochZeroExactlyOnce;
using testing::Stage;
using testing::Stream;
using testing::Truth;

constexpr uint32_t kSmall = 1;  // datasets in name order: large, small

// What a step did to the small dataset over all ranks: documents delivered, its tokens and all.
struct StepCount {
  std::vector<uint64_t> delivered;
  uint64_t small_tokens = 0, tokens = 0;
};

// Collective over `comm`: every rank's batches in `streams`, counted per global step.
std::vector<StepCount> CountSteps(const mpi::Comm& comm, const std::vector<const Stream*>& streams,
                                  uint64_t docs) {
  std::vector<uint64_t> mine;  // step, small tokens, tokens, begun documents..., a -1 after them
  for (const Stream* stream : streams) {
    for (const Batch& batch : *stream) {
      mine.insert(mine.end(), {batch.step, batch.dataset_tokens[kSmall], batch.tokens.size()});
      for (const DocPiece& p : batch.pieces) {
        if (p.dataset == kSmall && p.first == 0) mine.push_back(p.doc);
      }
      mine.push_back(UINT64_MAX);
    }
  }
  std::string bytes(mine.size() * sizeof(uint64_t), '\0');
  if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
  std::vector<StepCount> steps;
  for (const std::string& part : comm.AllGather(bytes)) {
    std::vector<uint64_t> values(part.size() / sizeof(uint64_t));
    if (!values.empty()) std::memcpy(values.data(), part.data(), part.size());
    for (size_t i = 0; i < values.size(); ++i) {
      const uint64_t step = values[i];
      if (steps.size() < step) steps.resize(step, StepCount{std::vector<uint64_t>(docs, 0)});
      StepCount& count = steps[step - 1];
      count.small_tokens += values[++i];
      count.tokens += values[++i];
      while (values[++i] != UINT64_MAX) ++count.delivered.at(values[i]);
    }
  }
  return steps;
}

// The first step at whose end a document has been delivered k + 2 times while another has been
// delivered fewer than k times, described; "" when none.
std::string FirstSpreadBeyondTwo(const std::vector<StepCount>& steps) {
  std::vector<uint64_t> total(steps.empty() ? 0 : steps[0].delivered.size(), 0);
  for (size_t s = 0; s < steps.size(); ++s) {
    for (size_t doc = 0; doc < total.size(); ++doc) total[doc] += steps[s].delivered[doc];
    const auto [least, most] = std::minmax_element(total.begin(), total.end());
    if (*most > *least + 2) {
      return fmt::format(
          "at the end of step {}: delivered {} times (document {}) and {} times "
          "(document {}); all: {}",
          s + 1, *most, most - total.begin(), *least, least - total.begin(), fmt::join(total, " "));
    }
  }
  return "";
}

class EpochsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (comm_.rank() == 0) WriteCorpus();
    comm_.Barrier();
    truth_ = testing::ReadTruth(comm_, dir_ / "corpus");
    for (uint64_t n : truth_.length[kSmall]) {
      small_tokens_ += n + 1;
      longest_ = std::max(longest_, n + 1);
    }
  }
  // large/ of 3,000 documents of 10 to 110 tokens and small/ of 14 of 100 to 1,500, two files
  // each; token values 1, 2, ... across the corpus.
  void WriteCorpus() const {
    std::mt19937_64 random(7);
    uint64_t value = 1;
    const auto docs = [&](uint64_t n, uint64_t shortest, uint64_t longest) {
      std::vector<std::vector<uint64_t>> out(n);
      for (auto& doc : out) {
        doc.resize(std::uniform_int_distribution<uint64_t>(shortest, longest)(random));
        for (uint64_t& token : doc) token = value++;
      }
      return out;
    };
    for (const auto& [name, n, shortest, longest] :
         {std::tuple("large", 1500, 10, 110), std::tuple("small", 7, 100, 1500)}) {
      for (int file = 0; file < 2; ++file) {
        testing::WriteTestShard(dir_ / fmt::format("corpus/{}/part-{:05}.h5", name, file),
                                docs(n, shortest, longest));
      }
    }
  }
  LoaderConfig Config(uint64_t logical_shards, uint64_t deal_max_docs) const {
    LoaderConfig config;
    config.data = dir_ / "corpus";
    config.weights = {{"large", 1}, {"small", 1}};
    config.eos_id = truth_.tokens + 1;
    config.seq_len = 63;
    config.batch_size = 4;
    config.seed = 11;
    config.logical_shards = logical_shards;
    config.deal_max_docs = deal_max_docs;
    return config;
  }
  // Steps in which `ranks` ranks deliver `epochs` epochs of the small dataset.
  uint64_t StepsFor(int ranks, double epochs) const {
    const double per_step = 0.5 * ranks * 4 * 64;
    return static_cast<uint64_t>(std::ceil(epochs * static_cast<double>(small_tokens_) / per_step));
  }
  // The bound and the small dataset's share at every step of `streams`, over all ranks.
  void ExpectEpochsHold(const std::vector<const Stream*>& streams, const std::string& what) {
    const std::vector<StepCount> steps = CountSteps(comm_, streams, truth_.length[kSmall].size());
    const std::string spread = FirstSpreadBeyondTwo(steps);
    EXPECT_EQ(spread, "") << what;
    double small = 0, all = 0, worst = 0;
    for (const StepCount& step : steps) {
      small += static_cast<double>(step.small_tokens);
      all += static_cast<double>(step.tokens);
      worst = std::max(worst, std::abs(small - 0.5 * all));
    }
    // Each rank's lane is within a document of the clock, and a document cut by a step's end
    // goes on in the next.
    EXPECT_LE(worst, 3 * static_cast<double>(longest_))
        << what << ": the small dataset strayed from half of all tokens";
  }

  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
  Truth truth_;
  uint64_t small_tokens_ = 0;  // framed
  uint64_t longest_ = 0;       // framed
};

TEST_F(EpochsTest, ADealtSmallDatasetsEpochsHoldAtOneToSevenRanks) {
  for (const uint64_t logical_shards : {7, 16, 65536}) {
    for (int ranks = 1; ranks <= std::min(comm_.size(), 7); ++ranks) {
      const std::string what = fmt::format("{} ranks, {} logical shards", ranks, logical_shards);
      const Stream stream =
          Stage(comm_, truth_, Config(logical_shards, 100), ranks, "", StepsFor(ranks, 4), "");
      ExpectEpochsHold({&stream}, what);
    }
  }
}

TEST_F(EpochsTest, EpochsHoldAcrossAChainOfResumesOnOtherRankCounts) {
  if (comm_.size() < 7) GTEST_SKIP() << "the chain 4 -> 3 -> 7 -> 2 needs 7 ranks";
  // Saves a third and two thirds into an epoch, and at 2.4 epochs, on each stage's rank count.
  const LoaderConfig config = Config(16, 100);
  const uint64_t one = StepsFor(4, 1.0 / 3), two = one + StepsFor(3, 1.0 / 3),
                 three = two + StepsFor(7, 1.7);
  const std::string ckpt = dir_ / "ckpt";
  const std::vector<Stream> streams = {
      Stage(comm_, truth_, config, 4, "", one, fmt::format("{}/step-{}", ckpt, one)),
      Stage(comm_, truth_, config, 3, fmt::format("{}/step-{}", ckpt, one), two,
            fmt::format("{}/step-{}", ckpt, two)),
      Stage(comm_, truth_, config, 7, fmt::format("{}/step-{}", ckpt, two), three,
            fmt::format("{}/step-{}", ckpt, three)),
      Stage(comm_, truth_, config, 2, fmt::format("{}/step-{}", ckpt, three), 0, ""),
  };
  const std::vector<const Stream*> all = {&streams[0], &streams[1], &streams[2], &streams[3]};
  ExpectEpochsHold(
      all, fmt::format("4 -> 3 -> 7 -> 2 ranks, saved after steps {}, {}, {}", one, two, three));
  ExpectEpochZeroExactlyOnce(comm_, truth_, false, all, "4 -> 3 -> 7 -> 2 ranks");
}

TEST_F(EpochsTest, WalkedTheSmallDatasetsEpochsDriftApart) {
  if (comm_.size() < 7) GTEST_SKIP() << "needs 7 ranks";
  const Stream stream = Stage(comm_, truth_, Config(16, 0), 7, "", StepsFor(7, 4), "");
  const std::vector<StepCount> steps = CountSteps(comm_, {&stream}, truth_.length[kSmall].size());
  EXPECT_NE(FirstSpreadBeyondTwo(steps), "")
      << "walked over ranks that own 1 to 3 of its 14 documents, the small dataset kept its "
         "epochs: the count cannot tell";
}

}  // namespace
}  // namespace stoker
