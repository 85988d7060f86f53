// ShardReader: shards round-trip every token type, through pread (contiguous files stoker writes)
// and through HDF5 (chunked or big-endian files made with WriteRawShard); reads out of range and
// truncated or removed files fail with errors naming the file; ForEachOffset streams every entry
// in blocks of any size.
#include "shard/shard_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/check.h"
#include "common/test_support.h"
#include "order/random.h"
#include "shard/discovery.h"
#include "shard/shard_writer.h"
#include "stoker/error.h"
#include "tokens/token_type.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::ExpectMentions;
using testing::MakeDocs;
using testing::RawArray;
using testing::RawShard;
using testing::TempDir;
using testing::WriteRawShard;
using testing::WriteTestShard;

// A described shard: the table row DescribeShard gives, which must exist.
ShardInfo Describe(const TempDir& dir, const std::string& rel) {
  const ShardCheck check = DescribeShard(dir.path(), rel, 0);
  std::string problems;
  for (const auto& p : check.problems) problems += p.ToString() + "\n";
  EXPECT_TRUE(check.info.has_value()) << rel << " was not accepted:\n" << problems;
  EXPECT_TRUE(check.problems.empty()) << problems;
  return check.info.value_or(ShardInfo{});
}

// Where DescribeShard found the arrays of a shard.
ArrayLocations Locate(const TempDir& dir, const std::string& rel) {
  return DescribeShard(dir.path(), rel, 0).arrays;
}

// What a reader must give for tokens [start, start + count): the ids as int64.
std::vector<int64_t> Expected(const std::vector<uint64_t>& tokens, uint64_t start, uint64_t count) {
  std::vector<int64_t> out;
  for (uint64_t i = start; i < start + count; ++i) out.push_back(static_cast<int64_t>(tokens[i]));
  return out;
}

// Reads the whole shard and many ranges of it, checking them against what was written.
void ExpectReadsBack(const TempDir& dir, const ShardInfo& info, const std::vector<uint64_t>& tokens,
                     const std::vector<uint64_t>& offsets) {
  ShardReader reader(dir.path(), info);
  EXPECT_EQ(reader.path(), dir / info.path);
  std::vector<char> scratch;
  std::vector<int64_t> all(tokens.size());
  reader.ReadTokens(0, tokens.size(), all.data(), &scratch);
  ASSERT_EQ(all, Expected(tokens, 0, tokens.size()));
  std::vector<uint64_t> all_offsets(offsets.size());
  reader.ReadOffsets(0, offsets.size(), all_offsets.data());
  ASSERT_EQ(all_offsets, offsets);

  CounterRng rng(static_cast<uint64_t>(info.token_type));
  for (int i = 0; i < 200; ++i) {
    const uint64_t start = rng.NextBelow(tokens.size() + 1);
    const uint64_t count = rng.NextBelow(tokens.size() - start + 1);
    std::vector<int64_t> some(count + 1, -7);  // one guard element
    reader.ReadTokens(start, count, some.data(), &scratch);
    ASSERT_EQ(some.back(), -7) << "wrote past the range";
    some.pop_back();
    ASSERT_EQ(some, Expected(tokens, start, count)) << start << "+" << count;
    const uint64_t first = rng.NextBelow(offsets.size() + 1);
    const uint64_t n = rng.NextBelow(offsets.size() - first + 1);
    std::vector<uint64_t> entries(n);
    reader.ReadOffsets(first, n, entries.data());
    ASSERT_TRUE(std::equal(entries.begin(), entries.end(), offsets.begin() + first));
  }
  // The raw read gives the file's own width.
  const int width = TokenTypeSize(info.token_type);
  std::vector<char> raw(width * 3);
  const uint64_t at = tokens.size() - 3;
  reader.ReadTokensRaw(at, 3, raw.data());
  std::vector<int64_t> widened(3);
  WidenTokens(info.token_type, raw.data(), 3, widened.data());
  EXPECT_EQ(widened, Expected(tokens, at, 3));
}

class ShardReaderTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(ShardReaderTest, WriteShardRoundTripsEveryTypeThroughPread) {
  for (TokenType type : kAllTokenTypes) {
    SCOPED_TRACE(TokenTypeName(type));
    const std::string rel = std::string("web/") + TokenTypeName(type) + ".h5";
    const auto docs = MakeDocs(type, 100 + static_cast<uint64_t>(type), 40);
    std::vector<uint64_t> offsets;
    const std::vector<uint64_t> tokens = testing::Flatten(docs, &offsets);
    WriteShard(dir_ / rel, type, offsets, tokens, {});
    const ShardInfo info = Describe(dir_, rel);
    EXPECT_EQ(info.token_type, type);
    EXPECT_EQ(info.tokens, tokens.size());
    EXPECT_EQ(info.docs, docs.size());
    EXPECT_TRUE(Locate(dir_, rel).tokens.direct);
    EXPECT_TRUE(Locate(dir_, rel).offsets.direct);
    ExpectReadsBack(dir_, info, tokens, offsets);
    EXPECT_EQ(testing::ReadShardDocs(dir_.path(), info), docs);
  }
}

