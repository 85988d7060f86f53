// The pure core of the loader in simulated worlds: every rank of a world of W runs its own
// RowPlanner in this one process, and the tests count every framed token they deliver.
#include "packing/row_planner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/fake_corpus.h"

namespace stoker {
namespace {

using testing::AllPastEpoch;
using testing::ConfigFor;
using testing::EpochZeroCounter;
using testing::FakeCorpus;

// Runs every rank of a world until all its shards are past epoch 0, counting every framed token
// of epoch 0 it delivers.
EpochZeroCounter CountEpochZero(const FakeCorpus& corpus, const std::vector<double>& weights,
                                uint64_t shards, uint64_t world) {
  EpochZeroCounter counter(corpus);
  for (uint64_t rank = 0; rank < world; ++rank) {
    const PlannerConfig config = ConfigFor(corpus, weights, shards, world, rank);
    RowPlanner planner(config, InitialRankState(corpus.names.size(), shards, world, rank),
                       corpus.Locator());
    std::vector<Segment> row;
    for (int rows = 0; !AllPastEpoch(planner.state(), config, 0); ++rows) {
      if (rows > 1000000) {
        ADD_FAILURE() << "rank " << rank << " never finished epoch 0";
        break;
      }
      planner.NextRow(&row);
      uint64_t total = 0;
      for (const Segment& s : row) total += s.count;
      EXPECT_EQ(total, config.row_tokens);
      counter.Add(row);
    }
  }
  return counter;
}

TEST(RowPlanner, OneEpochDeliversEveryTokenOnceInManyWorlds) {
  const FakeCorpus corpus = FakeCorpus::Make({3000, 700, 50}, 1);
  const std::vector<double> weights = {5, 2, 1};
  for (uint64_t world : {1, 2, 3, 4, 5, 7}) {
    for (uint64_t shards : {7, 64, 100}) {
      SCOPED_TRACE("world " + std::to_string(world) + " shards " + std::to_string(shards));
      CountEpochZero(corpus, weights, shards, world).ExpectExactlyOnce(weights);
    }
  }
}

TEST(RowPlanner, AThousandRanks) {
  const FakeCorpus corpus = FakeCorpus::Make({20000, 5000}, 2, 20);
  const std::vector<double> weights = {1, 1};
  CountEpochZero(corpus, weights, 4096, 1000).ExpectExactlyOnce(weights);
}

TEST(RowPlanner, ZeroWeightDatasetIsNeverRead) {
  const FakeCorpus corpus = FakeCorpus::Make({500, 500}, 3);
  const std::vector<double> weights = {1, 0};
  const PlannerConfig config = ConfigFor(corpus, weights, 16, 2, 1);
  RowPlanner planner(config, InitialRankState(2, 16, 2, 1), corpus.Locator());
  std::vector<Segment> row;
  for (int i = 0; i < 2000; ++i) {
    planner.NextRow(&row);
    for (const Segment& s : row) ASSERT_EQ(s.dataset, 0u);
  }
}

TEST(RowPlanner, SameStateSameRows) {
  const FakeCorpus corpus = FakeCorpus::Make({800, 300}, 4);
  const std::vector<double> weights = {1, 3};
  const PlannerConfig config = ConfigFor(corpus, weights, 32, 3, 2);
  RowPlanner a(config, InitialRankState(2, 32, 3, 2), corpus.Locator());
  std::vector<Segment> row_a, row_b;
  for (int i = 0; i < 37; ++i) a.NextRow(&row_a);
  RowPlanner b(config, a.state(), corpus.Locator());  // resumed by value
  for (int i = 0; i < 500; ++i) {
    a.NextRow(&row_a);
    b.NextRow(&row_b);
    ASSERT_EQ(row_a.size(), row_b.size());
    for (size_t k = 0; k < row_a.size(); ++k) {
      ASSERT_EQ(row_a[k].doc, row_b[k].doc);
      ASSERT_EQ(row_a[k].first, row_b[k].first);
      ASSERT_EQ(row_a[k].count, row_b[k].count);
    }
  }
  EXPECT_EQ(a.state(), b.state());
}

TEST(RowPlanner, MixingFollowsTheWeights) {
  const FakeCorpus corpus = FakeCorpus::Make({5000, 5000, 200}, 5);
  const std::vector<double> weights = {0.5, 0.3, 0.2};  // the small dataset is upsampled
  for (uint64_t rank : {0, 1}) {
    const PlannerConfig config = ConfigFor(corpus, weights, 64, 2, rank, 1001);
    RowPlanner planner(config, InitialRankState(3, 64, 2, rank), corpus.Locator());
    std::vector<Segment> row;
    std::vector<uint64_t> tokens(3, 0);
    for (int i = 0; i < 1000; ++i) {  // about a million tokens
      planner.NextRow(&row);
      for (const Segment& s : row) tokens[s.dataset] += s.count;
    }
    const double total = tokens[0] + tokens[1] + tokens[2];
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(tokens[d] / total, weights[d], 0.01) << d;
  }
}

TEST(RowPlanner, ARankFinishesEachEpochBeforeStartingTheNext) {
  const FakeCorpus corpus = FakeCorpus::Make({997, 331}, 6);
  const std::vector<double> weights = {2, 1};
  for (uint64_t world : {1, 3}) {
    const PlannerConfig config = ConfigFor(corpus, weights, 50, world, world - 1);
    RowPlanner planner(config, InitialRankState(2, 50, world, world - 1), corpus.Locator());
    std::vector<uint64_t> epoch_seen(2, 0);
    std::vector<Segment> row;
    for (int i = 0; i < 3000; ++i) {
      planner.NextRow(&row);
      for (const Segment& s : row) {
        ASSERT_GE(s.epoch, epoch_seen[s.dataset]) << "an older epoch came back";
        epoch_seen[s.dataset] = s.epoch;
      }
    }
    EXPECT_GE(epoch_seen[1], 2u);  // the run crossed epoch boundaries
  }
}

// A state of format 1 to 4 holds a document cut by a row's end at its cursor (offset > 0): the
// planner opens it, and its rest is delivered once, from where it stood, with every other token
// of the epoch once; the state after holds it as an open unit, its cursor past it.
TEST(RowPlanner, ADocumentLeftUnfinishedTheOldWayGoesOnWhereItStood) {
  const FakeCorpus corpus = FakeCorpus::Make({300, 200}, 5, 40);
  const PlannerConfig config = ConfigFor(corpus, {1, 1}, 8, 2, 1);
  RankState old = InitialRankState(2, 8, 2, 1);
  const uint64_t shard = old.shards.begin + 1;
  old.cursor(shard, 1).offset = 4;
  old.unfinished = {{1, shard}};
  old.lane.started[1] = 1000;  // as a version 4 file counted it
  EpochZeroCounter counter(corpus);
  RowPlanner planner(config, old, corpus.Locator());
  std::vector<Segment> row;
  planner.NextRow(&row);
  ASSERT_FALSE(row.empty());
  EXPECT_EQ(row[0].dataset, 1u);
  EXPECT_EQ(row[0].shard, shard);
  EXPECT_EQ(row[0].first, 4u);
  const uint64_t doc = row[0].doc;
  EXPECT_TRUE(planner.state().unfinished.empty());
  EXPECT_GE(planner.state().cursor(shard, 1).position, 1u);  // passed when it was opened
  counter.Add(row);
  for (int i = 1; !AllPastEpoch(planner.state(), config, 0); ++i) {
    ASSERT_LT(i, 100000);
    planner.NextRow(&row);
    counter.Add(row);
    planner.EndBatch();
  }
  // Rank 0 delivers its share of epoch 0, and tokens 0-3 of the document came before the save:
  // then every framed token of epoch 0 came once.
  RowPlanner rank0(ConfigFor(corpus, {1, 1}, 8, 2, 0), InitialRankState(2, 8, 2, 0),
                   corpus.Locator());
  while (!AllPastEpoch(rank0.state(), config, 0)) {
    rank0.NextRow(&row);
    counter.Add(row);
    rank0.EndBatch();
  }
  const Segment before{.dataset = 1, .doc = doc, .first = 0, .count = 4};
  counter.Add({before});
  counter.ExpectExactlyOnce({1, 1});
}

// A dataset dealt to the ranks (PlannerDataset::sizes): 14 documents at weight 0.5 beside 3,000
// walked ones, 1 to 7 ranks, each its own planner, a step of 2 rows of 97 tokens a rank. Counted
// over all ranks when a document's first token is delivered, no document of the small one is
// ever a (k + 2)-th time while another is fewer than k times, at every step; each rank's look
// ahead names the documents it starts, in order.
TEST(RowPlanner, ADealtDatasetsEpochsHoldOverAllRanks) {
  const FakeCorpus corpus = FakeCorpus::Make({3000, 14}, 21);
  auto sizes = std::make_shared<std::vector<uint64_t>>();
  for (uint64_t n : corpus.lengths[1]) sizes->push_back(n == 0 ? 0 : n + 1);
  for (uint64_t world = 1; world <= 7; ++world) {
    SCOPED_TRACE(fmt::format("{} ranks", world));
    std::vector<std::unique_ptr<RowPlanner>> ranks;
    for (uint64_t r = 0; r < world; ++r) {
      PlannerConfig config = ConfigFor(corpus, {1, 1}, 16, world, r);
      config.rows = 2;
      config.datasets[1].sizes = sizes;
      ranks.push_back(std::make_unique<RowPlanner>(config, InitialRankState(2, 16, world, r),
                                                   corpus.Locator()));
    }
    std::vector<uint64_t> count(14, 0);
    std::vector<std::deque<uint64_t>> ahead(world);
    std::vector<Segment> row;
    for (int step = 0; step < 300; ++step) {
      for (uint64_t r = 0; r < world; ++r) {
        while (ahead[r].size() < 16) ahead[r].push_back(ranks[r]->LookAhead(1).doc);
        for (int k = 0; k < 2; ++k) {
          ranks[r]->NextRow(&row);
          for (const Segment& p : row) {
            if (p.dataset != 1 || p.first != 0) continue;
            ++count[p.doc];
            while (!ahead[r].empty() && corpus.lengths[1][ahead[r].front()] == 0) {
              ahead[r].pop_front();  // passed over
            }
            ASSERT_FALSE(ahead[r].empty()) << "a step started more than it looked ahead";
            ASSERT_EQ(p.doc, ahead[r].front()) << "rank " << r << " at step " << step;
            ahead[r].pop_front();
          }
        }
        ranks[r]->EndBatch();
      }
      uint64_t least = UINT64_MAX, most = 0;
      for (uint64_t doc = 0; doc < 14; ++doc) {
        if (corpus.lengths[1][doc] == 0) continue;
        least = std::min(least, count[doc]);
        most = std::max(most, count[doc]);
      }
      ASSERT_LE(most, least + 2) << "step " << step;
    }
    uint64_t least = UINT64_MAX;
    for (uint64_t doc = 0; doc < 14; ++doc) {
      if (corpus.lengths[1][doc] > 0) least = std::min(least, count[doc]);
    }
    EXPECT_GE(least, 10u) << "the small dataset ran through few epochs";
  }
}

TEST(RowPlanner, DeltasRebuildTheState) {
  const FakeCorpus corpus = FakeCorpus::Make({600, 900}, 7);
  const std::vector<double> weights = {1, 1};
  const PlannerConfig config = ConfigFor(corpus, weights, 40, 2, 0);
  RankState copy = InitialRankState(2, 40, 2, 0);
  RowPlanner planner(config, copy, corpus.Locator());
  std::vector<Segment> row;
  for (int batch = 0; batch < 300; ++batch) {
    for (int r = 0; r < 3; ++r) planner.NextRow(&row);
    planner.EndBatch();
    ApplyDelta(planner.TakeDelta(), &copy);
    ASSERT_EQ(copy, planner.state()) << "batch " << batch;
  }
  EXPECT_EQ(copy.step, 300u);
}

// Dataset "e" of 16 documents, all empty but `nonempty` of them, beside an ordinary dataset "b".
FakeCorpus MostlyEmpty(uint64_t nonempty) {
  FakeCorpus corpus = FakeCorpus::Make({2000}, 8);
  corpus.names = {"e", "b"};
  CounterRng rng(9);
  std::vector<uint64_t> e(16, 0);
  for (uint64_t i = 0; i < nonempty; ++i) e[i * 16 / nonempty] = 20 + rng.NextBelow(130);
  corpus.lengths.insert(corpus.lengths.begin(), e);
  return corpus;
}

// The lowest epoch of dataset `d` over the logical shards of the planner's rank that hold some of
// its documents.
uint64_t LeastEpoch(const RowPlanner& planner, uint32_t d) {
  const PlannerConfig& config = planner.config();
  const DatasetOrder order(config.seed, config.datasets[d].name, config.datasets[d].docs,
                           config.logical_shards);
  uint64_t least = UINT64_MAX;
  const RankState& state = planner.state();
  for (uint64_t j = state.shards.begin; j < state.shards.end; ++j) {
    if (!order.Slice(j).empty()) least = std::min(least, state.cursor(j, d).epoch);
  }
  return least;
}

void ExpectSameRows(const std::vector<Segment>& a, const std::vector<Segment>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].dataset, b[k].dataset);
    ASSERT_EQ(a[k].doc, b[k].doc);
    ASSERT_EQ(a[k].epoch, b[k].epoch);
    ASSERT_EQ(a[k].first, b[k].first);
    ASSERT_EQ(a[k].count, b[k].count);
  }
}

