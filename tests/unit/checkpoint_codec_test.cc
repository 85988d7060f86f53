// The checkpoint file's codec: a rank's state round trips byte for byte, every flipped bit or cut
// is refused naming the file, and identity differences are named one per line.
#include "state/checkpoint_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/fake_corpus.h"
#include "packing/row_planner.h"
#include "state/field_codec.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::ConfigFor;
using testing::FakeCorpus;

constexpr uint64_t kCodecShards = 61;

// Rank 1 of 2 after `rows` rows, weights 3:1: cursors moved, documents cut, counters counted.
RankState StateAfterRows(const FakeCorpus& corpus, int rows) {
  const PlannerConfig config = ConfigFor(corpus, {3, 1}, kCodecShards, 2, 1);
  RowPlanner planner(config, InitialRankState(2, kCodecShards, 2, 1), corpus.Locator());
  std::vector<Segment> row;
  for (int i = 0; i < rows; ++i) planner.NextRow(&row);
  planner.EndBatch();
  return planner.state();
}

RankCheckpoint SomeCheckpoint() {
  const FakeCorpus corpus = FakeCorpus::Make({500, 200}, 13);
  RankCheckpoint c;
  c.identity = {.corpus_fingerprint = "0123456789abcdef0123456789abcdef",
                .seed = 5,
                .logical_shards = kCodecShards,
                .seq_len = 96,
                .eos_id = 1000,
                .bos_id = 1001,
                .datasets = corpus.names};
  c.weights = {0.75, 0.25};
  c.schedule = MixSchedule(
      {{.step = 0, .weights = {0.5, 0.5}}, {.step = 100, .ramp = true, .weights = {0.75, 0.25}}});
  c.world = 2;
  c.rank = 1;
  c.run = "4f3a0c9be18d2a7755c0e3f1b6a98d12";
  c.state = StateAfterRows(corpus, 17);
  c.state.step_tokens = 2 * 97;  // as the loader's RebaseClock leaves it
  c.state.clock = {.step = 1, .earned = {120.5, 73.5}};
  return c;
}

// The format version a file's bytes 8..11 hold.
uint32_t VersionOf(const std::string& bytes) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[8 + i])) << 8 * i;
  return v;
}

TEST(CheckpointCodec, RoundTrips) {
  const RankCheckpoint c = SomeCheckpoint();
  ASSERT_FALSE(c.state.lane.open.empty());  // a document cut by a row's end
  ASSERT_GT(c.state.step_tokens, 0u);
  const std::string bytes = EncodeCheckpoint(c);
  EXPECT_EQ(VersionOf(bytes), 5u);
  EXPECT_EQ(DecodeCheckpoint(bytes, "f"), c);
  EXPECT_EQ(DecodeCheckpoint(bytes, "f").run, "4f3a0c9be18d2a7755c0e3f1b6a98d12");
  EXPECT_LT(bytes.size(), 400u);  // cursors, not tokens: a few bytes per logical shard
  RankCheckpoint laid_out = c;
  laid_out.layout = "tp=2,cp=1,dp=2,pp=1";
  EXPECT_EQ(DecodeCheckpoint(EncodeCheckpoint(laid_out), "f"), laid_out);
  // A dataset dealt by 3 old ranks, to be dealt again on these 2 (a rescale's): its state of
  // the old dealing and the old ranks' positions; loads of another number of lanes are refused.
  RankCheckpoint pending = c;
  pending.state.lane.dealers[1] = {.position = 30, .start = 900, .loads = {400, 420, 410}};
  pending.state.redeal = {{}, {31, 33, 32}};
  EXPECT_EQ(DecodeCheckpoint(EncodeCheckpoint(pending), "f"), pending);
  pending.state.redeal[1] = {31, 33};
  EXPECT_THROW(DecodeCheckpoint(EncodeCheckpoint(pending), "f"), DataError);
}

// Counts beyond 32 bits round trip: a logical shard's cursor of more than 2^32 documents and
// epochs, an interleaving as long, 10^14 started tokens (100 T), a step beyond 2^32.
TEST(CheckpointCodec, CountsBeyond32BitsRoundTrip) {
  RankCheckpoint c = SomeCheckpoint();
  constexpr uint64_t kBig = (uint64_t{1} << 32) + 3;
  ASSERT_GE(c.state.cursors.size(), 2 * c.state.datasets);
  c.state.step = kBig;
  c.state.cursors[0] = {.epoch = kBig, .position = 5 * kBig};
  c.state.cursors[c.state.datasets] = {.epoch = kBig, .position = 3 * kBig};
  c.state.cursors[1] = {.epoch = 0, .position = uint64_t{1} << 62};
  c.state.interleave[0] = {.cycle = kBig, .index = 7 * kBig};
  ASSERT_FALSE(c.state.lane.started.empty());
  c.state.lane.started[0] = uint64_t{100'000'000'000'000};
  EXPECT_EQ(DecodeCheckpoint(EncodeCheckpoint(c), "f"), c);
}