TEST_F(ShardReaderTest, ChunkedAndBigEndianFilesAreReadThroughHdf5) {
  for (TokenType type : kAllTokenTypes) {
    SCOPED_TRACE(TokenTypeName(type));
    const std::string rel = std::string("chunked/") + TokenTypeName(type) + ".h5";
    const auto docs = MakeDocs(type, 7, 30);  // ids up to 2^63 - 1: HDF5 converts from int64
    std::vector<uint64_t> offsets;
    const std::vector<uint64_t> tokens = testing::Flatten(docs, &offsets);
    RawShard raw;
    raw.tokens = RawArray{.type = TokenTypeName(type),
                          .values = std::vector<int64_t>(tokens.begin(), tokens.end()),
                          .chunked = true};
    raw.doc_offsets = RawArray{.type = "int64",
                               .values = std::vector<int64_t>(offsets.begin(), offsets.end()),
                               .chunked = true};
    WriteRawShard(dir_ / rel, raw);
    const ShardInfo info = Describe(dir_, rel);
    EXPECT_EQ(info.token_type, type);
    EXPECT_FALSE(Locate(dir_, rel).tokens.direct);
    EXPECT_FALSE(Locate(dir_, rel).offsets.direct);
    EXPECT_TRUE(info.offsets_signed);
    ExpectReadsBack(dir_, info, tokens, offsets);
  }
  // Contiguous but big-endian tokens: not direct, converted by HDF5 to native order.
  const std::vector<uint64_t> tokens = {1, 2, 258, 65535, 0, 4096};
  const std::vector<uint64_t> offsets = {0, 2, 6};
  RawShard raw;
  raw.tokens = RawArray{.type = "uint16be", .values = {1, 2, 258, 65535, 0, 4096}};
  raw.doc_offsets = RawArray{.type = "uint64", .values = {0, 2, 6}};
  WriteRawShard(dir_ / "be/tokens.h5", raw);
  const ShardInfo info = Describe(dir_, "be/tokens.h5");
  EXPECT_EQ(info.token_type, TokenType::kUint16);
  EXPECT_FALSE(Locate(dir_, "be/tokens.h5").tokens.direct);
  EXPECT_TRUE(Locate(dir_, "be/tokens.h5").offsets.direct);
  ExpectReadsBack(dir_, info, tokens, offsets);
}

TEST_F(ShardReaderTest, ReadingBeyondTheEndIsDataError) {
  WriteTestShard(dir_ / "d/x.h5", {{1, 2, 3}, {4, 5}});
  const ShardInfo info = Describe(dir_, "d/x.h5");
  ShardReader reader(dir_.path(), info);
  std::vector<int64_t> out(10);
  std::vector<uint64_t> entries(10);
  std::vector<char> scratch;
  reader.ReadTokens(5, 0, out.data(), &scratch);  // empty range at the end: fine
  reader.ReadOffsets(3, 0, entries.data());
  try {
    reader.ReadTokens(3, 3, out.data(), &scratch);
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    ExpectMentions(e.what(), dir_ / "d/x.h5");
    ExpectMentions(e.what(), "/tokens");
  }
  EXPECT_THROW(reader.ReadTokens(6, 1, out.data(), &scratch), DataError);
  EXPECT_THROW(reader.ReadTokens(UINT64_MAX, 2, out.data(), &scratch), DataError);  // wraps
  EXPECT_THROW(reader.ReadTokens(1, UINT64_MAX, out.data(), &scratch), DataError);
  EXPECT_THROW(reader.ReadOffsets(0, 4, entries.data()), DataError);
  EXPECT_THROW(reader.ReadOffsets(UINT64_MAX, 2, entries.data()), DataError);
  // The same through HDF5.
  RawShard raw;
  raw.tokens = RawArray{.type = "uint32", .values = {1, 2, 3}, .chunked = true};
  raw.doc_offsets = RawArray{.type = "uint64", .values = {0, 3}, .chunked = true};
  WriteRawShard(dir_ / "d/chunked.h5", raw);
  ShardReader chunked(dir_.path(), Describe(dir_, "d/chunked.h5"));
  EXPECT_THROW(chunked.ReadTokens(2, 2, out.data(), &scratch), DataError);
  EXPECT_THROW(chunked.ReadOffsets(1, 2, entries.data()), DataError);
}

