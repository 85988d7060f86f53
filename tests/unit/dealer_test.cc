// Dealing a dataset's stream of units to lanes (order/dealer.h).
#include "order/dealer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "order/random.h"

namespace stoker {
namespace {

// Sizes drawn from a skewed distribution, with empty units and one unit far larger than the
// rest: what list scheduling must balance whatever the sizes.
std::vector<uint64_t> SkewedSizes(uint64_t units, uint64_t key) {
  CounterRng rng(key);
  std::vector<uint64_t> sizes(units);
  for (uint64_t& size : sizes) {
    const uint64_t kind = rng.NextBelow(10);
    size = kind == 0 ? 0 : kind < 8 ? 1 + rng.NextBelow(100) : 100 + rng.NextBelow(5000);
  }
  sizes[units / 2] = 50000;
  return sizes;
}

TEST(Dealer, EveryUnitOncePerEpochInOrderOfPositions) {
  for (uint64_t units : {1ull, 2ull, 14ull, 1000ull}) {
    const std::vector<uint64_t> sizes = SkewedSizes(units, units);
    Dealer dealer(sizes, /*key=*/7, FirstDealerState(5));
    for (uint64_t epoch = 0; epoch < 4; ++epoch) {
      std::vector<int> seen(units, 0);
      for (uint64_t i = 0; i < units; ++i) {
        const Dealt dealt = dealer.Next();
        ASSERT_EQ(dealt.position, epoch * units + i);
        ASSERT_EQ(dealt.epoch, epoch);
        ASSERT_LT(dealt.unit, units);
        ASSERT_EQ(dealt.size, sizes[dealt.unit]);
        ++seen[dealt.unit];
      }
      EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }))
          << units << " units, epoch " << epoch;
    }
  }
}

TEST(Dealer, EveryEpochHasItsOwnOrder) {
  const std::vector<uint64_t> sizes(1000, 1);
  Dealer dealer(sizes, /*key=*/7, FirstDealerState(1));
  std::vector<uint64_t> first, second;
  for (int i = 0; i < 1000; ++i) first.push_back(dealer.Next().unit);
  for (int i = 0; i < 1000; ++i) second.push_back(dealer.Next().unit);
  EXPECT_NE(first, second);
  Dealer other_key(sizes, /*key=*/8, FirstDealerState(1));
  std::vector<uint64_t> other;
  for (int i = 0; i < 1000; ++i) other.push_back(other_key.Next().unit);
  EXPECT_NE(first, other);
}

TEST(Dealer, StartIsTheStreamsTokensBeforeTheUnit) {
  const std::vector<uint64_t> sizes = SkewedSizes(37, 3);
  uint64_t total = 0;
  for (uint64_t size : sizes) total += size;
  Dealer dealer(sizes, /*key=*/1, FirstDealerState(3));
  uint64_t tokens = 0;
  for (uint64_t g = 0; g < 37 * 5; ++g) {
    if (g % 37 == 0) {
      EXPECT_EQ(tokens, g / 37 * total);
    }
    const Dealt dealt = dealer.Next();
    ASSERT_EQ(dealt.start, tokens);
    tokens += dealt.size;
  }
}

// List scheduling's bound: after every unit, no two lanes' loads differ by more than the largest
// unit, however many units were dealt, and the loads sum to the stream's tokens.
TEST(Dealer, LoadsNeverDifferByMoreThanTheLargestUnit) {
  for (uint32_t lanes : {1u, 2u, 3u, 7u, 64u}) {
    for (uint64_t units : {1ull, 14ull, 500ull}) {
      const std::vector<uint64_t> sizes = SkewedSizes(units, lanes * 1000 + units);
      const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
      Dealer dealer(sizes, /*key=*/lanes, FirstDealerState(lanes));
      for (uint64_t g = 0; g < 20 * std::max<uint64_t>(units, lanes); ++g) {
        const Dealt dealt = dealer.Next();
        const std::vector<uint64_t>& loads = dealer.state().loads;
        const auto [least, most] = std::minmax_element(loads.begin(), loads.end());
        ASSERT_LE(*most - *least, largest) << lanes << " lanes, " << units << " units, at " << g;
        uint64_t sum = 0;
        for (uint64_t load : loads) sum += load;
        ASSERT_EQ(sum, dealt.start + dealt.size);
      }
    }
  }
}

// Each position goes to the least loaded lane, the lower one on a tie.
TEST(Dealer, TheLeastLoadedLaneTakesTheNextUnitTheLowerOnATie) {
  const std::vector<uint64_t> sizes = SkewedSizes(50, 9);
  Dealer dealer(sizes, /*key=*/2, FirstDealerState(4));
  for (int g = 0; g < 500; ++g) {
    const std::vector<uint64_t> loads = dealer.state().loads;
    const uint32_t expected =
        static_cast<uint32_t>(std::min_element(loads.begin(), loads.end()) - loads.begin());
    ASSERT_EQ(dealer.Next().lane, expected) << "at " << g;
  }
}

// The state is a value: a dealer made from a saved state deals what the first one goes on to deal.
TEST(Dealer, AResumedDealerDealsTheSame) {
  const std::vector<uint64_t> sizes = SkewedSizes(29, 5);
  Dealer whole(sizes, /*key=*/4, FirstDealerState(6));
  std::vector<Dealt> expected;
  for (int g = 0; g < 300; ++g) expected.push_back(whole.Next());
  for (int cut : {0, 1, 28, 29, 30, 200}) {
    Dealer first(sizes, /*key=*/4, FirstDealerState(6));
    for (int g = 0; g < cut; ++g) first.Next();
    Dealer resumed(sizes, /*key=*/4, first.state());
    for (int g = cut; g < 300; ++g) ASSERT_EQ(resumed.Next(), expected[g]) << cut << ", " << g;
  }
}

// Positions to pass over go to no lane; the stream's tokens go on past them, and the state after
// them no longer names them.
TEST(Dealer, PassesOverThePositionsItIsToldTo) {
  const std::vector<uint64_t> sizes = SkewedSizes(20, 4);
  Dealer all(sizes, /*key=*/3, FirstDealerState(1));
  std::vector<Dealt> stream;
  for (int g = 0; g < 60; ++g) stream.push_back(all.Next());
  DealerState state = FirstDealerState(3);
  state.skip = {0, 5, 6, 19, 20, 41};
  Dealer dealer(sizes, /*key=*/3, state);
  std::vector<uint64_t> dealt_positions;
  while (dealer.state().position < 60) {
    const Dealt dealt = dealer.Next();
    EXPECT_EQ(dealt.unit, stream[dealt.position].unit);
    EXPECT_EQ(dealt.start, stream[dealt.position].start);
    dealt_positions.push_back(dealt.position);
  }
  for (uint64_t p : state.skip) {
    EXPECT_EQ(std::count(dealt_positions.begin(), dealt_positions.end(), p), 0) << p;
  }
  EXPECT_EQ(dealt_positions.size(), 60u - state.skip.size());
  EXPECT_TRUE(dealer.state().skip.empty());
}

}  // namespace
}  // namespace stoker
