// DescribeShard, the metadata checks discovery runs on every file: a good shard gives the
// expected table row with the byte locations of its arrays; each fault of the metadata gives
// exactly one problem naming the object (attributes of the wrong type, a vocab_size that is not
// positive or above 2^63 - 1, a tokenizer that is not a string, /doc_offsets of the wrong width or
// empty). Also the helpers every corpus check shares: the Problem encoding between ranks and the
// stripping of a file's path from messages.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "shard/discovery.h"
#include "stoker/error.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::ExpectMentions;
using testing::OffsetsFor;
using testing::RawArray;
using testing::RawShard;
using testing::TempDir;
using testing::WriteRawShard;
using testing::WriteTestShard;

// The bytes of `count` little-endian integers of `width` bytes at `offset` in `path`.
std::vector<uint64_t> PreadLittleEndian(const std::string& path, uint64_t offset, int width,
                                        uint64_t count) {
  std::vector<unsigned char> bytes(count * width);
  const int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  std::vector<uint64_t> values(count);
  for (uint64_t i = 0; i < count; ++i) {
    for (int b = width - 1; b >= 0; --b) values[i] = values[i] << 8 | bytes[i * width + b];
  }
  return values;
}

// A good raw shard: two documents, uint32 tokens, uint64 offsets, format version 1.
RawShard GoodRawShard() {
  RawShard shard;
  shard.doc_offsets = RawArray{.type = "uint64", .values = OffsetsFor({2, 3})};
  shard.tokens = RawArray{.type = "uint32", .values = {1, 2, 3, 4, 5}};
  return shard;
}

class DescribeShardTest : public ::testing::Test {
 protected:
  // Writes `shard` as web/bad.h5, describes it, and expects exactly one problem, on `object`,
  // whose message holds every one of `words`, and no table row.
  void ExpectOneProblem(const RawShard& shard, const std::string& object,
                        const std::vector<std::string>& words) {
    WriteRawShard(dir_ / "web/bad.h5", shard);
    const ShardCheck check = DescribeShard(dir_.path(), "web/bad.h5", 0);
    EXPECT_FALSE(check.info.has_value()) << "a bad shard got a table row";
    std::string all;
    for (const auto& p : check.problems) all += "\n  " + p.ToString();
    ASSERT_EQ(check.problems.size(), 1u) << all;
    const Problem& p = check.problems[0];
    EXPECT_EQ(p.file, "web/bad.h5");
    EXPECT_EQ(p.object, object) << p.ToString();
    EXPECT_EQ(p.index, std::nullopt) << p.ToString();
    for (const auto& word : words) ExpectMentions(p.message, word);
    EXPECT_EQ(p.message.find(dir_.path()), std::string::npos)
        << "the message repeats the file's path: " << p.message;
  }

  TempDir dir_;
};

TEST_F(DescribeShardTest, GoodShardGivesItsTableRow) {
  const std::vector<std::vector<uint64_t>> docs = {{5, 6, 7}, {}, {65535, 0}, {9}};
  const ShardAttributes attributes{
      .vocab_size = 65536, .eos_id = 0, .bos_id = 1, .tokenizer = "my tokenizer v2"};
  WriteTestShard(dir_ / "books/2024/part-1.h5", docs, TokenType::kUint16, attributes);
  const ShardCheck check = DescribeShard(dir_.path(), "books/2024/part-1.h5", 3);
  ASSERT_TRUE(check.problems.empty()) << check.problems.front().ToString();
  ASSERT_TRUE(check.info.has_value());
  const ShardInfo& got = *check.info;
  const std::string path = dir_ / "books/2024/part-1.h5";

  // The locations are where the bytes are.
  ASSERT_TRUE(check.arrays.tokens.direct);
  ASSERT_TRUE(check.arrays.offsets.direct);
  EXPECT_EQ(PreadLittleEndian(path, check.arrays.tokens.byte_offset, 2, 6),
            (std::vector<uint64_t>{5, 6, 7, 65535, 0, 9}));
  EXPECT_EQ(PreadLittleEndian(path, check.arrays.offsets.byte_offset, 8, 5),
            (std::vector<uint64_t>{0, 3, 3, 5, 6}));

  ShardInfo expected;
  expected.path = "books/2024/part-1.h5";
  expected.dataset = 3;
  expected.file_bytes = fs::file_size(path);
  expected.docs = 4;
  expected.tokens = 6;
  expected.token_type = TokenType::kUint16;
  expected.offsets_signed = false;
  expected.vocabulary = std::make_shared<const ShardVocabulary>(ShardVocabulary{
      .vocab_size = 65536, .eos_id = 0, .bos_id = 1, .tokenizer = "my tokenizer v2"});
  expected.checksum = testing::ChecksumOf(docs, TokenType::kUint16);
  EXPECT_EQ(got, expected);

  // No optional attributes: none in the row.
  WriteTestShard(dir_ / "plain/p.h5", docs, TokenType::kUint32);
  const ShardCheck plain = DescribeShard(dir_.path(), "plain/p.h5", 0);
  ASSERT_TRUE(plain.info.has_value());
  EXPECT_EQ(*plain.info->vocabulary, ShardVocabulary{});
  EXPECT_EQ(plain.info->token_type, TokenType::kUint32);
  EXPECT_EQ(plain.info->docs, 4u);
}