TEST_F(ShardReaderTest, TruncatedAfterDescriptionIsIoErrorNamingTheFile) {
  std::vector<std::vector<uint64_t>> docs(10, std::vector<uint64_t>(100, 42));
  WriteTestShard(dir_ / "t/x.h5", docs, TokenType::kUint32);
  const ShardInfo info = Describe(dir_, "t/x.h5");
  const ArrayLocations arrays = Locate(dir_, "t/x.h5");
  ASSERT_TRUE(arrays.tokens.direct);
  const std::string path = dir_ / "t/x.h5";
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(arrays.tokens.byte_offset + 4 * 500)), 0);
  ShardReader reader(dir_.path(), info, arrays);
  std::vector<int64_t> out(1000);
  std::vector<char> scratch;
  reader.ReadTokens(0, 500, out.data(), &scratch);  // before the cut: still there
  EXPECT_EQ(out[499], 42);
  try {
    reader.ReadTokens(400, 200, out.data(), &scratch);
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    ExpectMentions(e.what(), path);
    ExpectMentions(e.what(), "/tokens[400]");
    ExpectMentions(e.what(), "truncated");
  }
  // A shard removed after discovery cannot be opened.
  fs::remove(path);
  try {
    ShardReader gone(dir_.path(), info, arrays);
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    ExpectMentions(e.what(), path);
  }
}

TEST_F(ShardReaderTest, ShardWithoutTokens) {
  // Only empty documents, and a shard with no documents at all: both are valid.
  WriteTestShard(dir_ / "e/empty-docs.h5", {{}, {}, {}});
  WriteTestShard(dir_ / "e/no-docs.h5", {});
  for (const char* rel : {"e/empty-docs.h5", "e/no-docs.h5"}) {
    SCOPED_TRACE(rel);
    const ShardInfo info = Describe(dir_, rel);
    EXPECT_EQ(info.tokens, 0u);
    ShardReader reader(dir_.path(), info);
    std::vector<uint64_t> offsets(info.docs + 1, 99);
    reader.ReadOffsets(0, info.docs + 1, offsets.data());
    EXPECT_EQ(offsets, std::vector<uint64_t>(info.docs + 1, 0));
    std::vector<char> scratch;
    int64_t out = 5;
    reader.ReadTokens(0, 0, &out, &scratch);
    EXPECT_THROW(reader.ReadTokens(0, 1, &out, &scratch), DataError);
  }
  EXPECT_EQ(Describe(dir_, "e/empty-docs.h5").docs, 3u);
  EXPECT_EQ(Describe(dir_, "e/no-docs.h5").docs, 0u);
}

TEST_F(ShardReaderTest, ForEachOffsetVisitsEveryEntryInOrderAtAnyBlockSize) {
  const auto docs = MakeDocs(TokenType::kUint16, 5, 23);  // 24 offsets
  WriteTestShard(dir_ / "f/direct.h5", docs, TokenType::kUint16);
  std::vector<uint64_t> offsets;
  testing::Flatten(docs, &offsets);
  RawShard raw;
  raw.doc_offsets = RawArray{.type = "int64",
                             .values = std::vector<int64_t>(offsets.begin(), offsets.end()),
                             .chunked = true};
  raw.tokens = RawArray{.type = "uint16", .values = std::vector<int64_t>(offsets.back(), 1)};
  WriteRawShard(dir_ / "f/chunked.h5", raw);
  for (const char* rel : {"f/direct.h5", "f/chunked.h5"}) {
    ShardReader reader(dir_.path(), Describe(dir_, rel));
    for (const uint64_t block : {0, 1, 5, 23, 24, 25, 1 << 20}) {
      std::vector<uint64_t> seen;
      ForEachOffset(reader, block, [&](uint64_t index, uint64_t offset) {
        EXPECT_EQ(index, seen.size()) << rel << " block " << block;
        seen.push_back(offset);
      });
      EXPECT_EQ(seen, offsets) << rel << " block " << block;
    }
  }
  // An exception of the callback stops the walk and reaches the caller.
  ShardReader reader(dir_.path(), Describe(dir_, "f/direct.h5"));
  uint64_t calls = 0;
  EXPECT_THROW(ForEachOffset(reader, 4,
                             [&](uint64_t index, uint64_t) {
                               ++calls;
                               STOKER_CHECK(index < 6, DataError, "stop at {}", index);
                             }),
               DataError);
  EXPECT_EQ(calls, 7u);
}

}  // namespace
}  // namespace stoker
