// CollectCorpusStats on real files at 1, 2 and 4 ranks: exact counts and percentiles on corpora of
// known document lengths, the same stats whatever the number of ranks, and collective DataErrors
// on bad corpora.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>

#include "common/test_support.h"
#include "shard/discovery.h"
#include "stoker/error.h"
#include "tokens/token_type.h"
#include "tools/corpus_stats.h"

namespace stoker {
namespace {

using testing::RawArray;
using testing::RawShard;
using testing::SharedTempDir;
using testing::WriteRawShard;
using testing::WriteTestShard;

// Documents of the given lengths, every token 1.
std::vector<std::vector<uint64_t>> Docs(const std::vector<uint64_t>& lengths) {
  std::vector<std::vector<uint64_t>> docs;
  for (uint64_t n : lengths) docs.emplace_back(n, 1);
  return docs;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> values(last - first + 1);
  std::iota(values.begin(), values.end(), first);
  return values;
}

class InspectTest : public ::testing::Test {
 protected:
  // Runs `write` on rank 0 only; every rank fails with it if it throws.
  void OnRankZero(const std::function<void()>& write) { testing::OnRankZero(comm_, write); }

  // "web": lengths 1..100 over three files of different token types; "code": 5, 5, 5, 1000.
  void WriteKnownCorpus() {
    OnRankZero([&] {
      WriteTestShard(dir_ / "web/part-0.h5", Docs(Range(1, 30)), TokenType::kUint16);
      WriteTestShard(dir_ / "web/part-1.h5", Docs(Range(31, 70)), TokenType::kUint32);
      WriteTestShard(dir_ / "web/sub/part-2.h5", Docs(Range(71, 100)), TokenType::kUint16);
      WriteTestShard(dir_ / "code/part-0.h5", Docs({5, 5}), TokenType::kUint16);
      WriteTestShard(dir_ / "code/part-1.h5", Docs({5, 1000}), TokenType::kUint16);
    });
  }

  // A good shard web/good.h5 and `bad` as web/bad.h5.
  void Write(const RawShard& bad) {
    OnRankZero([&] {
      WriteTestShard(dir_ / "web/good.h5", Docs({2, 3}));
      WriteRawShard(dir_ / "web/bad.h5", bad);
    });
  }

