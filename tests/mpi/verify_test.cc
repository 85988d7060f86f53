// VerifyCorpus on real files at 1, 2 and 4 ranks: one test per fault of the shard format, each on a
// tiny corpus that rank 0 writes, checking the exact problem (file, object, index) and the key
// words of its message on every rank, and that every rank got the same report. The content
// checksum: one that no longer matches is named, whatever byte order or layout the file has;
// a malformed one is refused; --record writes the writer's checksum into clean shards without
// one, and only into those.
#include "shard/verify.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "common/test_support.h"
#include "shard/shard_check.h"
#include "stoker/error.h"
#include "tokens/content_checksum.h"

namespace stoker {
namespace {

using testing::RawArray;
using testing::RawShard;
using testing::ShardOfLengths;
using testing::SharedTempDir;
using testing::WriteRawShard;
using testing::WriteTestShard;

struct Expected {
  std::string file;
  std::string object;
  std::optional<uint64_t> index;
  std::vector<std::string> words;  // each must appear in the message
};

void ExpectProblem(const Problem& p, const Expected& e) {
  EXPECT_EQ(p.file, e.file) << p.ToString();
  EXPECT_EQ(p.object, e.object) << p.ToString();
  EXPECT_EQ(p.index, e.index) << p.ToString();
  for (const auto& word : e.words) {
    EXPECT_NE(p.message.find(word), std::string::npos)
        << "'" << word << "' not in: " << p.ToString();
  }
}

class VerifyTest : public ::testing::Test {
 protected:
  // Runs `write` on rank 0 only; every rank fails with it if it throws.
  void OnRankZero(const std::function<void()>& write) { testing::OnRankZero(comm_, write); }

  void Write(const std::string& rel, const RawShard& shard) {
    OnRankZero([&] { WriteRawShard(dir_ / rel, shard); });
  }

  // Verifies the corpus and checks that every rank got the same report.
  VerifyReport Verify(const VerifyOptions& options = {}) {
    VerifyReport report = VerifyCorpus(comm_, dir_.path(), options);
    std::string text = fmt::format("{} {} {} {} {}\n", report.datasets, report.files,
                                   report.files_read, report.documents, report.tokens);
    for (const auto& p : report.problems) text += p.ToString() + "\n";
    const auto all = comm_.AllGather(text);
    for (int r = 1; r < comm_.size(); ++r) EXPECT_EQ(all[r], all[0]) << "rank " << r << " differs";
    return report;
  }

  // Verifies, expecting exactly one problem.
  void ExpectOnly(const Expected& expected) {
    const VerifyReport report = Verify();
    ASSERT_EQ(report.problems.size(), 1u) << Describe(report);
    ExpectProblem(report.problems[0], expected);
    EXPECT_FALSE(report.ok());
  }

  static std::string Describe(const VerifyReport& report) {
    std::string text;
    for (const auto& p : report.problems) text += "\n  " + p.ToString();
    return text;
  }

  mpi::Comm comm_{MPI_COMM_WORLD};
  SharedTempDir dir_{MPI_COMM_WORLD};
};

TEST_F(VerifyTest, CleanCorpusHasNoProblems) {
  OnRankZero([&] {
    WriteTestShard(dir_ / "web/part-0.h5", {{1, 2, 3}, {4}, {}}, TokenType::kUint16,
                   {.vocab_size = 10, .eos_id = 9, .bos_id = 0});
    WriteTestShard(dir_ / "web/sub/part-1.h5", {{5, 6}}, TokenType::kUint32);
    WriteTestShard(dir_ / "code/part-0.h5", {{7}, {8, 9}}, TokenType::kInt64, {.vocab_size = 10});
  });
  const VerifyReport report = Verify();
  EXPECT_TRUE(report.ok()) << Describe(report);
  EXPECT_EQ(report.datasets, 2u);
  EXPECT_EQ(report.files, 3u);
  EXPECT_EQ(report.files_read, 3u);
  EXPECT_EQ(report.documents, 6u);
  EXPECT_EQ(report.tokens, 9u);
  const std::string summary = report.Summary(1.25);
  EXPECT_EQ(summary, "OK: 2 datasets, 3 files, 6 documents, 9 tokens checked in 1.2 s");
}

TEST_F(VerifyTest, TruncatedFile) {
  OnRankZero([&] {
    std::vector<std::vector<uint64_t>> docs(100, std::vector<uint64_t>(100, 7));
    const std::string path = dir_ / "web/part-0.h5";
    WriteTestShard(path, docs);
    const auto size = std::filesystem::file_size(path);
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(size / 2)), 0);
  });
  const auto size = std::filesystem::file_size(dir_ / "web/part-0.h5");
  ExpectOnly({"web/part-0.h5",
              "",
              std::nullopt,
              {"truncated", fmt::format("holds {} bytes", size), "superblock says"}});
}

