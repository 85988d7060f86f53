// Lanes (mixing/lane.h): the epochs of a dataset over all lanes, and tiny weights, counted by a
// simulation of every lane of a run, unit by unit and token by token.
#include "mixing/lane.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mixing/mix_clock.h"
#include "mixing/mix_schedule.h"
#include "order/permutation.h"
#include "order/random.h"

namespace stoker {
namespace {

// Framed tokens per unit: `units` of 1 to `longest`, every tenth one empty when `empties`.
std::vector<uint64_t> Sizes(uint64_t units, uint64_t longest, bool empties, uint64_t key) {
  CounterRng rng(key);
  std::vector<uint64_t> sizes(units);
  for (uint64_t& size : sizes) size = 1 + rng.NextBelow(longest);
  if (empties) {
    for (uint64_t i = 3; i < units; i += 10) sizes[i] = 0;
  }
  return sizes;
}

struct Corpus {
  std::vector<std::vector<uint64_t>> sizes;
  std::vector<LaneDataset> datasets;

  void Add(std::vector<uint64_t> units, uint64_t key) {
    sizes.push_back(std::move(units));
    datasets.clear();  // spans into `sizes`, which just moved
    for (size_t d = 0; d < sizes.size(); ++d) {
      datasets.push_back({.sizes = sizes[d], .key = DeriveKey(key, "dataset", d), .tie = d});
    }
  }
};

// A walk that takes lane `lane` of `lanes` through every `lanes`-th position of each walked
// dataset's stream, epoch after epoch.
class StridedWalk : public LaneWalk {
 public:
  StridedWalk(const Corpus& corpus, uint32_t lane, uint32_t lanes)
      : corpus_(corpus), lane_(lane), lanes_(lanes), taken_(corpus.sizes.size(), 0) {}

  Dealt Peek(uint32_t d) override {
    const uint64_t units = corpus_.sizes[d].size();
    const uint64_t position = lane_ + taken_[d] * lanes_;
    const uint64_t epoch = position / units;
    const uint64_t unit =
        Permutation(units, DeriveKey(corpus_.datasets[d].key, "epoch", epoch)).At(position % units);
    return {.position = position, .epoch = epoch, .unit = unit, .size = corpus_.sizes[d][unit]};
  }
  void Advance(uint32_t d) override { ++taken_[d]; }

 private:
  const Corpus& corpus_;
  uint32_t lane_, lanes_;
  std::vector<uint64_t> taken_;
};

// Every lane of a run: each step every lane delivers `lane_tokens` tokens, in the pieces its Lane
// gives. Counts, over all lanes, the deliveries of every unit (a delivery counts when the unit's
// first token is delivered, as a reader of the tokens counts a document's first token), the
// units finished, and the tokens of every dataset.
class LaneRun {
 public:
  LaneRun(const Corpus& corpus, MixSchedule schedule, uint64_t lane_tokens, uint32_t lanes)
      : corpus_(corpus), schedule_(std::move(schedule)), lane_tokens_(lane_tokens) {
    for (const auto& sizes : corpus.sizes) {
      counts_.emplace_back(sizes.size(), 0);
      tokens_.push_back(0);
    }
    finished_ = counts_;
    first_start_.assign(corpus.sizes.size(), UINT64_MAX);
    first_due_.assign(corpus.sizes.size(), 0);
    starts_.resize(corpus.sizes.size());
    clock_ = std::make_unique<MixClock>(schedule_, lanes * lane_tokens_);
    const LaneState first{
        .dealers = std::vector<DealerState>(corpus.sizes.size(), FirstDealerState(lanes))};
    MakeLanes(std::vector<LaneState>(lanes, first));
  }

  void Step() {
    for (Lane& lane : lanes_) {
      for (uint64_t room = lane_tokens_; room > 0;) {
        const LanePiece piece = lane.Take(step_, room);
        const uint32_t d = piece.unit.dataset;
        if (piece.first == 0) {
          ++counts_[d][piece.unit.dealt.unit];
          if (first_start_[d] == UINT64_MAX) {
            first_start_[d] = step_;
            first_due_[d] = piece.unit.due;
          }
          starts_[d].push_back(piece.unit.dealt.position);
        }
        if (piece.first + piece.count == piece.unit.dealt.size) {
          ++finished_[d][piece.unit.dealt.unit];
        }
        tokens_[d] += piece.count;
        lane_tokens_of_[&lane - lanes_.data()][d] += piece.count;
        room -= piece.count;
      }
    }
    ++step_;
  }