  mpi::Comm comm_{MPI_COMM_WORLD};
  SharedTempDir dir_{MPI_COMM_WORLD};
};

TEST_F(InspectTest, CountsAndPercentilesOfKnownLengths) {
  WriteKnownCorpus();
  const CorpusStats stats = CollectCorpusStats(comm_, dir_.path());
  ASSERT_EQ(stats.datasets.size(), 2u);
  const DatasetStats& code = stats.datasets[0];
  const DatasetStats& web = stats.datasets[1];
  EXPECT_EQ(web.name, "web");
  EXPECT_EQ(web.files, 3u);
  EXPECT_EQ(web.docs, 100u);
  EXPECT_EQ(web.tokens, 5050u);
  EXPECT_EQ(web.doc_lengths.min(), 1u);
  EXPECT_EQ(web.doc_lengths.max(), 100u);
  EXPECT_DOUBLE_EQ(web.doc_lengths.mean(), 50.5);
  EXPECT_EQ(web.doc_lengths.Percentile(0.5), 50u);  // lengths below 128 are exact
  EXPECT_EQ(web.doc_lengths.Percentile(0.9), 90u);
  EXPECT_EQ(web.doc_lengths.Percentile(0.99), 99u);
  EXPECT_EQ(TokenTypesLabel(web.token_types), "mixed(uint16,uint32)");

  EXPECT_EQ(code.name, "code");
  EXPECT_EQ(code.files, 2u);
  EXPECT_EQ(code.docs, 4u);
  EXPECT_EQ(code.tokens, 1015u);
  EXPECT_EQ(code.doc_lengths.min(), 5u);
  EXPECT_EQ(code.doc_lengths.Percentile(0.5), 5u);
  EXPECT_EQ(code.doc_lengths.max(), 1000u);
  EXPECT_EQ(TokenTypesLabel(code.token_types), "uint16");

  EXPECT_EQ(stats.total_files, 5u);
  EXPECT_EQ(stats.total_docs, 104u);
  EXPECT_EQ(stats.total_tokens, 6065u);
  EXPECT_EQ(stats.doc_lengths.count(), 104u);
  EXPECT_EQ(stats.doc_lengths.min(), 1u);
  EXPECT_EQ(stats.doc_lengths.max(), 1000u);
  EXPECT_EQ(stats.fingerprint, DiscoverCorpus(comm_, dir_.path()).fingerprint);
  EXPECT_EQ(stats.root, dir_.path());
}

// Every rank also computes the stats alone (over MPI_COMM_SELF): the result must not depend on
// how many ranks shared the work, nor on which rank read which file.
TEST_F(InspectTest, SameStatsAtAnyNumberOfRanks) {
  WriteKnownCorpus();
  const CorpusStats together = CollectCorpusStats(comm_, dir_.path());
  const CorpusStats alone = CollectCorpusStats(mpi::Comm(MPI_COMM_SELF), dir_.path());
  const CorpusStats small_blocks = CollectCorpusStats(comm_, dir_.path(), /*block_elements=*/3);
  for (const CorpusStats* other : {&alone, &small_blocks}) {
    ASSERT_EQ(other->datasets.size(), together.datasets.size());
    for (size_t d = 0; d < together.datasets.size(); ++d) {
      EXPECT_EQ(other->datasets[d].doc_lengths.ToWords(),
                together.datasets[d].doc_lengths.ToWords());
      EXPECT_EQ(other->datasets[d].docs, together.datasets[d].docs);
      EXPECT_EQ(other->datasets[d].token_types, together.datasets[d].token_types);
    }
    EXPECT_EQ(other->doc_lengths.ToWords(), together.doc_lengths.ToWords());
    EXPECT_EQ(FormatCorpusStats(*other), FormatCorpusStats(together));
  }
}

TEST_F(InspectTest, EmptyDocumentsAndEmptyFiles) {
  OnRankZero([&] {
    WriteTestShard(dir_ / "web/part-0.h5", Docs({0, 3, 0}));
    WriteTestShard(dir_ / "web/part-1.h5", {});
  });
  const CorpusStats stats = CollectCorpusStats(comm_, dir_.path());
  ASSERT_EQ(stats.datasets.size(), 1u);
  EXPECT_EQ(stats.datasets[0].docs, 3u);
  EXPECT_EQ(stats.datasets[0].doc_lengths.min(), 0u);
  EXPECT_EQ(stats.datasets[0].doc_lengths.Percentile(0.5), 0u);
  EXPECT_EQ(stats.datasets[0].doc_lengths.max(), 3u);
}

TEST_F(InspectTest, TableHasThousandsSeparators) {
  OnRankZero(
      [&] { WriteTestShard(dir_ / "big/part-0.h5", Docs({1'234'567}), TokenType::kUint16); });
  const std::string table = FormatCorpusStats(CollectCorpusStats(comm_, dir_.path()));
  EXPECT_NE(table.find("1,234,567"), std::string::npos) << table;
  EXPECT_NE(table.find("dataset"), std::string::npos) << table;
  EXPECT_NE(table.find("fingerprint "), std::string::npos) << table;
}

TEST_F(InspectTest, BadCorpusThrowsDataErrorOnAllRanks) {
  RawShard shard;
  shard.doc_offsets = RawArray{.type = "uint64", .values = {0, 2}};
  Write(shard);
  testing::ExpectCollectiveError<DataError>([&] { CollectCorpusStats(comm_, dir_.path()); },
                                            {"web/bad.h5", "/tokens", "missing"});
}

TEST_F(InspectTest, DecreasingOffsetsThrowDataErrorOnAllRanks) {
  // Discovery checks only the first and last offsets; the middle one is caught while reading.
  RawShard shard;
  shard.doc_offsets = RawArray{.type = "uint64", .values = {0, 8, 4, 10}};
  shard.tokens = RawArray{.type = "uint16", .values = std::vector<int64_t>(10, 1)};
  Write(shard);
  testing::ExpectCollectiveError<DataError>(
      [&] { CollectCorpusStats(comm_, dir_.path()); },
      {"web/bad.h5", "/doc_offsets[2]", "offset 4", "stoker verify"});
}

}  // namespace
}  // namespace stoker
