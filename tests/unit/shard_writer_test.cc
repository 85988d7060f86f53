// ShardWriter and WriteShard: appending in pieces writes the same bytes as writing at once, the
// same calls write byte-identical files, an id that does not fit the token type (or is above
// 2^63 - 1) is a DataError that leaves no file, and unfinished writers leave nothing behind.
// Each shard records its content checksum: XXH3-64 of the offsets as uint64 then the tokens in
// the shard's type, both little-endian, computed here with libxxhash alone; discovery reads it
// back; the token type is part of it; its text form parses back and nothing else does.
// Reading the files back is tested in shard_reader_test.cc.
#include "shard/shard_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "shard/shard_check.h"
#include "stoker/error.h"
#include "tokens/content_checksum.h"
#include "tokens/token_type.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::ExpectMentions;
using testing::MakeDocs;
using testing::MaxTokenId;
using testing::ReadFileBytes;
using testing::TempDir;
using testing::WriteTestShard;

class ShardWriterTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(ShardWriterTest, AppendInPiecesEqualsWriteShard) {
  const auto docs = MakeDocs(TokenType::kUint32, 3, 50);
  std::vector<uint64_t> offsets;
  const std::vector<uint64_t> tokens = testing::Flatten(docs, &offsets);
  const ShardAttributes attributes{.vocab_size = 1 << 20, .eos_id = 0, .tokenizer = "bytes"};
  WriteShard(dir_ / "whole.h5", TokenType::kUint32, offsets, tokens, attributes);
  ShardWriter writer(dir_ / "pieces.h5", TokenType::kUint32, offsets, attributes);
  EXPECT_EQ(writer.total(), tokens.size());
  for (size_t at = 0; at < tokens.size(); at += 77) {
    const size_t n = std::min<size_t>(77, tokens.size() - at);
    writer.Append(std::span(tokens).subspan(at, n));
    EXPECT_EQ(writer.written(), at + n);
  }
  EXPECT_FALSE(fs::exists(dir_ / "pieces.h5")) << "visible before Finish";
  EXPECT_TRUE(fs::exists(dir_ / "pieces.h5.tmp"));
  writer.Finish();
  EXPECT_FALSE(fs::exists(dir_ / "pieces.h5.tmp"));
  EXPECT_EQ(ReadFileBytes(dir_ / "pieces.h5"), ReadFileBytes(dir_ / "whole.h5"));
}

TEST_F(ShardWriterTest, SameCallsWriteByteIdenticalFiles) {
  const auto docs = MakeDocs(TokenType::kUint16, 9, 60);
  const ShardAttributes attributes{
      .vocab_size = 50257, .eos_id = 50256, .bos_id = 50255, .tokenizer = "gpt2"};
  WriteTestShard(dir_ / "a/x.h5", docs, TokenType::kUint16, attributes);
  sleep(1);  // a stored time stamp would now differ
  WriteTestShard(dir_ / "b/y.h5", docs, TokenType::kUint16, attributes);
  const std::string a = ReadFileBytes(dir_ / "a/x.h5");
  ASSERT_GT(a.size(), 0u);
  EXPECT_TRUE(a == ReadFileBytes(dir_ / "b/y.h5")) << "the two files differ";
  // And a different document changes the file.
  auto other = docs;
  other[1].push_back(5);
  WriteTestShard(dir_ / "c/z.h5", other, TokenType::kUint16, attributes);
  EXPECT_FALSE(a == ReadFileBytes(dir_ / "c/z.h5"));
}

// The checksum of `docs` as the format defines it, from the bytes themselves.
template <typename T>
uint64_t ExpectedChecksum(const testing::Docs& docs) {
  std::vector<uint64_t> offsets;
  const std::vector<uint64_t> tokens = testing::Flatten(docs, &offsets);
  std::string bytes(reinterpret_cast<const char*>(offsets.data()), offsets.size() * 8);
  for (const uint64_t t : tokens) {
    const T narrow = static_cast<T>(t);
    bytes.append(reinterpret_cast<const char*>(&narrow), sizeof(T));
  }
  return XXH3_64bits(bytes.data(), bytes.size());
}

TEST_F(ShardWriterTest, RecordsTheContentChecksum) {
  const auto docs = MakeDocs(TokenType::kUint16, 4, 40);
  WriteTestShard(dir_ / "web/a.h5", docs, TokenType::kUint16);
  WriteTestShard(dir_ / "web/b.h5", docs, TokenType::kUint32);
  const ShardCheck a = DescribeShard(dir_.path(), "web/a.h5", 0);
  const ShardCheck b = DescribeShard(dir_.path(), "web/b.h5", 0);
  ASSERT_TRUE(a.info && b.info);
  EXPECT_EQ(a.info->checksum, ExpectedChecksum<uint16_t>(docs));
  EXPECT_EQ(b.info->checksum, ExpectedChecksum<uint32_t>(docs));
  EXPECT_NE(a.info->checksum, b.info->checksum) << "the token type is part of the content";
  // Appending raw bytes (as an import does) records the same.
  std::vector<uint64_t> offsets;
  const std::vector<uint64_t> tokens = testing::Flatten(docs, &offsets);
  std::vector<uint16_t> raw(tokens.begin(), tokens.end());
  ShardWriter writer(dir_ / "web/c.h5", TokenType::kUint16, offsets, {});
  writer.AppendRaw(std::as_bytes(std::span(raw)));
  writer.Finish();
  EXPECT_EQ(DescribeShard(dir_.path(), "web/c.h5", 0).info->checksum, a.info->checksum);
}

