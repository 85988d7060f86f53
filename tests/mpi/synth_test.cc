// `stoker synth` as a library call, at 1, 2 and 4 ranks: the corpus holds exactly what the spec
// asks for, the bytes depend on the spec only (not on the run, not on the number of ranks),
// --unique-tokens makes every token value occur once, --force leaves no shard of an earlier run,
// and bad specs fail every rank together.
#include "tools/synth.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>

#include "common/test_support.h"
#include "shard/discovery.h"
#include "stoker/error.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::ExpectCollectiveError;
using testing::OnRankZero;
using testing::ReadFileBytes;

SynthSpec ThreeDatasets(const std::string& out) {
  SynthSpec spec;
  spec.out = out;
  spec.datasets = {{"web", 300000, 500}, {"books", 120000, 2000}, {"code", 50001, 100}};
  spec.files = 3;
  spec.seed = 7;
  spec.vocab = 50304;
  return spec;
}

// Relative paths of every file below `root`, sorted.
std::vector<std::string> ListFiles(const std::string& root) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), root).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every file of `a` has a byte-identical twin in `b`, and neither has other files.
void ExpectSameFiles(const std::string& a, const std::string& b) {
  const auto files = ListFiles(a);
  EXPECT_EQ(files, ListFiles(b));
  for (const auto& file : files) {
    EXPECT_TRUE(ReadFileBytes(a + "/" + file) == ReadFileBytes(b + "/" + file))
        << file << " differs between " << a << " and " << b;
  }
}

// The shard's tokens, its documents one after the other.
std::vector<int64_t> ReadAllTokens(const std::string& root, const ShardInfo& shard) {
  std::vector<uint64_t> offsets;
  const std::vector<uint64_t> tokens =
      testing::Flatten(testing::ReadShardDocs(root, shard), &offsets);
  EXPECT_EQ(tokens.size(), shard.tokens) << shard.path;
  return std::vector<int64_t>(tokens.begin(), tokens.end());
}

class SynthTest : public ::testing::Test {
 protected:
  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
};

TEST_F(SynthTest, CorpusHoldsWhatTheSpecAsks) {
  const SynthSpec spec = ThreeDatasets(dir_ / "corpus");
  const SynthStats stats = SynthesizeCorpus(comm_, spec);
  EXPECT_EQ(stats.files, 9u);
  EXPECT_EQ(stats.tokens, 470001u);
  const CorpusScan scan = ScanCorpus(comm_, spec.out);
  for (const auto& p : scan.problems) ADD_FAILURE() << p.ToString();
  const CorpusTable& table = scan.table;
  ASSERT_EQ(table.datasets.size(), 3u);
  EXPECT_EQ(stats.docs, table.total_docs());
  for (const auto& asked : spec.datasets) {
    const auto it = std::find_if(table.datasets.begin(), table.datasets.end(),
                                 [&](const DatasetInfo& d) { return d.name == asked.name; });
    ASSERT_NE(it, table.datasets.end()) << asked.name;
    EXPECT_EQ(it->num_shards, 3u) << asked.name;
    EXPECT_EQ(it->tokens, asked.tokens) << asked.name;
    const double mean = static_cast<double>(it->tokens) / it->docs;
    EXPECT_GT(mean, 0.6 * asked.mean_doc_len) << asked.name;
    EXPECT_LT(mean, 1.4 * asked.mean_doc_len) << asked.name;
    for (uint32_t s = it->first_shard; s < it->first_shard + it->num_shards; ++s) {
      const ShardInfo& shard = table.shards[s];
      const uint64_t part = s - it->first_shard;
      EXPECT_EQ(shard.path, fmt::format("{}/part-{:05}.h5", asked.name, part));
      EXPECT_EQ(shard.tokens, asked.tokens / 3 + (part < asked.tokens % 3)) << shard.path;
      EXPECT_EQ(shard.token_type, TokenType::kUint16) << shard.path;
      EXPECT_EQ(shard.vocabulary->vocab_size, 50304) << shard.path;
      EXPECT_EQ(shard.vocabulary->eos_id, 50303) << shard.path;
      EXPECT_EQ(shard.vocabulary->tokenizer, "synthetic") << shard.path;
    }
  }
  // Token values: uniform in [0, vocab - 1), so never the eos id, and spread over the range.
  const ShardInfo& shard = table.shards[comm_.rank() % table.shards.size()];
  const auto tokens = ReadAllTokens(spec.out, shard);
  EXPECT_GE(*std::min_element(tokens.begin(), tokens.end()), 0);
  EXPECT_LT(*std::max_element(tokens.begin(), tokens.end()), 50303);
  EXPECT_GT(*std::max_element(tokens.begin(), tokens.end()), 45000);
}