  // Every lane saves its state at the step; the run goes on with `lanes` lanes, the units left
  // open handed to the new lanes in turn.
  void Resume(uint32_t lanes) {
    std::vector<LaneState> states(lanes);
    for (uint32_t d = 0; d < corpus_.sizes.size(); ++d) {
      EXPECT_FALSE(corpus_.datasets[d].walked) << "the walk of this test does not resume";
      std::vector<uint64_t> positions;
      const DealerState* least = nullptr;
      std::vector<DealerState> earlier;  // what the rank files hold besides the lanes' states
      for (const Lane& lane : lanes_) {
        const DealerState& saved = lane.state().dealers[d];
        positions.push_back(saved.position);
        if (least == nullptr || saved.position < least->position) least = &saved;
        const auto& more = lane.state().earlier[d];
        earlier.insert(earlier.end(), more.begin(), more.end());
      }
      // Dealt again from an earlier state of any lane, as a rescale does: the same as from the
      // least advanced lane's own state.
      const DealerState* from = LatestAtOrBefore(earlier, least->position);
      EXPECT_NE(from, nullptr) << "no earlier state at or before " << least->position;
      const DealerState dealt = Redeal(corpus_.sizes[d], corpus_.datasets[d].key,
                                       from != nullptr ? *from : *least, positions, lanes);
      Dealer again(corpus_.sizes[d], corpus_.datasets[d].key, dealt);
      Dealer from_least(
          corpus_.sizes[d], corpus_.datasets[d].key,
          Redeal(corpus_.sizes[d], corpus_.datasets[d].key, *least, positions, lanes));
      for (int i = 0; i < 50; ++i) EXPECT_EQ(again.Next(), from_least.Next()) << i;
      for (LaneState& state : states) state.dealers.push_back(dealt);
    }
    size_t next = 0;
    for (const Lane& lane : lanes_) {
      for (const OpenUnit& open : lane.state().open) {
        std::vector<OpenUnit>& to = states[next++ % lanes].open;
        to.insert(std::upper_bound(
                      to.begin(), to.end(), open,
                      [](const OpenUnit& a, const OpenUnit& b) { return a.unit.due < b.unit.due; }),
                  open);
      }
    }
    clock_ = std::make_unique<MixClock>(schedule_, lanes * lane_tokens_, clock_->BaseAt(step_));
    MakeLanes(states);
  }

  // The largest spread of deliveries between two non-empty units of dataset `d`, counted when
  // they start or when they end.
  uint64_t Spread(uint32_t d, bool ends = false) const {
    const std::vector<uint64_t>& counts = (ends ? finished_ : counts_)[d];
    uint64_t least = UINT64_MAX, most = 0;
    for (size_t u = 0; u < counts.size(); ++u) {
      if (corpus_.sizes[d][u] == 0) continue;
      least = std::min(least, counts[u]);
      most = std::max(most, counts[u]);
    }
    return most - least;
  }
  uint64_t Least(uint32_t d) const {
    uint64_t least = UINT64_MAX;
    for (size_t u = 0; u < counts_[d].size(); ++u) {
      if (corpus_.sizes[d][u] > 0) least = std::min(least, counts_[d][u]);
    }
    return least;
  }

  uint64_t step() const { return step_; }
  uint64_t Count(uint32_t d, uint64_t u) const { return counts_[d][u]; }
  uint64_t tokens(uint32_t d) const { return tokens_[d]; }
  uint64_t tokens(uint32_t lane, uint32_t d) const { return lane_tokens_of_[lane][d]; }
  uint64_t first_start(uint32_t d) const { return first_start_[d]; }
  double first_due(uint32_t d) const { return first_due_[d]; }
  const std::vector<uint64_t>& starts(uint32_t d) const { return starts_[d]; }
  const std::vector<Lane>& lanes() const { return lanes_; }
  const MixClock& clock() const { return *clock_; }