TEST_F(VerifyTest, EmptyFile) {
  OnRankZero([&] {
    std::filesystem::create_directories(dir_ / "web");
    std::ofstream(dir_ / "web/part.h5").flush();
  });
  ExpectOnly({"web/part.h5", "", std::nullopt, {"not an HDF5 file", "empty"}});
}

TEST_F(VerifyTest, NotAnHdf5File) {
  OnRankZero([&] {
    std::filesystem::create_directories(dir_ / "web");
    std::ofstream(dir_ / "web/part.h5") << "this is text, not HDF5\n";
  });
  ExpectOnly({"web/part.h5", "", std::nullopt, {"not an HDF5 file"}});
}

TEST_F(VerifyTest, MissingTokens) {
  RawShard shard = ShardOfLengths({2, 3});
  shard.tokens.reset();
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/tokens", std::nullopt, {"missing"}});
}

TEST_F(VerifyTest, MissingDocOffsets) {
  RawShard shard = ShardOfLengths({2, 3});
  shard.doc_offsets.reset();
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/doc_offsets", std::nullopt, {"missing"}});
}

TEST_F(VerifyTest, FloatTokens) {
  Write("web/part.h5", ShardOfLengths({2, 3}, "float32"));
  ExpectOnly({"web/part.h5", "/tokens", std::nullopt, {"float32", "not integers"}});
}

TEST_F(VerifyTest, TwoDimensionalTokens) {
  RawShard shard = ShardOfLengths({2, 4});
  shard.tokens->dims = {2, 3};
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/tokens", std::nullopt, {"has 2 dimensions", "must be 1-D"}});
}

TEST_F(VerifyTest, NegativeTokenIds) {
  RawShard shard = ShardOfLengths({4, 4}, "int32");
  shard.tokens->values[3] = -5;
  shard.tokens->values[7] = -1;
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/tokens", 3, {"token id -5 is negative", "and 1 more"}});
}

TEST_F(VerifyTest, TokenIdAtVocabSize) {
  RawShard shard = ShardOfLengths({3, 3}, "uint16");
  shard.tokens->values = {0, 99, 5, 100, 1, 2};  // 99 is the largest id allowed
  shard.int_attributes["vocab_size"] = 100;
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/tokens", 3, {"token id 100", "at or above vocab_size 100"}});
}

// Readers widen ids to int64: without a vocab_size, a uint64 id must still be at most 2^63 - 1.
TEST_F(VerifyTest, Uint64IdsAbove2To63WithoutVocab) {
  RawShard shard = ShardOfLengths({3, 3}, "uint64");
  shard.tokens->unsigned_values = true;  // the values' bits: INT64_MIN is 2^63, -1 is 2^64 - 1
  shard.tokens->values = {
      0, std::numeric_limits<int64_t>::max(), 5, std::numeric_limits<int64_t>::min(), 2, -1};
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5",
              "/tokens",
              3,
              {"token id 9223372036854775808 is above 2^63 - 1", "and 1 more"}});
}

TEST_F(VerifyTest, OffsetsNotFromZero) {
  RawShard shard = ShardOfLengths({5, 5});
  shard.doc_offsets->values = {3, 5, 10};
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/doc_offsets", 0, {"starts at 3"}});
}

TEST_F(VerifyTest, OffsetsDecrease) {
  RawShard shard = ShardOfLengths({40, 10});
  shard.doc_offsets->values = {0, 40, 12, 50};
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/doc_offsets", 2, {"offset 12 is below the previous offset 40"}});
}

TEST_F(VerifyTest, OffsetsEndBeforeTokens) {
  RawShard shard = ShardOfLengths({5, 5});
  shard.doc_offsets->values = {0, 5, 8};
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/doc_offsets", 2, {"ends at 8", "10 tokens"}});
}

