// The fuzz targets' checks (tests/fuzz/fuzz_checks.h) in the ordinary build: every input of
// tests/fuzz/regressions/<target>/ (a crash libFuzzer found, since fixed) and of the seed corpus
// tests/fuzz/corpus/<target>/ must pass them, so a fixed parser bug that comes back fails here
// too, without clang. The config target needs CLI11 and `stoker run`'s options: scripts/fuzz.sh
// replays its regressions. Also, the codec bugs the checkpoint target found, stated directly.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_checks.h"
#include "state/checkpoint_codec.h"
#include "stoker/error.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Runs `check` on every file of tests/fuzz/{regressions,corpus}/<target>/; returns how many.
size_t Replay(const std::string& target, const std::function<void(std::string_view)>& check) {
  std::vector<fs::path> files;
  for (const char* kind : {"regressions", "corpus"}) {
    const fs::path dir = fs::path(STOKER_SOURCE_DIR) / "tests/fuzz" / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_NO_THROW(check(bytes)) << file;
  }
  return files.size();
}

TEST(FuzzRegressionsTest, Checkpoint) {
  EXPECT_GT(Replay("checkpoint", fuzz::CheckCheckpoint), 3u);
}
TEST(FuzzRegressionsTest, Weights) { EXPECT_GT(Replay("weights", fuzz::CheckWeights), 3u); }
TEST(FuzzRegressionsTest, JsonlLine) { EXPECT_GT(Replay("jsonl", fuzz::CheckJsonlLine), 3u); }
TEST(FuzzRegressionsTest, Trace) { EXPECT_GT(Replay("trace", fuzz::CheckTrace), 3u); }

// The checkpoint seeds are real rank files of `stoker run` (minus their checksum): they decode,
// so the fuzzer starts from inputs that reach every part of the decoder.
// A seed file with its checksum appended: a rank file as `stoker run` wrote it.
std::string SeedFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const uint64_t sum = XXH3_64bits(file.data(), file.size());
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<char>(sum >> (8 * i)));
  return file;
}

TEST(FuzzRegressionsTest, CheckpointSeedsAreValidFiles) {
  const fs::path dir = fs::path(STOKER_SOURCE_DIR) / "tests/fuzz/corpus/checkpoint";
  size_t seeds = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.path().filename().string().starts_with("run-")) continue;
    EXPECT_NO_THROW(DecodeCheckpoint(SeedFile(entry.path()), entry.path().string()));
    ++seeds;
  }
  EXPECT_GE(seeds, 6u);
}

// Format version 1 (before weight schedules) is still read: its weights from step 0 on, no clock
// (the planner starts one). Version 2 keeps the schedule it ran under. Neither has a run
// identity.
TEST(FuzzRegressionsTest, CheckpointFormatVersions1And2AreRead) {
  const fs::path dir = fs::path(STOKER_SOURCE_DIR) / "tests/fuzz/corpus/checkpoint";
  const RankCheckpoint v1 = DecodeCheckpoint(SeedFile(dir / "run-step9-rank1-of-3-weights"), "v1");
  EXPECT_EQ(v1.schedule, MixSchedule::Constant(v1.weights));
  EXPECT_EQ(v1.state.step_tokens, 0u);
  EXPECT_EQ(v1.state.lane.started.size(), v1.state.datasets);
  EXPECT_TRUE(v1.run.empty());
  const RankCheckpoint v2 = DecodeCheckpoint(SeedFile(dir / "run-schedule-rank0-of-2"), "v2");
  ASSERT_EQ(v2.schedule.entries().size(), 3u);  // "0:a=1,b=1;5:a=3;~20:b=1"
  EXPECT_TRUE(v2.schedule.entries()[2].ramp);
  EXPECT_EQ(v2.schedule.entries()[1].weights, (std::vector<double>{1.0, 0.0}));
  EXPECT_EQ(v2.weights, v2.schedule.WeightsAt(v2.state.step));
  EXPECT_TRUE(v2.run.empty());
}