// The payload of a file of version 2, 3 or 4 (the mixer by deficits): `c` with its started tokens,
// `deficit` for every dataset, its unfinished documents; version 2 without the run identity, 3
// without the layout.
std::string OldPayload(const RankCheckpoint& c, uint32_t version, double deficit = 0.5) {
  FieldWriter w;
  w.Str(c.identity.corpus_fingerprint);
  w.U(c.identity.seed);
  w.U(c.identity.logical_shards);
  w.U(c.identity.seq_len);
  w.S(c.identity.eos_id);
  w.U(1);
  w.S(*c.identity.bos_id);
  w.U(c.identity.datasets.size());
  for (const std::string& name : c.identity.datasets) w.Str(name);
  w.U(c.world);
  w.U(c.rank);
  if (version >= 3) w.Str(c.run);
  if (version >= 4) w.Str(c.layout);
  for (double weight : c.weights) w.D(weight);
  w.bytes() += EncodeMixSchedule(c.schedule);
  const RankState& s = c.state;
  for (uint64_t v : {s.step, s.generation, s.shards.begin, s.shards.end}) w.U(v);
  for (uint64_t d = 0; d < s.datasets; ++d) {
    w.U(s.lane.started[d]);
    w.D(deficit);
    w.U(s.interleave[d].cycle);
    w.U(s.interleave[d].index);
  }
  for (uint64_t d = 0; d < s.datasets; ++d) {  // every cursor in the long form
    ShardCursor previous;
    for (uint64_t j = s.shards.begin; j < s.shards.end; ++j) {
      const ShardCursor& cursor = s.cursor(j, static_cast<uint32_t>(d));
      w.U(1);
      w.S(static_cast<int64_t>(cursor.epoch - previous.epoch));
      w.S(static_cast<int64_t>(cursor.position - previous.position));
      w.U(cursor.offset);
      previous = cursor;
    }
  }
  w.U(s.unfinished.size());
  for (const UnfinishedDoc& u : s.unfinished) {
    w.U(u.dataset);
    w.U(u.shard);
  }
  return std::move(w.bytes());
}

// A checkpoint as a file of version 2 to 4 held it: no clock, no open unit, a document cut by a
// row's end unfinished at its cursor.
RankCheckpoint OldCheckpoint() {
  RankCheckpoint c = SomeCheckpoint();
  c.state.lane.open.clear();
  c.state.step_tokens = 0;
  c.state.clock = {};
  const uint64_t shard = c.state.shards.begin + 2;
  c.state.cursor(shard, 1).offset = 9;
  c.state.unfinished = {{1, shard}};
  return c;
}

// Versions 2 to 4 are read as a state of lanes would hold them: the started tokens kept, the
// deficits dropped, the unfinished documents left for the planner to open, no clock.
TEST(CheckpointCodec, Versions2To4AreReadWithoutTheirDeficits) {
  RankCheckpoint c = OldCheckpoint();
  c.layout = "tp=2,cp=1,dp=2,pp=1";
  EXPECT_EQ(DecodeCheckpoint(FrameFile("STOKERCK", 4, OldPayload(c, 4)), "v4"), c);
  c.layout.clear();
  EXPECT_EQ(DecodeCheckpoint(FrameFile("STOKERCK", 3, OldPayload(c, 3)), "v3"), c);
  c.run.clear();
  const std::string v2 = FrameFile("STOKERCK", 2, OldPayload(c, 2, 0.0));
  EXPECT_EQ(DecodeCheckpoint(v2, "v2"), c);
  // Without a run identity (resharded from such a file) it is written as version 2 again.
  EXPECT_EQ(VersionOf(EncodeCheckpoint(c)), 2u);
  EXPECT_EQ(DecodeCheckpoint(EncodeCheckpoint(c), "again"), c);
  const std::string nan = FrameFile("STOKERCK", 2, OldPayload(c, 2, std::nan("")));
  EXPECT_THROW(DecodeCheckpoint(nan, "f"), DataError);
}