TEST_F(VerifyTest, OffsetsPastTheEndInTheMiddle) {
  RawShard shard = ShardOfLengths({5, 5});
  shard.doc_offsets->values = {0, 20, 10};
  Write("web/part.h5", shard);
  const VerifyReport report = Verify();
  ASSERT_EQ(report.problems.size(), 2u) << Describe(report);
  ExpectProblem(report.problems[0], {"web/part.h5", "/doc_offsets", 1, {"offset 20 is beyond"}});
  ExpectProblem(report.problems[1],
                {"web/part.h5", "/doc_offsets", 2, {"offset 10 is below the previous offset 20"}});
}

TEST_F(VerifyTest, NegativeSignedOffset) {
  RawShard shard = ShardOfLengths({5, 5, 5});
  shard.doc_offsets->type = "int64";
  shard.doc_offsets->values = {0, 5, -3, 15};
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/doc_offsets", 2, {"offset -3 is negative"}});
}

TEST_F(VerifyTest, MissingFormatVersion) {
  RawShard shard = ShardOfLengths({2});
  shard.int_attributes.clear();
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "stoker_format_version", std::nullopt, {"missing"}});
}

TEST_F(VerifyTest, UnsupportedFormatVersion) {
  RawShard shard = ShardOfLengths({2});
  shard.int_attributes["stoker_format_version"] = 2;
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "stoker_format_version", std::nullopt, {"unsupported", "2"}});
}

TEST_F(VerifyTest, DatasetFolderWithoutShards) {
  OnRankZero([&] {
    WriteTestShard(dir_ / "web/part.h5", {{1, 2}});
    std::filesystem::create_directories(dir_ / "empty/sub");
    std::ofstream(dir_ / "empty/readme.txt") << "no shards here\n";
  });
  ExpectOnly({"empty", "", std::nullopt, {"no shards"}});
}

TEST_F(VerifyTest, CorpusWithoutDatasets) {
  OnRankZero([&] { std::ofstream(dir_ / "stray.h5") << "a file in the root is no dataset\n"; });
  ExpectOnly({"", "", std::nullopt, {"no datasets"}});
}

TEST_F(VerifyTest, MissingCorpusIsCollectiveConfigError) {
  testing::ExpectCollectiveError<ConfigError>([&] { VerifyCorpus(comm_, dir_ / "does-not-exist"); },
                                              {"does-not-exist"});
}

TEST_F(VerifyTest, EosAndBosOutsideVocab) {
  OnRankZero([&] {
    WriteTestShard(dir_ / "web/a.h5", {{1, 2}}, TokenType::kUint16,
                   {.vocab_size = 100, .eos_id = 100, .bos_id = 99});
    WriteTestShard(dir_ / "web/b.h5", {{1, 2}}, TokenType::kUint16,
                   {.vocab_size = 100, .eos_id = 5, .bos_id = -1});
  });
  const VerifyReport report = Verify();
  ASSERT_EQ(report.problems.size(), 2u) << Describe(report);
  ExpectProblem(report.problems[0], {"web/a.h5", "eos_id", std::nullopt, {"100", "vocab_size"}});
  ExpectProblem(report.problems[1], {"web/b.h5", "bos_id", std::nullopt, {"-1", "negative"}});
}

TEST_F(VerifyTest, ManyFaultsOfOneKindGiveOneLine) {
  RawShard shard = ShardOfLengths({5000, 5000}, "uint32");
  shard.int_attributes["vocab_size"] = 10;  // every id from 10 up is too large: 9,991 of them
  Write("web/part.h5", shard);
  ExpectOnly({"web/part.h5", "/tokens", 9, {"token id 10 is at or above", "and 9,990 more"}});
}

TEST_F(VerifyTest, FaultsFoundAcrossBlockBoundaries) {
  RawShard shard = ShardOfLengths(std::vector<uint64_t>(20, 3), "int16");  // 21 offsets, 60 tokens
  shard.doc_offsets->values[7] = shard.doc_offsets->values[6] - 1;  // the first of block 2 of 7
  shard.tokens->values[14] = -2;                                    // the first of block 3
  shard.tokens->values[59] = -9;                                    // the last token
  Write("web/part.h5", shard);
  const VerifyReport report = Verify({.block_elements = 7});
  ASSERT_EQ(report.problems.size(), 2u) << Describe(report);
  ExpectProblem(report.problems[0],
                {"web/part.h5", "/doc_offsets", 7, {"offset 17 is below the previous offset 18"}});
  ExpectProblem(report.problems[1], {"web/part.h5", "/tokens", 14, {"-2", "and 1 more"}});
}