TEST_F(DescribeShardTest, RawShardOfTheTestsIsGood) {
  // The shard the tests below break, unbroken: no problem. (Otherwise they prove nothing.)
  WriteRawShard(dir_ / "web/good.h5", GoodRawShard());
  const ShardCheck check = DescribeShard(dir_.path(), "web/good.h5", 0);
  EXPECT_TRUE(check.problems.empty()) << check.problems.front().ToString();
  ASSERT_TRUE(check.info.has_value());
  EXPECT_EQ(check.info->docs, 2u);
  EXPECT_EQ(check.info->tokens, 5u);
}

TEST_F(DescribeShardTest, IntegerAttributeOfAnotherType) {
  RawShard shard = GoodRawShard();
  shard.float_attributes["vocab_size"] = 50000.0;
  ExpectOneProblem(shard, "vocab_size", {"float64", "not an integer"});
}

TEST_F(DescribeShardTest, FormatVersionOfAnotherType) {
  RawShard shard = GoodRawShard();
  shard.int_attributes.clear();
  shard.string_attributes["stoker_format_version"] = "1";
  ExpectOneProblem(shard, "stoker_format_version", {"string", "not an integer"});
}

TEST_F(DescribeShardTest, VocabSizeNotPositive) {
  for (const int64_t vocab : {0, -5}) {
    RawShard shard = GoodRawShard();
    shard.int_attributes["vocab_size"] = vocab;
    ExpectOneProblem(shard, "vocab_size", {std::to_string(vocab), "must be positive"});
  }
}

TEST_F(DescribeShardTest, VocabSizeAboveTheLargestId) {
  RawShard shard = GoodRawShard();
  shard.uint64_attributes["vocab_size"] = uint64_t{1} << 63;
  ExpectOneProblem(shard, "vocab_size", {"9223372036854775808", "above 2^63 - 1"});
  // 2^63 - 1 itself is a vocabulary size stoker reads.
  shard.uint64_attributes["vocab_size"] = (uint64_t{1} << 63) - 1;
  WriteRawShard(dir_ / "web/ok.h5", shard);
  const ShardCheck check = DescribeShard(dir_.path(), "web/ok.h5", 0);
  EXPECT_TRUE(check.problems.empty()) << check.problems.front().ToString();
  ASSERT_TRUE(check.info.has_value());
  EXPECT_EQ(check.info->vocabulary->vocab_size, INT64_MAX);
}

TEST_F(DescribeShardTest, TokenizerNotAString) {
  RawShard shard = GoodRawShard();
  shard.int_attributes["tokenizer"] = 7;
  ExpectOneProblem(shard, "tokenizer", {"not a string"});
}

TEST_F(DescribeShardTest, DocOffsetsNotEightBytesWide) {
  RawShard shard = GoodRawShard();
  shard.doc_offsets->type = "int32";
  ExpectOneProblem(shard, "/doc_offsets", {"int32", "must be uint64 or int64"});
}

TEST_F(DescribeShardTest, DocOffsetsEmpty) {
  RawShard shard = GoodRawShard();
  shard.doc_offsets->values.clear();
  shard.tokens->values.clear();
  ExpectOneProblem(shard, "/doc_offsets", {"is empty", "one entry more than there are documents"});
}

TEST(ProblemCodecTest, RoundTripsEveryField) {
  const std::vector<Problem> problems = {
      {"web/a.h5", "/tokens", 17, "token id 9 is negative"},
      {"web/b.h5", "", std::nullopt, "not an HDF5 file"},
      {"", "", std::nullopt, "the corpus has no datasets"},
      {"x", "y", UINT64_MAX, std::string("bytes \0 and \xFF", 13)},
      {"d/e.h5", "/doc_offsets", 0, ""}};
  ByteWriter out;
  for (const auto& p : problems) EncodeProblem(p, &out);
  ByteReader in(out.bytes());
  for (const auto& p : problems) EXPECT_EQ(DecodeProblem(&in), p);
  EXPECT_TRUE(in.done());
}

TEST(WithoutPathPrefixTest, RemovesOnlyALeadingPathAndColon) {
  EXPECT_EQ(WithoutPathPrefix("/c/web/a.h5: cannot open", "/c/web/a.h5"), "cannot open");
  EXPECT_EQ(WithoutPathPrefix("/c/web/a.h5 is gone", "/c/web/a.h5"), "/c/web/a.h5 is gone");
  EXPECT_EQ(WithoutPathPrefix("/c/web/a.h5x: other file", "/c/web/a.h5"),
            "/c/web/a.h5x: other file");
  EXPECT_EQ(WithoutPathPrefix("read failed: /c/web/a.h5: x", "/c/web/a.h5"),
            "read failed: /c/web/a.h5: x");
  EXPECT_EQ(WithoutPathPrefix("/c/web/a.h5", "/c/web/a.h5"), "/c/web/a.h5");
  EXPECT_EQ(WithoutPathPrefix("", "/c/web/a.h5"), "");
}

}  // namespace
}  // namespace stoker