TEST(CheckpointCodec, ARunIdentityThatIsNot32HexDigitsIsRefused) {
  const std::string good = EncodeCheckpoint(SomeCheckpoint());
  const std::string payload = good.substr(20, good.size() - 28);
  const size_t at = payload.find(SomeCheckpoint().run);
  ASSERT_NE(at, std::string::npos);
  for (const std::string& run : {std::string("4F3A0C9BE18D2A7755C0E3F1B6A98D12"),
                                 std::string("4f3a0c9be18d2a77"), std::string()}) {
    std::string bad = payload;
    bad.replace(at - 1, 33, static_cast<char>(run.size()) + run);
    try {
      DecodeCheckpoint(FrameFile("STOKERCK", 5, bad), "rank-1.ckpt");
      ADD_FAILURE() << "run identity \"" << run << "\" was accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("a run identity that is not 32 hex digits"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(CheckpointCodec, EveryFlippedBitOrCutIsRefused) {
  const std::string bytes = EncodeCheckpoint(SomeCheckpoint());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      EXPECT_THROW(DecodeCheckpoint(bad, "rank-1.ckpt"), DataError) << "byte " << i;
    }
  }
  for (size_t n : {size_t{0}, size_t{7}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    try {
      DecodeCheckpoint(bytes.substr(0, n), "rank-1.ckpt");
      ADD_FAILURE() << "a file cut to " << n << " bytes was accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("rank-1.ckpt"), std::string::npos) << e.what();
    }
  }
}

// A weight schedule as a file could hold it, shape unchecked: (step, ramp, weights) entries.
struct RawEntry {
  uint64_t step, ramp;
  std::vector<double> weights;
};
std::string RawSchedule(const std::vector<RawEntry>& entries) {
  FieldWriter w;
  w.U(entries.size());
  for (const RawEntry& e : entries) {
    w.U(e.step);
    w.U(e.ramp);
    for (double weight : e.weights) w.D(weight);
  }
  return std::move(w.bytes());
}

// Schedules a loader never writes, each refused naming the entry: none, a first entry not at step
// 0 or a ramp, steps not increasing, a ramp flag of 2, weights not normalized or not numbers.
TEST(CheckpointCodec, AScheduleOfABadShapeIsRefused) {
  const double nan = std::nan("");
  const std::pair<std::vector<RawEntry>, std::string> cases[] = {
      {{}, "without entries"},
      {{{5, 0, {1, 0}}}, "entry 1"},
      {{{0, 1, {1, 0}}}, "entry 1"},
      {{{0, 0, {1, 0}}, {0, 0, {0, 1}}}, "entry 2"},
      {{{0, 0, {1, 0}}, {9, 2, {0, 1}}}, "entry 2"},
      {{{0, 0, {0.5, 0.6}}}, "entry 1"},
      {{{0, 0, {nan, 1}}}, "entry 1"},
      {{{0, 0, {-0.5, 1.5}}}, "entry 1"},
  };
  for (const auto& [entries, words] : cases) {
    try {
      DecodeMixSchedule(RawSchedule(entries), 2, "f");
      ADD_FAILURE() << "accepted, where it should say: " << words;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(DecodeMixSchedule(RawSchedule({{0, 0, {0.5, 0.5}}, {7, 1, {1, 0}}}), 2, "f"),
            MixSchedule({{.step = 0, .weights = {0.5, 0.5}},
                         {.step = 7, .ramp = true, .weights = {1, 0}}}));
}

TEST(CheckpointCodec, AClockOfNoCountOrAnUnknownVersionIsRefused) {
  RankCheckpoint c = SomeCheckpoint();
  c.state.clock = {.step = 3, .earned = {1.0, -std::numeric_limits<double>::infinity()}};
  EXPECT_THROW(DecodeCheckpoint(EncodeCheckpoint(c), "f"), DataError);
  c.state.clock = {.step = c.state.step + 1, .earned = {1.0, 2.0}};  // after the state's step
  EXPECT_THROW(DecodeCheckpoint(EncodeCheckpoint(c), "f"), DataError);
  const std::string good = EncodeCheckpoint(SomeCheckpoint());
  const std::string v6 = FrameFile("STOKERCK", 6, good.substr(20, good.size() - 28));
  try {
    DecodeCheckpoint(v6, "f");
    ADD_FAILURE() << "version 6 was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("format version 6 (this stoker reads 1 to 5)"),
              std::string::npos)
        << e.what();
  }
}

TEST(CheckpointCodec, IdentityDifferencesNameWhatDiffers) {
  const OrderIdentity a = SomeCheckpoint().identity;
  OrderIdentity b = a;
  EXPECT_TRUE(IdentityDifferences(a, b).empty());
  b.seed = 6;
  b.bos_id.reset();
  const auto lines = IdentityDifferences(a, b);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "seed: checkpoint 5, now 6");
  EXPECT_EQ(lines[1], "bos_id: checkpoint 1001, now none");
}

}  // namespace
}  // namespace stoker