TEST_F(SynthTest, LargeVocabularyUsesUint32) {
  SynthSpec spec;
  spec.out = dir_ / "big-vocab";
  spec.datasets = {{"a", 5000, 50}};
  spec.vocab = 100000;
  SynthesizeCorpus(comm_, spec);
  const CorpusTable table = DiscoverCorpus(comm_, spec.out);
  ASSERT_EQ(table.shards.size(), 1u);
  EXPECT_EQ(table.shards[0].token_type, TokenType::kUint32);
  EXPECT_EQ(table.shards[0].vocabulary->eos_id, 99999);
}

TEST_F(SynthTest, SameSpecSameBytesWhateverTheRanks) {
  SynthSpec spec = ThreeDatasets(dir_ / "first");
  SynthesizeCorpus(comm_, spec);
  spec.out = dir_ / "second";
  SynthesizeCorpus(comm_, spec);
  // Rank 0 alone writes the whole corpus once more (if that throws, every rank fails with it).
  OnRankZero(comm_, [&] {
    SynthSpec alone = spec;
    alone.out = dir_ / "alone";
    SynthesizeCorpus(mpi::Comm(MPI_COMM_SELF), alone);
    ExpectSameFiles(dir_ / "first", dir_ / "second");
    ExpectSameFiles(dir_ / "first", dir_ / "alone");
  });
  // And a different seed gives different tokens.
  spec.out = dir_ / "other-seed";
  spec.seed = 8;
  SynthesizeCorpus(comm_, spec);
  if (comm_.rank() == 0) {
    EXPECT_FALSE(ReadFileBytes(dir_ / "first/web/part-00000.h5") ==
                 ReadFileBytes(dir_ / "other-seed/web/part-00000.h5"));
  }
}