// Empty documents never take a dataset out of the mix: with half, three quarters or all but
// one of its documents empty, "e" keeps its share of 1/2 on every rank of 1, 4 and 8 (within a
// document or two of either dataset at every row) over several epochs, on a rank whose share of
// an epoch may hold no non-empty document at all; and a planner resumed from a copy of the state
// goes on with the same rows.
TEST(RowPlanner, EmptyDocumentsNeverTakeADatasetOutOfTheMix) {
  const std::vector<double> weights = {1, 1};
  for (uint64_t nonempty : {8, 4, 1}) {
    const FakeCorpus corpus = MostlyEmpty(nonempty);
    uint64_t longest = 0;
    for (const auto& lengths : corpus.lengths) {
      for (uint64_t n : lengths) longest = std::max(longest, n + 1);
    }
    for (uint64_t world : {1, 4, 8}) {
      for (uint64_t rank = 0; rank < world; ++rank) {
        SCOPED_TRACE(fmt::format("{} of 16 non-empty, rank {} of {}", nonempty, rank, world));
        const PlannerConfig config = ConfigFor(corpus, weights, 1024, world, rank);
        RowPlanner planner(config, InitialRankState(2, 1024, world, rank), corpus.Locator());
        std::optional<RowPlanner> resumed;
        std::vector<Segment> row, resumed_row;
        uint64_t tokens[2] = {0, 0};
        int rows = 0;
        for (; rows < 400 || LeastEpoch(planner, 0) < 6; ++rows) {
          ASSERT_LT(rows, 200000) << "e stopped at epoch " << LeastEpoch(planner, 0);
          if (rows == 150) resumed.emplace(config, planner.state(), corpus.Locator());
          planner.NextRow(&row);
          planner.EndBatch();  // a step of one row
          for (const Segment& s : row) tokens[s.dataset] += s.count;
          const double deviation = std::abs(static_cast<double>(tokens[0]) -
                                            static_cast<double>(tokens[0] + tokens[1]) / 2);
          ASSERT_LE(deviation, 2.0 * longest)
              << "row " << rows << ": e " << tokens[0] << " tokens, b " << tokens[1];
          if (!resumed) continue;
          resumed->NextRow(&resumed_row);
          resumed->EndBatch();
          ExpectSameRows(row, resumed_row);
        }
        EXPECT_EQ(resumed->state(), planner.state());
        EXPECT_GE(LeastEpoch(planner, 0), 6u);
      }
    }
  }
}

