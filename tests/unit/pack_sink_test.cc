// The pieces of `stoker pack` that need no MPI: TokenBuffer keeps every id when it widens from
// uint32 to uint64 midway, and ShardSink names its shards part-RRRRR-KKKKK.h5, splits them at
// shard_tokens, and refuses a rank its five digits cannot name (path order would break).
#include "tools/pack_sink.h"

#include <gtest/gtest.h>

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
using testing::TempDir;

// The documents of the shard `rel` below `root`, which must pass discovery's checks.
testing::Docs ReadBack(const std::string& root, const std::string& rel) {
  const ShardCheck check = DescribeShard(root, rel, 0);
  EXPECT_TRUE(check.info.has_value()) << rel;
  if (!check.info) return {};
  return testing::ReadShardDocs(root, *check.info);
}

TEST(TokenBufferTest, WideningMidwayKeepsEveryId) {
  const std::vector<uint64_t> first = {0, 7, 4294967295u};
  const std::vector<uint64_t> second = {4294967296u, 1, (uint64_t{1} << 62) + 5};
  TokenBuffer buffer(2);
  buffer.Append(first);
  EXPECT_EQ(buffer.max(), 4294967295u);
  buffer.Append(second);
  EXPECT_EQ(buffer.size(), 6u);
  EXPECT_EQ(buffer.max(), (uint64_t{1} << 62) + 5);
  TempDir dir;
  const std::vector<uint64_t> offsets = {0, 6};
  ShardWriter writer(dir / "d/wide.h5", TokenType::kUint64, offsets, {});
  buffer.WriteTo(&writer);
  writer.Finish();
  std::vector<uint64_t> all = first;
  all.insert(all.end(), second.begin(), second.end());
  EXPECT_EQ(ReadBack(dir.path(), "d/wide.h5"), testing::Docs{all});
  buffer.Clear();
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_EQ(buffer.max(), 0u);
}

TEST(ShardSinkTest, NamesAndSplitsShardsInInputOrder) {
  TempDir dir;
  PackSpec spec;
  spec.out = dir / "data";
  spec.shard_tokens = 4;
  fs::create_directories(spec.out);
  ShardSink sink(spec, 99999);  // the last rank five digits can name
  const std::vector<std::vector<uint64_t>> docs = {{1, 2}, {3}, {4, 5}, {6, 7, 8, 9, 10, 11}, {}};
  for (size_t i = 0; i < docs.size(); ++i) {
    sink.StartDoc(DocKind::kIds, docs[i].size(), "in.jsonl:" + std::to_string(i + 1));
    sink.Append(docs[i]);
    sink.EndDoc();
  }
  sink.Flush();
  EXPECT_EQ(sink.docs(), 5u);
  EXPECT_EQ(sink.tokens(), 11u);
  // A document that does not fit closes the shard; a longer one gets a shard of its own.
  ASSERT_EQ(sink.shards(), 4u);
  EXPECT_EQ(ReadBack(dir.path(), "data/part-99999-00000.h5"), (testing::Docs{{1, 2}, {3}}));
  EXPECT_EQ(ReadBack(dir.path(), "data/part-99999-00001.h5"), (testing::Docs{{4, 5}}));
  EXPECT_EQ(ReadBack(dir.path(), "data/part-99999-00002.h5"),
            (testing::Docs{{6, 7, 8, 9, 10, 11}}));
  EXPECT_EQ(ReadBack(dir.path(), "data/part-99999-00003.h5"), (testing::Docs{{}}));
  sink.RemoveWritten();
  EXPECT_TRUE(fs::is_empty(spec.out));
}

TEST(ShardSinkTest, RankBeyondFiveDigitsIsConfigError) {
  PackSpec spec;
  spec.out = "unused";
  try {
    ShardSink sink(spec, 100000);
    ADD_FAILURE() << "rank 100000 accepted";
  } catch (const ConfigError& e) {
    testing::ExpectMentions(e.what(), "at most 100000 ranks");
    testing::ExpectMentions(e.what(), "rank 100000");
  }
}

}  // namespace
}  // namespace stoker
