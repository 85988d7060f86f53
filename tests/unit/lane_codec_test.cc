// The fields of a lane's state (state/lane_codec.h): a lane's real state, open units, earlier
// states and positions passed over among them, reads back equal; every truncation and every
// flipped byte is a DataError or a state, never a crash; what no lane holds is refused.
#include "state/lane_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mixing/lane.h"
#include "mixing/mix_clock.h"
#include "mixing/mix_schedule.h"
#include "order/random.h"
#include "stoker/error.h"

namespace stoker {
namespace {

constexpr uint32_t kLanes = 5;

std::vector<uint64_t> Sizes(uint64_t units, uint64_t key) {
  CounterRng rng(key);
  std::vector<uint64_t> sizes(units);
  for (uint64_t& size : sizes) size = rng.NextBelow(10) == 0 ? 0 : 1 + rng.NextBelow(700);
  return sizes;
}

// Lane 3 of 5 after 40 steps of 300 tokens over a dataset of 14 units and one of 900, started
// from a state dealt again after a resume (positions to pass over), cut mid-step (units open).
LaneState RealState() {
  static const std::vector<uint64_t> small = Sizes(14, 1), large = Sizes(900, 2);
  const std::vector<LaneDataset> datasets = {{.sizes = small, .key = 11, .tie = 1},
                                             {.sizes = large, .key = 12, .tie = 2}};
  const MixClock clock(MixSchedule::Constant({0.4, 0.6}), kLanes * 300);
  DealerState dealt = FirstDealerState(kLanes);
  dealt.skip = {0, 2, 3};
  Lane lane(3, kLanes, datasets, clock, {.dealers = {dealt, dealt}});
  for (uint64_t step = 0; step < 40; ++step) {
    for (uint64_t room = step == 39 ? 170 : 300; room > 0;) room -= lane.Take(step, room).count;
  }
  return lane.state();
}

std::string Encode(const LaneState& state) {
  FieldWriter w;
  PutLaneState(state, &w);
  return w.bytes();
}

LaneState Decode(const std::string& bytes, uint64_t datasets = 2) {
  FieldReader r(bytes, "rank-3.ckpt", "stoker checkpoint");
  LaneState state = GetLaneState(&r, datasets, kLanes);
  if (!r.done()) r.Fail("bytes after the lane's state");
  return state;
}

TEST(LaneCodec, ALanesStateReadsBackEqual) {
  const LaneState state = RealState();
  ASSERT_FALSE(state.open.empty());
  ASSERT_FALSE(state.earlier[1].empty());
  EXPECT_EQ(Decode(Encode(state)), state);
  const LaneState empty{.dealers = {FirstDealerState(kLanes), FirstDealerState(kLanes)}};
  LaneState expected = empty;
  expected.started = {0, 0};
  expected.earlier.resize(2);
  EXPECT_EQ(Decode(Encode(empty)), expected);
}

TEST(LaneCodec, EveryTruncationAndFlippedByteIsADataErrorOrAState) {
  const std::string bytes = Encode(RealState());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(Decode(bytes.substr(0, n)), DataError) << "cut at " << n;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit : {0, 3, 7}) {
      std::string flipped = bytes;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      try {
        Decode(flipped);
      } catch (const DataError&) {
      }
    }
  }
}

TEST(LaneCodec, RefusesWhatNoLaneHolds) {
  const LaneState state = RealState();
  const auto refused = [&](LaneState bad, const std::string& words) {
    try {
      Decode(Encode(bad));
      ADD_FAILURE() << "accepted; expected " << words;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank-3.ckpt"), std::string::npos) << e.what();
    }
  };
  LaneState bad = state;
  bad.dealers[0].loads.push_back(0);
  refused(bad, "a dealer state of 6 lanes, not 5");
  bad = state;
  bad.open[0].done = bad.open[0].unit.dealt.size;
  refused(bad, "done past its size");
  bad = state;
  bad.open[0].unit.due = std::nan("");
  refused(bad, "due at no time");
  bad = state;
  bad.open[0].unit.dataset = 2;
  refused(bad, "an open unit of no dataset");
  bad = state;
  bad.earlier[1][0].skip = {bad.earlier[1][0].position + 4, bad.earlier[1][0].position + 4};
  refused(bad, "do not increase");
  EXPECT_THROW(Decode(Encode(state), 3), DataError);  // more datasets than the bytes hold
}

}  // namespace
}  // namespace stoker