// Version 3 adds the run identity: both rank files of one save carry the same one.
TEST(FuzzRegressionsTest, CheckpointFormatVersion3CarriesTheRunIdentity) {
  const fs::path dir = fs::path(STOKER_SOURCE_DIR) / "tests/fuzz/corpus/checkpoint";
  const RankCheckpoint r0 = DecodeCheckpoint(SeedFile(dir / "run-identity-rank0-of-2"), "r0");
  const RankCheckpoint r1 = DecodeCheckpoint(SeedFile(dir / "run-identity-rank1-of-2"), "r1");
  EXPECT_EQ(r0.run.size(), 32u);
  EXPECT_EQ(r0.run, r1.run);
  EXPECT_EQ(r1.rank, 1u);
  EXPECT_EQ(DecodeCheckpoint(EncodeCheckpoint(r1), "again"), r1);
}

// Version 5 holds the lanes' state: `stoker run` on 2 ranks, weights a=3,b=1, saved at step 6
// with documents of a open; the clock of 2 x 2 x 32 tokens a step from step 0.
TEST(FuzzRegressionsTest, CheckpointFormatVersion5HoldsTheLanes) {
  const fs::path dir = fs::path(STOKER_SOURCE_DIR) / "tests/fuzz/corpus/checkpoint";
  size_t open = 0;
  for (const char* name : {"run-lanes-rank0-of-2", "run-lanes-rank1-of-2"}) {
    const RankCheckpoint c = DecodeCheckpoint(SeedFile(dir / name), name);
    EXPECT_EQ(c.state.step, 6u);
    EXPECT_EQ(c.state.step_tokens, 128u);
    EXPECT_TRUE(c.state.unfinished.empty());
    for (const OpenUnit& unit : c.state.lane.open) {
      EXPECT_LT(unit.done, unit.unit.dealt.size);
      EXPECT_EQ(unit.unit.dealt.lane, c.rank);
    }
    open += c.state.lane.open.size();
    EXPECT_EQ(DecodeCheckpoint(EncodeCheckpoint(c), "again"), c);
  }
  EXPECT_GE(open, 1u);
}

RankCheckpoint OneShardCheckpoint() {
  RankCheckpoint c;
  c.identity.logical_shards = 2;
  c.identity.seq_len = 8;
  c.identity.datasets = {"web"};
  c.weights = {1.0};
  c.schedule = MixSchedule::Constant(c.weights);
  c.state.datasets = 1;
  c.state.shards = {0, 2};
  c.state.cursors.resize(2);
  c.state.lane.dealers.resize(1);
  c.state.lane.started.resize(1);
  c.state.lane.earlier.resize(1);
  c.state.interleave.resize(1);
  return c;
}

// Found by checkpoint_fuzz: a cursor difference beyond 2^62 lost its top bit in the short form.
TEST(FuzzRegressionsTest, HugeCursorDifferenceRoundTrips) {
  for (uint64_t position : {uint64_t{1} << 62, (uint64_t{1} << 62) + 3, ~uint64_t{0}}) {
    RankCheckpoint c = OneShardCheckpoint();
    c.state.cursors[1].position = position;
    EXPECT_EQ(DecodeCheckpoint(EncodeCheckpoint(c), "f"), c) << position;
  }
}

// An unfinished document's dataset index is checked before it is narrowed to 32 bits.
TEST(FuzzRegressionsTest, UnfinishedDatasetBeyond32BitsIsRefused) {
  RankCheckpoint c = OneShardCheckpoint();
  c.state.cursors[0].offset = 3;
  c.state.unfinished = {{0, 0}};
  const std::string good = EncodeCheckpoint(c);
  EXPECT_EQ(DecodeCheckpoint(good, "f"), c);
  // The same state with dataset 2^32 (varint 80 80 80 80 10 instead of 00), re-framed with a
  // correct length and checksum: before the fix it decoded as dataset 0.
  std::string payload = good.substr(20, good.size() - 28);
  ASSERT_EQ(payload.substr(payload.size() - 3), std::string("\x01\x00\x00", 3));
  payload.replace(payload.size() - 2, 1, std::string("\x80\x80\x80\x80\x10", 5));
  std::string bad = good.substr(0, 12);
  for (int i = 0; i < 8; ++i) bad.push_back(static_cast<char>(payload.size() >> (8 * i)));
  bad += payload;
  const uint64_t sum = XXH3_64bits(bad.data(), bad.size());
  for (int i = 0; i < 8; ++i) bad.push_back(static_cast<char>(sum >> (8 * i)));
  try {
    DecodeCheckpoint(bad, "rank-0.ckpt");
    ADD_FAILURE() << "an unfinished document of dataset 2^32 was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("unfinished document"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stoker
