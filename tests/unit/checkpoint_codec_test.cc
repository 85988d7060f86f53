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
  const std::string bytes = EncodeCheckpoint(c);
  EXPECT_EQ(VersionOf(bytes), 3u);
  EXPECT_EQ(DecodeCheckpoint(bytes, "f"), c);
  EXPECT_EQ(DecodeCheckpoint(bytes, "f").run, "4f3a0c9be18d2a7755c0e3f1b6a98d12");
  EXPECT_LT(bytes.size(), 400u);  // cursors, not tokens: a few bytes per logical shard
}

// Version 4 is version 3 with the layout (a str) after the run identity, written only by a job
// with a layout: the same checkpoint without one is exactly its version 3 file.
TEST(CheckpointCodec, ALayoutIsVersion4AndItsAbsenceVersion3) {
  RankCheckpoint c = SomeCheckpoint();
  c.layout = "tp=2,cp=1,dp=2,pp=1";
  const std::string v4 = EncodeCheckpoint(c);
  EXPECT_EQ(VersionOf(v4), 4u);
  EXPECT_EQ(DecodeCheckpoint(v4, "f"), c);
  std::string payload = v4.substr(20, v4.size() - 28);
  const std::string field = "\x13" + c.layout;  // length 19, then the text
  const size_t at = payload.find(field);
  ASSERT_NE(at, std::string::npos);
  payload.erase(at, field.size());
  RankCheckpoint flat = c;
  flat.layout.clear();
  EXPECT_EQ(FrameFile("STOKERCK", 3, payload), EncodeCheckpoint(flat));
}

// Version 3 is version 2 with the run identity (a str) after the rank: the same file without it,
// framed as version 2, reads as the same checkpoint without a run identity, and a checkpoint
// without one encodes as exactly that file.
TEST(CheckpointCodec, AVersion2FileWithoutRunIdentityIsRead) {
  const RankCheckpoint c = SomeCheckpoint();
  const std::string v3 = EncodeCheckpoint(c);
  std::string payload = v3.substr(20, v3.size() - 28);
  FieldWriter head;  // the fields before the run identity: the order identity, world and rank
  head.Str(c.identity.corpus_fingerprint);
  head.U(c.identity.seed);
  head.U(c.identity.logical_shards);
  head.U(c.identity.seq_len);
  head.S(c.identity.eos_id);
  head.U(1);
  head.S(*c.identity.bos_id);
  head.U(c.identity.datasets.size());
  for (const std::string& name : c.identity.datasets) head.Str(name);
  head.U(c.world);
  head.U(c.rank);
  const size_t at = head.bytes().size();
  ASSERT_EQ(payload.substr(0, at), head.bytes());
  ASSERT_EQ(payload.substr(at, 33), "\x20" + c.run);  // length 32, then the digits
  payload.erase(at, 33);
  const std::string v2 = FrameFile("STOKERCK", 2, payload);
  RankCheckpoint without = c;
  without.run.clear();
  EXPECT_EQ(DecodeCheckpoint(v2, "v2"), without);
  EXPECT_EQ(EncodeCheckpoint(without), v2);
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
      DecodeCheckpoint(FrameFile("STOKERCK", 3, bad), "rank-1.ckpt");
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

TEST(CheckpointCodec, ADeficitThatIsNoNumberOrAnUnknownVersionIsRefused) {
  RankCheckpoint c = SomeCheckpoint();
  c.state.deficit[1] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(DecodeCheckpoint(EncodeCheckpoint(c), "f"), DataError);
  const std::string good = EncodeCheckpoint(SomeCheckpoint());
  const std::string v5 = FrameFile("STOKERCK", 5, good.substr(20, good.size() - 28));
  try {
    DecodeCheckpoint(v5, "f");
    ADD_FAILURE() << "version 5 was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("format version 5 (this stoker reads 1 to 4)"),
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
