// ReadFramedSizes (loader/unit_sizes.h): every rank gets every document's framed size of a
// dataset, in the dataset's numbering, at 1, 2 and 4 ranks; a file whose offsets decrease inside
// (which discovery, reading only the first and last, lets through) fails every rank together.
//
// EXPECT (not ASSERT) around collectives, so that a failure on one rank cannot leave the others
// waiting.
#include "loader/unit_sizes.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "mpi/comm.h"
#include "order/random.h"
#include "shard/discovery.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using stoker::testing::RawShard;
using stoker::testing::ShardOfLengths;
using stoker::testing::SharedTempDir;

class UnitSizesTest : public ::testing::Test {
 protected:
  mpi::Comm comm_{MPI_COMM_WORLD};
  SharedTempDir dir_{MPI_COMM_WORLD};

  LoaderSetup Discover(std::optional<int64_t> bos) {
    LoaderSetup setup;
    setup.table = DiscoverCorpus(comm_, dir_.path(), &setup.arrays);
    setup.bos_id = bos;
    return setup;
  }
};

// Dataset "a": 7 files of random lengths, some empty, one file of no document; dataset "b": one
// file. More files than ranks, and fewer.
TEST_F(UnitSizesTest, EveryRankGetsEveryDocumentsFramedSizeInTheDatasetsNumbering) {
  std::vector<uint64_t> lengths_a;
  testing::OnRankZero(comm_, [&] {
    for (int f = 0; f < 7; ++f) {
      CounterRng rng(DeriveKey(3, "unit-sizes", f));
      std::vector<uint64_t> lengths(f == 4 ? 0 : 1 + rng.NextBelow(40));
      for (uint64_t& length : lengths) length = rng.NextBelow(4) == 0 ? 0 : rng.NextBelow(500);
      testing::WriteRawShard(dir_ / fmt::format("a/part-{}.h5", f), ShardOfLengths(lengths));
    }
    testing::WriteRawShard(dir_ / "b/only.h5", ShardOfLengths({3, 0, 9}));
  });
  for (int f = 0; f < 7; ++f) {  // every rank knows what rank 0 wrote: the same draws
    CounterRng rng(DeriveKey(3, "unit-sizes", f));
    std::vector<uint64_t> lengths(f == 4 ? 0 : 1 + rng.NextBelow(40));
    for (uint64_t& length : lengths) length = rng.NextBelow(4) == 0 ? 0 : rng.NextBelow(500);
    lengths_a.insert(lengths_a.end(), lengths.begin(), lengths.end());
  }
  for (const std::optional<int64_t> bos : {std::optional<int64_t>{}, std::optional<int64_t>{7}}) {
    const LoaderSetup setup = Discover(bos);
    const uint64_t extra = bos ? 2 : 1;
    std::vector<uint64_t> expected;
    for (uint64_t length : lengths_a) expected.push_back(length == 0 ? 0 : length + extra);
    EXPECT_EQ(ReadFramedSizes(comm_, setup, 0), expected);
    EXPECT_EQ(ReadFramedSizes(comm_, setup, 1), (std::vector<uint64_t>{3 + extra, 0, 9 + extra}));
  }
}

TEST_F(UnitSizesTest, OffsetsThatDecreaseInsideAFileFailEveryRank) {
  testing::OnRankZero(comm_, [&] {
    testing::WriteRawShard(dir_ / "a/good.h5", ShardOfLengths({4, 5}));
    RawShard bad = ShardOfLengths({4, 5, 6});
    bad.doc_offsets->values = {0, 9, 4, 15};  // first and last as discovery wants them
    testing::WriteRawShard(dir_ / "a/lies.h5", bad);
  });
  const LoaderSetup setup = Discover({});
  testing::ExpectCollectiveError<DataError>([&] { ReadFramedSizes(comm_, setup, 0); },
                                            {"a/lies.h5", "/doc_offsets[1] = 9", "stoker verify"});
}

}  // namespace
}  // namespace stoker
