// Shard writing and reading: WriteShard / ShardWriter and ShardReader round-trip every token type,
// through pread (contiguous files stoker writes) and through HDF5 (chunked or big-endian files
// made with WriteRawShard); bad ids and unfinished writers leave no file behind; files are
// byte-identical for the same calls; reads out of range and truncated files fail with errors
// naming the file. DescribeShard on a good shard gives the expected table row.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "core/random.h"
#include "core/token_type.h"
#include "io/discovery.h"
#include "io/shard_writer.h"
#include "io/token_reader.h"
#include "stoker/error.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using stoker::testing::OffsetsFor;
using stoker::testing::RawArray;
using stoker::testing::RawShard;
using stoker::testing::TempDir;
using stoker::testing::WriteRawShard;
using stoker::testing::WriteTestShard;

constexpr TokenType kAllTypes[] = {TokenType::kUint8,  TokenType::kInt8,   TokenType::kUint16,
                                   TokenType::kInt16,  TokenType::kUint32, TokenType::kInt32,
                                   TokenType::kUint64, TokenType::kInt64};

void ExpectMentions(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' is not in: " << message;
}

// The largest id a type stores (ids are never negative).
uint64_t MaxId(TokenType type) {
  const int bits = 8 * TokenTypeSize(type) - (TokenTypeSigned(type) ? 1 : 0);
  return bits == 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
}

// Documents of varied lengths (including empty ones) whose ids reach the type's maximum.
std::vector<std::vector<uint64_t>> MakeDocs(TokenType type, uint64_t key, int n_docs) {
  CounterRng rng(key);
  const uint64_t max_id = MaxId(type);
  std::vector<std::vector<uint64_t>> docs(n_docs);
  for (int d = 0; d < n_docs; ++d) {
    const uint64_t length = d % 5 == 3 ? 0 : rng.NextBelow(300);
    for (uint64_t i = 0; i < length; ++i) {
      docs[d].push_back(i % 7 == 0 ? max_id - i % 3 : rng.NextBelow(max_id));
    }
  }
  docs[0] = {0, max_id, 1};
  return docs;
}

std::vector<uint64_t> Flatten(const std::vector<std::vector<uint64_t>>& docs,
                              std::vector<uint64_t>* offsets) {
  std::vector<uint64_t> tokens;
  offsets->assign(1, 0);
  for (const auto& doc : docs) {
    tokens.insert(tokens.end(), doc.begin(), doc.end());
    offsets->push_back(tokens.size());
  }
  return tokens;
}