TEST_F(SynthTest, UniqueTokensAreAllDistinct) {
  SynthSpec spec;
  spec.out = dir_ / "unique";
  spec.datasets = {{"alpha", 40000, 300}, {"beta", 30001, 50}};
  spec.files = 3;
  spec.unique_tokens = true;
  SynthesizeCorpus(comm_, spec);
  const CorpusTable table = DiscoverCorpus(comm_, spec.out);
  const uint64_t total = 70001;
  ASSERT_EQ(table.total_tokens(), total);
  std::vector<char> seen(total, 0);
  for (const ShardInfo& shard : table.shards) {
    EXPECT_EQ(shard.token_type, TokenType::kUint32) << shard.path;
    EXPECT_EQ(shard.vocabulary->vocab_size, static_cast<int64_t>(total + 2)) << shard.path;
    EXPECT_EQ(shard.vocabulary->eos_id, static_cast<int64_t>(total)) << shard.path;
    EXPECT_EQ(shard.vocabulary->bos_id, static_cast<int64_t>(total + 1)) << shard.path;
    const auto tokens = ReadAllTokens(spec.out, shard);
    for (size_t i = 0; i < tokens.size(); ++i) {
      ASSERT_GE(tokens[i], 0) << shard.path;
      ASSERT_LT(tokens[i], static_cast<int64_t>(total)) << shard.path;
      EXPECT_EQ(seen[tokens[i]]++, 0) << "token " << tokens[i] << " repeats in " << shard.path;
      if (i > 0) {
        EXPECT_EQ(tokens[i], tokens[i - 1] + 1) << shard.path << " at " << i;
      }
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(total));
}

TEST_F(SynthTest, RefusesAnExistingCorpusUnlessForced) {
  SynthSpec spec;
  spec.out = dir_ / "again";
  spec.datasets = {{"a", 1000, 10}};
  SynthesizeCorpus(comm_, spec);
  ExpectCollectiveError<ConfigError>([&] { SynthesizeCorpus(comm_, spec); },
                                     {"already holds a corpus", "--force"});
  spec.force = true;
  spec.datasets[0].tokens = 2000;
  SynthesizeCorpus(comm_, spec);
  EXPECT_EQ(DiscoverCorpus(comm_, spec.out).total_tokens(), 2000u);
}

// A forced rerun with fewer files must not leave the earlier run's extra shards in the corpus.
TEST_F(SynthTest, ForceWithFewerFilesLeavesOnlyTheNewShards) {
  SynthSpec spec;
  spec.out = dir_ / "fewer";
  spec.datasets = {{"a", 3000, 10}, {"b", 3000, 10}};
  spec.files = 3;
  SynthesizeCorpus(comm_, spec);
  EXPECT_EQ(DiscoverCorpus(comm_, spec.out).shards.size(), 6u);
  spec.force = true;
  spec.files = 1;
  spec.seed = 9;
  const SynthStats stats = SynthesizeCorpus(comm_, spec);
  EXPECT_EQ(stats.files, 2u);
  const CorpusTable table = DiscoverCorpus(comm_, spec.out);
  ASSERT_EQ(table.shards.size(), 2u);
  EXPECT_EQ(table.shards[0].path, "a/part-00000.h5");
  EXPECT_EQ(table.shards[1].path, "b/part-00000.h5");
  EXPECT_EQ(table.total_tokens(), 6000u);
  // The same bytes as a first run of that spec into an empty folder.
  spec.out = dir_ / "fresh";
  spec.force = false;
  SynthesizeCorpus(comm_, spec);
  OnRankZero(comm_, [&] { ExpectSameFiles(dir_ / "fewer", dir_ / "fresh"); });
}

// Shards that a forced synth would not replace (another dataset, another name) would mix with its
// corpus: refused on every rank before anything is removed.
TEST_F(SynthTest, ForceRefusesShardsItWouldNotReplace) {
  SynthSpec spec;
  spec.out = dir_ / "mixed";
  spec.datasets = {{"a", 1000, 10}, {"b", 1000, 10}};
  spec.files = 2;
  SynthesizeCorpus(comm_, spec);
  spec.force = true;
  spec.datasets.pop_back();  // "b" stays from the first run
  ExpectCollectiveError<ConfigError>([&] { SynthesizeCorpus(comm_, spec); },
                                     {"b/part-00000.h5", "would mix", "remove it"});
  EXPECT_TRUE(fs::exists(dir_ / "mixed/a/part-00001.h5")) << "removed before refusing";
  // A shard of another name inside a dataset synth writes: refused too.
  spec.datasets = {{"a", 1000, 10}, {"b", 1000, 10}};
  OnRankZero(comm_, [&] { testing::WriteTestShard(dir_ / "mixed/a/extra/x.h5", {{1, 2}}); });
  ExpectCollectiveError<ConfigError>([&] { SynthesizeCorpus(comm_, spec); },
                                     {"a/extra/x.h5", "would mix"});
  // Hidden folders and files at the root are no part of a corpus: no reason to refuse.
  OnRankZero(comm_, [&] {
    fs::remove_all(dir_ / "mixed/a/extra");
    testing::WriteTestShard(dir_ / "mixed/.cache/x.h5", {{1}});
    testing::WriteTestShard(dir_ / "mixed/stray.h5", {{1}});
  });
  EXPECT_EQ(SynthesizeCorpus(comm_, spec).files, 4u);
  EXPECT_EQ(DiscoverCorpus(comm_, spec.out).shards.size(), 4u);
}

// A bad spec fails every rank with one collective ConfigError whose message names every problem.
void ExpectBadSpec(const mpi::Comm& comm, const SynthSpec& spec,
                   const std::vector<std::string>& problems) {
  ExpectCollectiveError<ConfigError>([&] { SynthesizeCorpus(comm, spec); }, problems);
  EXPECT_FALSE(fs::exists(spec.out)) << "a bad spec wrote " << spec.out;
}

TEST_F(SynthTest, BadSpecsFailEveryRank) {
  SynthSpec good;
  good.out = dir_ / "bad";
  good.datasets = {{"a", 1000, 10}, {"b", 1000, 10}};
  SynthSpec spec = good;
  spec.datasets.clear();
  ExpectBadSpec(comm_, spec, {"no datasets"});
  spec = good;
  spec.datasets[1].tokens = 0;
  ExpectBadSpec(comm_, spec, {"dataset 'b' has 0 tokens"});
  spec = good;
  spec.datasets[1].name = "a";
  ExpectBadSpec(comm_, spec, {"dataset 'a' is given more than once"});
  spec = good;
  spec.files = 0;
  ExpectBadSpec(comm_, spec, {"--files must be at least 1"});
  spec = good;
  spec.vocab = 1;
  ExpectBadSpec(comm_, spec, {"--vocab 1 must be at least 2"});
  spec = good;
  spec.datasets[0].name = "x/y";
  spec.datasets[1].mean_doc_len = 0.5;
  spec.files = 2000;
  ExpectBadSpec(comm_, spec,
                {"dataset name 'x/y' is not a plain folder name",
                 "dataset 'b': mean document length 0.5 must be at least 1",
                 "dataset 'x/y': 1000 tokens cannot fill 2000 files"});
}

TEST(SynthParseTest, ParsesDatasetArguments) {
  SynthDataset d = ParseSynthDataset("web:10K:250.5");
  EXPECT_EQ(d.name, "web");
  EXPECT_EQ(d.tokens, 10000u);
  EXPECT_DOUBLE_EQ(d.mean_doc_len, 250.5);
  d = ParseSynthDataset("books:2M");
  EXPECT_EQ(d.tokens, 2000000u);
  EXPECT_DOUBLE_EQ(d.mean_doc_len, 1000);
  EXPECT_EQ(ParseSynthDataset("c:3G").tokens, 3000000000u);
  EXPECT_EQ(ParseSynthDataset("c:123").tokens, 123u);
  for (const char* bad : {"web", "web:", "web:abc", "web:10X", "web:-5", "web:10:", "web:10:x",
                          "web:99999999999999999999"}) {
    EXPECT_THROW(ParseSynthDataset(bad), ConfigError) << bad;
  }
}

}  // namespace
}  // namespace stoker