TEST_F(VerifyTest, ChunkedAndBigEndianFilesAreReadThroughHdf5) {
  RawShard chunked = ShardOfLengths({3, 3}, "uint32");
  chunked.tokens->chunked = true;
  chunked.doc_offsets->chunked = true;
  chunked.int_attributes["vocab_size"] = 6;
  RawShard big_endian = ShardOfLengths({3, 3}, "uint16be");
  big_endian.int_attributes["vocab_size"] = 7;
  Write("web/a.h5", chunked);
  Write("web/b.h5", big_endian);
  ExpectOnly({"web/a.h5", "/tokens", 5, {"token id 6 is at or above vocab_size 6"}});
}

TEST_F(VerifyTest, SeveralBadFilesAreReportedInCorpusOrder) {
  // "web" sorts before "web-a" as a dataset, although "web-a/..." < "web/..." as paths.
  RawShard decreasing = ShardOfLengths({4, 4});
  decreasing.doc_offsets->values = {0, 6, 4, 8};
  RawShard no_tokens = ShardOfLengths({1});
  no_tokens.tokens.reset();
  RawShard bad_ids = ShardOfLengths({2, 2}, "int8");
  bad_ids.tokens->values[1] = -4;
  OnRankZero([&] {
    WriteRawShard(dir_ / "web-a/part-0.h5", no_tokens);
    WriteTestShard(dir_ / "web-a/part-1.h5", {{1}});
    WriteRawShard(dir_ / "web/part-0.h5", decreasing);
    std::ofstream(dir_ / "web/part-1.h5") << "garbage";
    WriteTestShard(dir_ / "web/part-2.h5", {{1}});
    WriteRawShard(dir_ / "web/z/part-3.h5", bad_ids);
    WriteTestShard(dir_ / "zoo/part-0.h5", {{1}});
    WriteRawShard(dir_ / "zoo/part-1.h5", decreasing);
  });
  const VerifyReport report = Verify();
  ASSERT_EQ(report.problems.size(), 5u) << Describe(report);
  ExpectProblem(report.problems[0], {"web/part-0.h5", "/doc_offsets", 2, {"below"}});
  ExpectProblem(report.problems[1], {"web/part-1.h5", "", std::nullopt, {"not an HDF5"}});
  ExpectProblem(report.problems[2], {"web/z/part-3.h5", "/tokens", 1, {"-4"}});
  ExpectProblem(report.problems[3], {"web-a/part-0.h5", "/tokens", std::nullopt, {"missing"}});
  ExpectProblem(report.problems[4], {"zoo/part-1.h5", "/doc_offsets", 2, {"below"}});
  EXPECT_EQ(report.datasets, 3u);
  EXPECT_EQ(report.files, 8u);
  EXPECT_EQ(report.files_read, 6u);
  EXPECT_EQ(report.FilesWithProblems(), 5u);
  EXPECT_EQ(report.Summary(0.0).substr(0, 33), "FAILED: 5 problems in 5 of 8 file");
}

// 3M tokens in 1.5M documents of 2: both arrays span several default blocks of 2^20 elements.
constexpr uint64_t kBigDocs = 1'500'000;