TEST(ContentChecksumText, ParsesItsOwnFormAndNothingElse) {
  EXPECT_EQ(ChecksumText(0xc0ffee), "xxh3-64:0000000000c0ffee");
  EXPECT_EQ(ParseChecksum("xxh3-64:0000000000c0ffee"), 0xc0ffeeu);
  EXPECT_EQ(ParseChecksum(ChecksumText(~uint64_t{0})), ~uint64_t{0});
  for (const char* bad :
       {"", "xxh3-64:", "xxh3-64:0000000000C0FFEE", "xxh3-64:c0ffee", "xxh3-64:0000000000c0ffee0",
        "xxh64:0000000000c0ffee", "xxh3-64:000000000-c0ffee", "xxh3-64:0000000000c0ffeg"}) {
    EXPECT_EQ(ParseChecksum(bad), std::nullopt) << bad;
  }
}

TEST_F(ShardWriterTest, IdThatDoesNotFitIsDataErrorAndLeavesNoFile) {
  struct Case {
    TokenType type;
    uint64_t bad;
  };
  constexpr uint64_t kAboveInt64 = uint64_t{1} << 63;  // readers widen to int64: never an id
  for (const Case& c :
       {Case{TokenType::kUint8, 256}, Case{TokenType::kInt8, 128}, Case{TokenType::kUint16, 65536},
        Case{TokenType::kInt16, 32768}, Case{TokenType::kUint32, uint64_t{1} << 32},
        Case{TokenType::kInt32, uint64_t{1} << 31}, Case{TokenType::kInt64, kAboveInt64},
        Case{TokenType::kUint64, kAboveInt64},
        Case{TokenType::kUint64, std::numeric_limits<uint64_t>::max()}}) {
    SCOPED_TRACE(TokenTypeName(c.type));
    const std::string path = dir_ / (std::string("bad/") + TokenTypeName(c.type) + ".h5");
    const std::vector<uint64_t> tokens = {1, MaxTokenId(c.type), 3, c.bad, 5};
    const std::vector<uint64_t> offsets = {0, 2, 5};
    try {
      WriteShard(path, c.type, offsets, tokens, {});
      ADD_FAILURE() << "no error for id " << c.bad;
    } catch (const DataError& e) {
      ExpectMentions(e.what(), path);
      ExpectMentions(e.what(), "/tokens[3]");
      ExpectMentions(e.what(), std::to_string(c.bad));
      ExpectMentions(e.what(), "largest id " + std::to_string(MaxTokenId(c.type)));
    }
    EXPECT_FALSE(fs::exists(path));
    EXPECT_FALSE(fs::exists(path + ".tmp"));
  }
  // With pieces, the index is the token's place in the shard, not in the piece.
  const std::string path = dir_ / "bad/pieces.h5";
  const std::vector<uint64_t> offsets = {0, 4};
  {
    ShardWriter writer(path, TokenType::kUint16, offsets, {});
    writer.Append(std::vector<uint64_t>{1, 2});
    EXPECT_THROW(
        {
          try {
            writer.Append(std::vector<uint64_t>{3, 70000});
          } catch (const DataError& e) {
            ExpectMentions(e.what(), "/tokens[3]");
            throw;
          }
        },
        DataError);
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(ShardWriterTest, UnfinishedWriterLeavesNoFile) {
  const std::string path = dir_ / "unfinished/x.h5";
  const std::vector<uint64_t> offsets = {0, 3};
  {
    ShardWriter writer(path, TokenType::kUint32, offsets, {});
    writer.Append(std::vector<uint64_t>{1});
    EXPECT_THROW(writer.Finish(), InternalError);  // 1 of 3 tokens
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(ShardWriterTest, FolderThatCannotBeMadeIsIoError) {
  std::ofstream(dir_ / "plain-file") << "x";
  const std::vector<uint64_t> offsets = {0};
  EXPECT_THROW(WriteShard(dir_ / "plain-file/x.h5", TokenType::kUint32, offsets, {}, {}), IoError);
}

TEST_F(ShardWriterTest, BareFileNameIsWrittenInTheCurrentFolder) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_.path());
  const std::vector<uint64_t> offsets = {0, 2}, tokens = {7, 8};
  EXPECT_NO_THROW(WriteShard("bare.h5", TokenType::kUint16, offsets, tokens, {}));
  fs::current_path(before);
  EXPECT_TRUE(fs::exists(dir_ / "bare.h5"));
  EXPECT_FALSE(fs::exists(dir_ / "bare.h5.tmp"));
}

}  // namespace
}  // namespace stoker
