// The corpus record's codec: a table round trips, paths sharing prefixes or not, shards with and
// without a content checksum; every flipped bit or cut is refused naming the file; a version-1
// record (no checksums) is still read; a corpus of 100,000 shards stays small.
#include "state/corpus_record.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "state/field_codec.h"
#include "stoker/error.h"

namespace stoker {
namespace {

CorpusRecord SomeRecord() {
  return {.fingerprint = "0123456789abcdef0123456789abcdef",
          .shards = {{"code/part-00000.h5", 4096, 12, 3000, TokenType::kUint16, 0xc0ffee},
                     {"code/part-00001.h5", 5000, 1200, 50000, TokenType::kUint32, ~uint64_t{0}},
                     {"web/2024/a.h5", 0, 0, 0, TokenType::kInt64},
                     {"web/2024/ab.h5", 1, 2, 3, TokenType::kUint8},
                     {"web/2024/a.h5", 7, 8, 9, TokenType::kInt8},  // a prefix of the previous
                     {"", 1, 1, 1, TokenType::kInt16}}};
}

TEST(CorpusRecord, RoundTrips) {
  const CorpusRecord record = SomeRecord();
  EXPECT_EQ(DecodeCorpusRecord(EncodeCorpusRecord(record), "f"), record);
  const CorpusRecord empty{.fingerprint = "x"};
  EXPECT_EQ(DecodeCorpusRecord(EncodeCorpusRecord(empty), "f"), empty);
}

TEST(CorpusRecord, EveryFlippedBitOrCutIsRefusedNamingTheFile) {
  const std::string bytes = EncodeCorpusRecord(SomeRecord());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      EXPECT_THROW(DecodeCorpusRecord(bad, "corpus.table"), DataError) << "byte " << i;
    }
  }
  for (size_t n : {size_t{0}, size_t{7}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    try {
      DecodeCorpusRecord(bytes.substr(0, n), "loader/corpus.table");
      ADD_FAILURE() << "a record cut to " << n << " bytes was accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("loader/corpus.table: not a valid stoker corpus record"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(CorpusRecord, VersionOneWithoutChecksumsIsStillRead) {
  FieldWriter payload;
  payload.Str("0123456789abcdef0123456789abcdef");
  payload.U(1);  // one shard: no shared prefix, its path, bytes, documents, tokens, uint16
  payload.U(0);
  payload.Str("web/a.h5");
  for (const uint64_t field : {10, 2, 3, 4}) payload.U(field);
  const CorpusRecord record = DecodeCorpusRecord(FrameFile("STOKERCT", 1, payload.bytes()), "f");
  ASSERT_EQ(record.shards.size(), 1u);
  EXPECT_EQ(record.shards[0],
            (RecordedShard{"web/a.h5", 10, 2, 3, TokenType::kUint16, std::nullopt}));
}

TEST(CorpusRecord, OneHundredThousandShardsTakeAboutTwentyBytesEach) {
  CorpusRecord record{.fingerprint = "0123456789abcdef0123456789abcdef"};
  for (int i = 0; i < 100000; ++i) {
    record.shards.push_back({fmt::format("web/crawl-{:03}/part-{:05}.h5", i / 1000, i % 1000),
                             1 << 30, 100000, 250000000, TokenType::kUint32});
  }
  const std::string bytes = EncodeCorpusRecord(record);
  EXPECT_LT(bytes.size(), 2'500'000u);  // 1 GiB files: 5 bytes of size, 4 of tokens
  EXPECT_EQ(DecodeCorpusRecord(bytes, "f"), record);
}

}  // namespace
}  // namespace stoker