// LookAhead names, dataset by dataset, the documents the planner visits next, in order, with
// their visit numbers: over several epochs, with empty documents passed over, starting in the
// middle of a document; and once the planner has gone past what was looked at, it goes on from
// the planner's position. Checked against the documents the rows start (first framed position
// 0) and the visits counted meanwhile.
TEST(RowPlanner, LookAheadNamesTheDocumentsEachDatasetVisitsNext) {
  const FakeCorpus corpus = FakeCorpus::Make({300, 120, 90}, 10);
  const std::vector<double> weights = {2, 1, 0};
  const PlannerConfig config = ConfigFor(corpus, weights, 20, 3, 1);
  RowPlanner planner(config, InitialRankState(3, 20, 3, 1), corpus.Locator());
  std::vector<Segment> row;
  for (int i = 0; i < 37; ++i) planner.NextRow(&row);
  ASSERT_FALSE(planner.state().lane.open.empty()) << "pick another row count";
  EXPECT_FALSE(planner.reads(2));  // weight 0
  EXPECT_TRUE(planner.has_documents(2));

  std::vector<std::vector<RowPlanner::Ahead>> ahead(2);
  for (uint32_t d = 0; d < 2; ++d) {
    for (int i = 0; i < 600; ++i) ahead[d].push_back(planner.LookAhead(d));
    for (size_t i = 0; i < ahead[d].size(); ++i)
      ASSERT_EQ(ahead[d][i].visit, planner.visits(d) + i) << "dataset " << d;
  }
  const std::vector<uint64_t> visits_before = {planner.visits(0), planner.visits(1)};
  std::vector<std::vector<uint64_t>> started(2);
  while (planner.visits(0) < visits_before[0] + 700) {  // past what was looked at
    planner.NextRow(&row);
    for (const Segment& s : row)
      if (s.first == 0) started[s.dataset].push_back(s.doc);
  }
  for (uint32_t d = 0; d < 2; ++d) {
    SCOPED_TRACE("dataset " + std::to_string(d));
    std::vector<uint64_t> expected;
    for (const RowPlanner::Ahead& a : ahead[d]) {
      if (a.visit < planner.visits(d) && corpus.lengths[d][a.doc] > 0) expected.push_back(a.doc);
    }
    ASSERT_GE(started[d].size(), expected.size());
    started[d].resize(expected.size());  // dataset 0 went on past the documents looked at
    EXPECT_EQ(started[d], expected);
    EXPECT_LT(expected.size(), std::min<uint64_t>(600, planner.visits(d) - visits_before[d]))
        << "no empty document passed over";
  }
  ASSERT_LT(planner.visits(1), ahead[1].back().visit);
  EXPECT_EQ(planner.LookAhead(1).visit, ahead[1].back().visit + 1);
  // Dataset 0 went past: LookAhead goes on from the planner's next visit, which starts it.
  const RowPlanner::Ahead next = planner.LookAhead(0);
  EXPECT_EQ(next.visit, planner.visits(0));
  std::vector<uint64_t> later;
  while (planner.visits(0) <= next.visit) {
    planner.NextRow(&row);
    for (const Segment& s : row)
      if (s.first == 0 && s.dataset == 0) later.push_back(s.doc);
  }
  if (corpus.lengths[0][next.doc] > 0) {
    ASSERT_FALSE(later.empty());
    EXPECT_EQ(later.back(), next.doc);
  }
}

}  // namespace
}  // namespace stoker