 private:
  void MakeLanes(const std::vector<LaneState>& states) {
    lanes_.clear();
    walks_.clear();
    lane_tokens_of_.assign(states.size(), std::vector<uint64_t>(corpus_.sizes.size(), 0));
    for (uint32_t l = 0; l < states.size(); ++l) {
      walks_.push_back(
          std::make_unique<StridedWalk>(corpus_, l, static_cast<uint32_t>(states.size())));
      lanes_.emplace_back(l, static_cast<uint32_t>(states.size()), corpus_.datasets, *clock_,
                          states[l], walks_.back().get());
    }
  }

  const Corpus& corpus_;
  MixSchedule schedule_;
  uint64_t lane_tokens_;
  std::unique_ptr<MixClock> clock_;
  std::vector<std::unique_ptr<StridedWalk>> walks_;
  std::vector<Lane> lanes_;
  std::vector<std::vector<uint64_t>> lane_tokens_of_;  // per lane and dataset
  uint64_t step_ = 0;
  std::vector<std::vector<uint64_t>> counts_;    // per dataset and unit: starts
  std::vector<std::vector<uint64_t>> finished_;  // per dataset and unit: ends
  std::vector<uint64_t> tokens_;
  std::vector<uint64_t> first_start_;
  std::vector<double> first_due_;
  std::vector<std::vector<uint64_t>> starts_;  // per dataset: the positions started
};

// A 14-unit dataset at weight 0.5 beside a large one.
Corpus SmallBesideLarge(uint64_t key) {
  Corpus corpus;
  corpus.Add(Sizes(3000, 2000, /*empties=*/true, key), key);
  corpus.Add(Sizes(14, 300, /*empties=*/false, key + 1), key);
  return corpus;
}

uint64_t Largest(const Corpus& corpus) {
  uint64_t largest = 0;
  for (const auto& sizes : corpus.sizes) {
    largest = std::max(largest, *std::max_element(sizes.begin(), sizes.end()));
  }
  return largest;
}

// No unit of a dataset is delivered a (k + 2)-th time while another (not empty) has fewer than k
// deliveries, over all lanes, at the end of every step: the spread is at most 2. Steps of 129
// tokens a lane (a unit spans up to 16 steps) and of 4,100 (up to 7 epochs of the small dataset
// in a step).
TEST(Lane, ASmallDatasetsUnitsAreDeliveredInEpochsOverAllLanes) {
  for (uint64_t key : {11, 12, 13}) {
    const Corpus corpus = SmallBesideLarge(key);
    for (uint64_t lane_tokens : {129, 4 * 1025}) {
      for (uint32_t lanes = 1; lanes <= 7; ++lanes) {
        LaneRun run(corpus, MixSchedule::Constant({0.5, 0.5}), lane_tokens, lanes);
        while (run.Least(1) < 30) {
          run.Step();
          ASSERT_LE(run.Spread(1), 2u) << lanes << " lanes of " << lane_tokens << " tokens, key "
                                       << key << ", step " << run.step();
          ASSERT_LE(run.Spread(0), 2u);
        }
      }
    }
  }
}

// Every position of each stream starts once, however often the run resumed on other lanes:
// none twice, and every position with tokens below the least advanced lane's next one started.
void ExpectEveryPositionStartsOnce(const Corpus& corpus, const LaneRun& run) {
  for (uint32_t d = 0; d < corpus.sizes.size(); ++d) {
    std::vector<uint64_t> starts = run.starts(d);
    std::sort(starts.begin(), starts.end());
    EXPECT_EQ(std::adjacent_find(starts.begin(), starts.end()), starts.end())
        << "a position of dataset " << d << " started twice";
    uint64_t frontier = UINT64_MAX;
    for (const Lane& lane : run.lanes()) {
      frontier = std::min(frontier, lane.state().dealers[d].position);
    }
    Dealer stream(corpus.sizes[d], corpus.datasets[d].key, FirstDealerState(1));
    for (uint64_t p = 0; p < frontier; ++p) {
      if (stream.Next().size == 0) continue;
      EXPECT_TRUE(std::binary_search(starts.begin(), starts.end(), p))
          << "position " << p << " of dataset " << d << " never started";
    }
  }
}

// The chain of rank counts, each resume within an epoch of the small dataset (some of
// its units delivered once more than others), then the counts of every unit over all lanes.
TEST(Lane, AChainOfResumesOnOtherLanesKeepsTheEpochsAndStartsEveryUnitOnce) {
  const Corpus corpus = SmallBesideLarge(12);
  for (uint64_t lane_tokens : {129, 4 * 1025}) {
    LaneRun run(corpus, MixSchedule::Constant({0.5, 0.5}), lane_tokens, 4);
    for (uint32_t lanes : {3u, 7u, 2u, 0u}) {
      const uint64_t until = run.step() + (lane_tokens < 1000 ? 37 : 3);
      while (run.step() < until) {
        run.Step();
        ASSERT_LE(run.Spread(1), 2u) << lane_tokens << " tokens, step " << run.step();
        ASSERT_LE(run.Spread(0), 2u);
      }
      if (lanes == 0) break;
      EXPECT_GE(run.Spread(1), 1u) << "the resume at step " << run.step() << " ends an epoch";
      run.Resume(lanes);
    }
    EXPECT_GE(run.Least(1), 5u);
    ExpectEveryPositionStartsOnce(corpus, run);
  }
}

// A state is a value: lanes made from their saved states deliver the pieces the first ones go on
// to deliver.
TEST(Lane, ALaneMadeFromASavedStateGoesOnTheSame) {
  constexpr uint64_t kSteps = 60, kRoom = 200;
  const Corpus corpus = SmallBesideLarge(14);
  const MixClock clock(MixSchedule::Constant({0.3, 0.7}), 3 * kRoom);
  const LaneState first{.dealers = std::vector<DealerState>(2, FirstDealerState(3))};
  Lane whole(1, 3, corpus.datasets, clock, first);
  std::vector<LanePiece> pieces;
  std::vector<size_t> step_begins;  // per step, its first piece
  std::vector<LaneState> states;    // per step, the state before it
  for (uint64_t step = 0; step < kSteps; ++step) {
    step_begins.push_back(pieces.size());
    states.push_back(whole.state());
    for (uint64_t room = kRoom; room > 0; room -= pieces.back().count) {
      pieces.push_back(whole.Take(step, room));
    }
  }
  for (uint64_t from : {0, 1, 7, 30, 59}) {
    Lane resumed(1, 3, corpus.datasets, clock, states[from]);
    size_t i = step_begins[from];
    for (uint64_t step = from; step < kSteps; ++step) {
      for (uint64_t room = kRoom; room > 0; room -= pieces[i++].count) {
        ASSERT_EQ(resumed.Take(step, room), pieces[i])
            << "resumed at " << from << ", step " << step;
      }
    }
  }
}

// LookAhead tells a lane's units of a dealt dataset in the order it starts them, before it does.
TEST(Lane, LooksAheadInTheOrderItStartsADatasetsUnits) {
  const Corpus corpus = SmallBesideLarge(16);
  const MixClock clock(MixSchedule::Constant({0.5, 0.5}), 4 * 300);
  const LaneState first{.dealers = std::vector<DealerState>(2, FirstDealerState(4))};
  Lane lane(2, 4, corpus.datasets, clock, first);
  std::vector<std::vector<uint64_t>> ahead(2);  // positions, per dataset
  for (uint32_t d = 0; d < 2; ++d) {
    for (uint64_t v = 0; v < 200; ++v) {
      const Lane::Ahead next = lane.LookAhead(d);
      EXPECT_EQ(next.visit, v);
      EXPECT_EQ(next.unit.lane, 2u);
      ahead[d].push_back(next.unit.position);
    }
  }
  std::vector<std::vector<uint64_t>> started(2);
  for (uint64_t step = 0; started[1].size() < 60; ++step) {
    for (uint64_t room = 300; room > 0;) {
      const LanePiece piece = lane.Take(step, room);
      if (piece.first == 0) started[piece.unit.dataset].push_back(piece.unit.dealt.position);
      room -= piece.count;
    }
  }
  for (uint32_t d = 0; d < 2; ++d) {
    // Empty units are passed over without a piece: what started is what LookAhead told, less
    // those.
    Dealer stream(corpus.sizes[d], corpus.datasets[d].key, FirstDealerState(1));
    std::vector<uint64_t> sizes;  // by position
    while (sizes.size() <= ahead[d].back()) sizes.push_back(stream.Next().size);
    std::vector<uint64_t> told;
    for (uint64_t p : ahead[d]) {
      if (sizes[p] > 0) told.push_back(p);
    }
    told.resize(std::min(told.size(), started[d].size()));
    EXPECT_EQ(std::vector<uint64_t>(started[d].begin(), started[d].begin() + told.size()), told)
        << "dataset " << d;
    EXPECT_GE(lane.visits(d), started[d].size());
  }
}

// On a tie of due times the dataset of larger weight starts first, whatever its place in the
// corpus: units of 1 and 3 tokens at weights 0.25 and 0.75 fall due together.
TEST(Lane, OnATieTheLargerWeightStartsFirst) {
  Corpus corpus;
  corpus.Add(std::vector<uint64_t>(10, 1), 5);
  corpus.Add(std::vector<uint64_t>(10, 3), 5);
  const MixClock clock(MixSchedule::Constant({0.25, 0.75}), 4);
  Lane lane(0, 1, corpus.datasets, clock, {.dealers = {FirstDealerState(1), FirstDealerState(1)}});
  for (uint64_t step = 0; step < 20; ++step) {
    const LanePiece heavy = lane.Take(step, 4);
    const LanePiece light = lane.Take(step, 4 - heavy.count);
    EXPECT_EQ(heavy.unit.dataset, 1u) << "step " << step;
    EXPECT_EQ(light.unit.dataset, 0u) << "step " << step;
    EXPECT_EQ(heavy.unit.due, light.unit.due);
  }
}

// Weights that jump three times (steps 40, 60, 130) and ramp dataset 3 up from 0 (steps 60 to
// 100); dataset 2 weighs 1e-9 throughout.
MixSchedule TinyAndRamp() {
  return MixSchedule(
      {{.step = 0, .weights = MixSchedule::Normalized({0.7, 0.3, 1e-9, 0.0})},
       {.step = 40, .weights = MixSchedule::Normalized({0.4, 0.6, 1e-9, 0.0})},
       {.step = 60, .weights = MixSchedule::Normalized({0.5, 0.5, 1e-9, 0.0})},
       {.step = 100, .ramp = true, .weights = MixSchedule::Normalized({0.4, 0.3, 1e-9, 0.3})},
       {.step = 130, .weights = MixSchedule::Normalized({0.6, 0.2, 1e-9, 0.2})}});
}

// Over all lanes and every step: the 1e-9 dataset within one of its units of its share (it gets
// none: its share of 200 steps is about a thousandth of a token); the dataset whose weight ramps
// up from 0 starts its first unit at most a step before that unit falls due (when its share has
// earned it), long after the ramp begins; every dataset within a unit a lane of its share.
TEST(Lane, ATinyWeightGetsItsShareAndARampFromZeroStartsWhenItHasEarnedAUnit) {
  Corpus corpus;
  corpus.Add(Sizes(2000, 600, true, 21), 21);
  corpus.Add(Sizes(500, 900, false, 22), 21);
  corpus.Add(Sizes(40, 300, false, 23), 21);
  corpus.Add(Sizes(300, 400, false, 24), 21);
  const uint64_t largest = Largest(corpus);
  const uint64_t tiny_largest = *std::max_element(corpus.sizes[2].begin(), corpus.sizes[2].end());
  for (uint32_t lanes = 1; lanes <= 7; ++lanes) {
    LaneRun run(corpus, TinyAndRamp(), 257, lanes);
    while (run.step() < 200) {
      run.Step();
      for (uint32_t d = 0; d < 4; ++d) {
        const double share = run.clock().Earned(d, run.step());
        ASSERT_LE(std::abs(static_cast<double>(run.tokens(d)) - share),
                  static_cast<double>(d == 2 ? tiny_largest : lanes * largest))
            << "dataset " << d << ", " << lanes << " lanes, step " << run.step();
      }
    }
    EXPECT_EQ(run.tokens(2), 0u);
    EXPECT_GT(run.first_start(3), 60u + 5);
    EXPECT_LE(run.first_due(3), static_cast<double>(run.first_start(3) + 2)) << lanes << " lanes";
  }
}

// A dataset walked by each lane on its own, beside a dealt 14-unit one: every lane keeps to the
// weights (its tokens of the walked one within a unit of its part of the share), and the dealt
// dataset's epochs hold over all lanes.
TEST(Lane, AWalkedDatasetKeepsItsShareOnEveryLane) {
  Corpus corpus = SmallBesideLarge(15);
  corpus.datasets[0].walked = true;
  const uint64_t largest = Largest(corpus);
  for (uint64_t lane_tokens : {129, 4 * 1025}) {
    for (uint32_t lanes = 1; lanes <= 7; ++lanes) {
      LaneRun run(corpus, MixSchedule::Constant({0.4, 0.6}), lane_tokens, lanes);
      while (run.Least(1) < 20) {
        run.Step();
        ASSERT_LE(run.Spread(1), 2u)
            << lanes << " lanes of " << lane_tokens << ", step " << run.step();
        for (uint32_t lane = 0; lane < lanes; ++lane) {
          const double share = run.clock().Earned(0, run.step()) / lanes;
          ASSERT_LE(std::abs(static_cast<double>(run.tokens(lane, 0)) - share), largest)
              << "lane " << lane << " of " << lanes << ", step " << run.step();
        }
      }
    }
  }
}

// Random corpora, weights that jump and ramp, chains of resumes on 1 to 8 lanes, steps of 17 to
// 4,100 tokens a lane: the spread stays within 2 for every dataset of which a step delivers at
// most two epochs. (A dataset of a few short units at a large weight, several epochs of it in one
// step, can reach 3 or 4 at a step's end: within a step each lane starts the units due in it in
// its own order; docs/design.md.)
TEST(Lane, TheEpochsHoldOverRandomCorporaSchedulesAndChains) {
  int runs = 0;
  for (uint64_t seed = 300; runs < 24; ++seed) {
    CounterRng rng(seed);
    Corpus corpus;
    corpus.Add(Sizes(500 + rng.NextBelow(3000), 10 + rng.NextBelow(3000), rng.NextBelow(2), seed),
               seed);
    corpus.Add(Sizes(2 + rng.NextBelow(30), 10 + rng.NextBelow(3000), rng.NextBelow(2), seed + 1),
               seed);
    corpus.Add(Sizes(20 + rng.NextBelow(200), 10 + rng.NextBelow(1000), false, seed + 2), seed);
    std::vector<double> weights = {rng.NextDouble(), rng.NextDouble(), rng.NextDouble()};
    std::vector<double> later = weights, last = weights;
    later[0] = rng.NextDouble();
    last[1] = rng.NextDouble();
    const MixSchedule schedule(
        {{.step = 0, .weights = MixSchedule::Normalized(weights)},
         {.step = 30 + rng.NextBelow(50), .weights = MixSchedule::Normalized(later)},
         {.step = 100 + rng.NextBelow(50),
          .ramp = true,
          .weights = MixSchedule::Normalized(last)}});
    const uint64_t lane_tokens = std::vector<uint64_t>{17, 129, 513, 4100}[rng.NextBelow(4)];
    // Skip corpora where a step would deliver more than two epochs of a dataset at 8 lanes.
    bool fits = true;
    for (uint32_t d = 0; d < 3; ++d) {
      double tokens = 0;
      for (uint64_t size : corpus.sizes[d]) tokens += static_cast<double>(size);
      for (const MixEntry& entry : schedule.entries()) {
        fits = fits && entry.weights[d] * 8 * static_cast<double>(lane_tokens) <= 2 * tokens;
      }
    }
    if (!fits) continue;
    ++runs;
    uint32_t lanes = 1 + rng.NextBelow(8);
    LaneRun run(corpus, schedule, lane_tokens, lanes);
    std::string chain = std::to_string(lanes);
    while (run.Least(1) < 20 && run.step() < 3000) {
      run.Step();
      for (uint32_t d = 0; d < 3; ++d) {
        ASSERT_LE(run.Spread(d), 2u) << "seed " << seed << ", dataset " << d << ", lanes " << chain
                                     << " of " << lane_tokens << " tokens, step " << run.step();
      }
      if (rng.NextBelow(40) == 0) {
        lanes = 1 + rng.NextBelow(8);
        run.Resume(lanes);
        chain += "," + std::to_string(lanes);
      }
    }
    ExpectEveryPositionStartsOnce(corpus, run);
  }
}

}  // namespace
}  // namespace stoker