TEST_F(VerifyTest, BigCleanFile) {
  OnRankZero([&] {
    std::vector<uint64_t> offsets(kBigDocs + 1), tokens(2 * kBigDocs);
    for (uint64_t i = 0; i <= kBigDocs; ++i) offsets[i] = 2 * i;
    for (uint64_t i = 0; i < tokens.size(); ++i) tokens[i] = i % 50'000;
    WriteShard(dir_ / "web/big.h5", TokenType::kUint16, offsets, tokens, {.vocab_size = 50'000});
  });
  const VerifyReport report = Verify();
  EXPECT_TRUE(report.ok()) << Describe(report);
  EXPECT_EQ(report.documents, kBigDocs);
  EXPECT_EQ(report.tokens, 2 * kBigDocs);
}

TEST_F(VerifyTest, BigFileDecreaseAfterTheFirstBlock) {
  RawShard shard;
  shard.doc_offsets = RawArray{.type = "uint64"};
  auto& offsets = shard.doc_offsets->values;
  offsets.resize(kBigDocs + 1);
  for (uint64_t i = 0; i <= kBigDocs; ++i) offsets[i] = static_cast<int64_t>(2 * i);
  offsets[1'200'000] = 2'399'990;  // below offsets[1'199'999] = 2'399'998
  shard.tokens = RawArray{.type = "uint32", .values = std::vector<int64_t>(2 * kBigDocs, 1)};
  Write("web/big.h5", shard);
  ExpectOnly({"web/big.h5",
              "/doc_offsets",
              1'200'000,
              {"offset 2399990 is below the previous offset 2399998"}});
}

// The checksum of ShardOfLengths(lengths) with its tokens in `type`, `changed` added to token 0.
std::string ChecksumOf(const std::vector<uint64_t>& lengths, TokenType type, int64_t changed = 0) {
  const RawShard shard = ShardOfLengths(lengths);
  std::vector<uint64_t> offsets(shard.doc_offsets->values.begin(), shard.doc_offsets->values.end());
  std::vector<int64_t> tokens = shard.tokens->values;
  tokens[0] += changed;
  ContentChecksum checksum;
  checksum.AddOffsets(offsets);
  checksum.AddTokens(tokens, type);
  return ChecksumText(checksum.Value());
}

TEST_F(VerifyTest, RecordedChecksumIsCheckedWhateverTheLayout) {
  RawShard same = ShardOfLengths({3, 3}, "uint16be");
  same.tokens->chunked = true;
  same.string_attributes["checksum"] = ChecksumOf({3, 3}, TokenType::kUint16);
  RawShard changed = ShardOfLengths({3, 3}, "uint16");
  changed.string_attributes["checksum"] = ChecksumOf({3, 3}, TokenType::kUint16, 1);
  Write("web/a.h5", same);
  Write("web/b.h5", changed);
  ExpectOnly({"web/b.h5",
              "checksum",
              std::nullopt,
              {"is " + ChecksumOf({3, 3}, TokenType::kUint16, 1),
               "hash to " + ChecksumOf({3, 3}, TokenType::kUint16), "the content changed"}});
}

TEST_F(VerifyTest, MalformedChecksumIsAProblem) {
  RawShard shard = ShardOfLengths({3, 3});
  shard.string_attributes["checksum"] = "md5:0123";
  Write("web/a.h5", shard);
  ExpectOnly({"web/a.h5", "checksum", std::nullopt, {"\"md5:0123\"", "not xxh3-64:"}});
}

TEST_F(VerifyTest, RecordWritesTheChecksumIntoCleanShardsWithoutOne) {
  RawShard bad = ShardOfLengths({3, 3});
  bad.int_attributes["vocab_size"] = 6;  // token 6 is at vocab_size
  Write("web/a.h5", ShardOfLengths({3, 3}));
  Write("web/b.h5", ShardOfLengths({2, 5}, "int32"));
  Write("web/c.h5", bad);
  VerifyReport report = Verify();
  EXPECT_EQ(report.files_unrecorded, 3u);
  EXPECT_EQ(report.checksums_recorded, 0u);
  EXPECT_NE(report.Summary(1).find("; 3 files carry no checksum"), std::string::npos)
      << report.Summary(1);
  report = Verify({.record = true});
  EXPECT_EQ(report.problems.size(), 1u) << Describe(report);  // c.h5's token at vocab_size
  EXPECT_EQ(report.checksums_recorded, 2u);
  EXPECT_NE(report.Summary(1).find("1 files carry no checksum"), std::string::npos)
      << report.Summary(1);
  report = Verify();
  EXPECT_EQ(report.files_unrecorded, 1u);
  const auto recorded = [&](const std::string& rel) {
    const auto info = DescribeShard(dir_.path(), rel, 0).info;
    return info && info->checksum ? ChecksumText(*info->checksum) : "none";
  };
  EXPECT_EQ(recorded("web/a.h5"), ChecksumOf({3, 3}, TokenType::kUint32));
  EXPECT_EQ(recorded("web/b.h5"), ChecksumOf({2, 5}, TokenType::kInt32));
  EXPECT_EQ(recorded("web/c.h5"), "none");
}

}  // namespace
}  // namespace stoker