// A described shard: the table row DescribeShard gives, which must exist.
ShardInfo Describe(const TempDir& dir, const std::string& rel, uint32_t dataset = 0) {
  const ShardCheck check = DescribeShard(dir.path(), rel, dataset);
  std::string problems;
  for (const auto& p : check.problems) problems += p.ToString() + "\n";
  EXPECT_TRUE(check.info.has_value()) << rel << " was not accepted:\n" << problems;
  EXPECT_TRUE(check.problems.empty()) << problems;
  return check.info.value_or(ShardInfo{});
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What a reader must give for tokens [start, start + count): the ids as int64 (uint64 ids above
// 2^63 keep their bits).
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

class ShardIoTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(ShardIoTest, WriteShardRoundTripsEveryTypeThroughPread) {
  for (TokenType type : kAllTypes) {
    SCOPED_TRACE(TokenTypeName(type));
    const std::string rel = std::string("web/") + TokenTypeName(type) + ".h5";
    const auto docs = MakeDocs(type, 100 + static_cast<uint64_t>(type), 40);
    std::vector<uint64_t> offsets;
    const std::vector<uint64_t> tokens = Flatten(docs, &offsets);
    WriteShard(dir_ / rel, type, offsets, tokens, {});
    const ShardInfo info = Describe(dir_, rel);
    EXPECT_EQ(info.token_type, type);
    EXPECT_EQ(info.tokens, tokens.size());
    EXPECT_EQ(info.docs, docs.size());
    EXPECT_TRUE(info.tokens_at.direct);
    EXPECT_TRUE(info.offsets_at.direct);
    ExpectReadsBack(dir_, info, tokens, offsets);
  }
}

TEST_F(ShardIoTest, ChunkedAndBigEndianFilesAreReadThroughHdf5) {
  for (TokenType type : kAllTypes) {
    SCOPED_TRACE(TokenTypeName(type));
    const std::string rel = std::string("chunked/") + TokenTypeName(type) + ".h5";
    // HDF5 converts the test's int64 values: keep ids at or below INT64_MAX.
    auto docs = MakeDocs(type == TokenType::kUint64 ? TokenType::kInt64 : type, 7, 30);
    std::vector<uint64_t> offsets;
    const std::vector<uint64_t> tokens = Flatten(docs, &offsets);
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
    EXPECT_FALSE(info.tokens_at.direct);
    EXPECT_FALSE(info.offsets_at.direct);
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
  EXPECT_FALSE(info.tokens_at.direct);
  EXPECT_TRUE(info.offsets_at.direct);
  ExpectReadsBack(dir_, info, tokens, offsets);
}

TEST_F(ShardIoTest, AppendInPiecesEqualsWriteShard) {
  const auto docs = MakeDocs(TokenType::kUint32, 3, 50);
  std::vector<uint64_t> offsets;
  const std::vector<uint64_t> tokens = Flatten(docs, &offsets);
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

TEST_F(ShardIoTest, SameCallsWriteByteIdenticalFiles) {
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

TEST_F(ShardIoTest, IdThatDoesNotFitIsDataErrorAndLeavesNoFile) {
  struct Case {
    TokenType type;
    uint64_t bad;
  };
  for (const Case& c :
       {Case{TokenType::kUint8, 256}, Case{TokenType::kInt8, 128}, Case{TokenType::kUint16, 65536},
        Case{TokenType::kInt16, 32768}, Case{TokenType::kUint32, uint64_t{1} << 32},
        Case{TokenType::kInt32, uint64_t{1} << 31}, Case{TokenType::kInt64, uint64_t{1} << 63}}) {
    SCOPED_TRACE(TokenTypeName(c.type));
    const std::string path = dir_ / (std::string("bad/") + TokenTypeName(c.type) + ".h5");
    const std::vector<uint64_t> tokens = {1, MaxId(c.type), 3, c.bad, 5};
    const std::vector<uint64_t> offsets = {0, 2, 5};
    try {
      WriteShard(path, c.type, offsets, tokens, {});
      ADD_FAILURE() << "no error for id " << c.bad;
    } catch (const DataError& e) {
      ExpectMentions(e.what(), path);
      ExpectMentions(e.what(), "/tokens[3]");
      ExpectMentions(e.what(), std::to_string(c.bad));
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

TEST_F(ShardIoTest, UnfinishedWriterLeavesNoFile) {
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

TEST_F(ShardIoTest, FolderThatCannotBeMadeIsIoError) {
  std::ofstream(dir_ / "plain-file") << "x";
  const std::vector<uint64_t> offsets = {0};
  EXPECT_THROW(WriteShard(dir_ / "plain-file/x.h5", TokenType::kUint32, offsets, {}, {}), IoError);
}

TEST_F(ShardIoTest, BareFileNameIsWrittenInTheCurrentFolder) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_.path());
  const std::vector<uint64_t> offsets = {0, 2}, tokens = {7, 8};
  EXPECT_NO_THROW(WriteShard("bare.h5", TokenType::kUint16, offsets, tokens, {}));
  fs::current_path(before);
  EXPECT_TRUE(fs::exists(dir_ / "bare.h5"));
}

TEST_F(ShardIoTest, ReadingBeyondTheEndIsDataError) {
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

TEST_F(ShardIoTest, TruncatedAfterDescriptionIsIoErrorNamingTheFile) {
  std::vector<std::vector<uint64_t>> docs(10, std::vector<uint64_t>(100, 42));
  WriteTestShard(dir_ / "t/x.h5", docs, TokenType::kUint32);
  const ShardInfo info = Describe(dir_, "t/x.h5");
  ASSERT_TRUE(info.tokens_at.direct);
  const std::string path = dir_ / "t/x.h5";
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(info.tokens_at.byte_offset + 4 * 500)), 0);
  ShardReader reader(dir_.path(), info);
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
    ShardReader gone(dir_.path(), info);
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    ExpectMentions(e.what(), path);
  }
}

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

TEST_F(ShardIoTest, DescribeShardOfAGoodShard) {
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
  ASSERT_TRUE(got.tokens_at.direct);
  ASSERT_TRUE(got.offsets_at.direct);
  EXPECT_EQ(PreadLittleEndian(path, got.tokens_at.byte_offset, 2, 6),
            (std::vector<uint64_t>{5, 6, 7, 65535, 0, 9}));
  EXPECT_EQ(PreadLittleEndian(path, got.offsets_at.byte_offset, 8, 5),
            (std::vector<uint64_t>{0, 3, 3, 5, 6}));

  ShardInfo expected;
  expected.path = "books/2024/part-1.h5";
  expected.dataset = 3;
  expected.file_bytes = fs::file_size(path);
  expected.docs = 4;
  expected.tokens = 6;
  expected.token_type = TokenType::kUint16;
  expected.offsets_signed = false;
  expected.tokens_at = got.tokens_at;
  expected.offsets_at = got.offsets_at;
  expected.vocab_size = 65536;
  expected.eos_id = 0;
  expected.bos_id = 1;
  expected.tokenizer = "my tokenizer v2";
  EXPECT_EQ(got, expected);

  // No optional attributes: none in the row.
  WriteTestShard(dir_ / "plain/p.h5", docs, TokenType::kUint32);
  const ShardInfo plain = Describe(dir_, "plain/p.h5", 0);
  EXPECT_FALSE(plain.vocab_size || plain.eos_id || plain.bos_id || plain.tokenizer);
  EXPECT_EQ(plain.token_type, TokenType::kUint32);
  EXPECT_EQ(plain.docs, 4u);
}

TEST_F(ShardIoTest, ShardWithoutTokens) {
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

}  // namespace
}  // namespace stoker
