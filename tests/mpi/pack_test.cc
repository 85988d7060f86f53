// `stoker pack` as a library call, at 1, 2 and 4 ranks, on real files: documents come back
// identical and in input order (jsonl token ids, jsonl strings, text files), shards split where
// --shard-tokens says, and bad inputs fail every rank with one message naming the file and line.
#include "tools/pack.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/test_support.h"
#include "order/random.h"
#include "shard/discovery.h"
#include "stoker/error.h"
#include "tokens/byte_tokenizer.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using Doc = std::vector<uint64_t>;
using testing::ExpectCollectiveError;

std::string JsonLine(const Doc& doc) {
  return fmt::format("{{\"id\": 3, \"tokens\": [{}]}}\n", fmt::join(doc, ", "));
}

// The documents of the one dataset in `root`, in the dataset's order, and its table.
struct Packed {
  CorpusTable table;
  std::vector<Doc> docs;
  std::vector<std::vector<uint64_t>> doc_lengths_by_shard;
};

Packed ReadPacked(const mpi::Comm& comm, const std::string& root) {
  Packed packed;
  const CorpusScan scan = ScanCorpus(comm, root);
  for (const auto& p : scan.problems) ADD_FAILURE() << p.ToString();
  packed.table = scan.table;
  for (const ShardInfo& shard : packed.table.shards) {
    packed.doc_lengths_by_shard.emplace_back();
    for (Doc& doc : testing::ReadShardDocs(root, shard)) {
      packed.doc_lengths_by_shard.back().push_back(doc.size());
      packed.docs.push_back(std::move(doc));
    }
  }
  return packed;
}

class PackTest : public ::testing::Test {
 protected:
  // Rank 0 writes the inputs (every rank fails if it cannot); every rank gets their paths.
  std::vector<std::string> WriteInputs(
      const std::vector<std::pair<std::string, std::string>>& files) {
    std::vector<std::string> paths;
    for (const auto& file : files) paths.push_back(dir_ / file.first);
    testing::OnRankZero(comm_, [&] {
      for (size_t i = 0; i < files.size(); ++i) testing::WriteText(paths[i], files[i].second);
    });
    return paths;
  }
  PackSpec Spec(const std::vector<std::string>& inputs, const std::string& corpus) {
    PackSpec spec;
    spec.inputs = inputs;
    spec.out = dir_ / corpus + "/data";
    return spec;
  }
  // Packing fails on every rank with one DataError naming all of `words`, leaving no shard.
  void ExpectPackFails(const PackSpec& spec, const std::vector<std::string>& words) {
    ExpectCollectiveError<DataError>([&] { PackDataset(comm_, spec); }, words);
    comm_.Barrier();
    for (const auto& entry : fs::directory_iterator(spec.out)) {
      ADD_FAILURE() << "left behind after a failed pack: " << entry.path();
    }
  }

  mpi::Comm comm_{MPI_COMM_WORLD};
  testing::SharedTempDir dir_{MPI_COMM_WORLD};
};

std::vector<Doc> RandomDocs(uint64_t seed, int count, uint64_t max_len, uint64_t max_id) {
  CounterRng rng(DeriveKey(seed, "pack-test"));
  std::vector<Doc> docs(count);
  for (auto& doc : docs) {
    doc.resize(rng.NextBelow(max_len + 1));
    for (auto& t : doc) t = rng.NextBelow(max_id);
  }
  return docs;
}

TEST_F(PackTest, JsonlRoundTripKeepsInputOrder) {
  std::vector<Doc> all;
  std::vector<std::pair<std::string, std::string>> files;
  for (int f = 0; f < 7; ++f) {
    auto docs = RandomDocs(f, 15, 400, f == 3 ? 70000 : 1000);
    if (f == 5) docs.push_back(Doc(2600, 42));     // longer than a shard
    std::string content = f == 2 ? "\n  \n" : "";  // blank lines are skipped
    for (const auto& doc : docs) content += JsonLine(doc);
    files.emplace_back(fmt::format("in-{}.jsonl", f), content);
    all.insert(all.end(), docs.begin(), docs.end());
  }
  PackSpec spec = Spec(WriteInputs(files), "jsonl");
  spec.shard_tokens = 2000;
  const PackStats stats = PackDataset(comm_, spec);
  const Packed packed = ReadPacked(comm_, dir_ / "jsonl");
  EXPECT_EQ(packed.docs, all);
  EXPECT_EQ(stats.inputs, 7u);
  EXPECT_EQ(stats.documents, all.size());
  EXPECT_EQ(stats.tokens, packed.table.total_tokens());
  EXPECT_EQ(stats.shards, packed.table.shards.size());
  bool saw_uint32 = false;
  for (const ShardInfo& shard : packed.table.shards) {
    EXPECT_TRUE(shard.tokens <= 2000 || shard.docs == 1) << shard.path << ": " << shard.tokens;
    EXPECT_FALSE(shard.vocabulary->vocab_size.has_value()) << shard.path;
    EXPECT_FALSE(shard.vocabulary->tokenizer.has_value()) << shard.path;
    EXPECT_TRUE(shard.token_type == TokenType::kUint16 || shard.token_type == TokenType::kUint32);
    saw_uint32 |= shard.token_type == TokenType::kUint32;
    EXPECT_TRUE(fs::path(shard.path).filename().string().starts_with("part-")) << shard.path;
  }
  EXPECT_TRUE(saw_uint32) << "ids up to 70000 need uint32 in some shard";
  EXPECT_EQ(packed.table.shards.front().path, "data/part-00000-00000.h5");
}

TEST_F(PackTest, VocabSizeIsRecordedAndFixesTheType) {
  const auto docs = RandomDocs(11, 30, 300, 500);
  std::string content;
  for (const auto& doc : docs) content += JsonLine(doc);
  PackSpec spec = Spec(WriteInputs({{"a.jsonl", content}}), "vocab");
  spec.vocab_size = 100000;
  PackDataset(comm_, spec);
  const Packed packed = ReadPacked(comm_, dir_ / "vocab");
  EXPECT_EQ(packed.docs, docs);
  for (const ShardInfo& shard : packed.table.shards) {
    EXPECT_EQ(shard.vocabulary->vocab_size, 100000) << shard.path;
    EXPECT_EQ(shard.token_type, TokenType::kUint32) << shard.path;
  }
}

TEST_F(PackTest, TextRoundTripThroughTheByteTokenizer) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte.push_back(static_cast<char>(b));
  std::string large;
  CounterRng rng(5);
  for (int i = 0; i < 5000; ++i) large.push_back(static_cast<char>(rng.NextBelow(256)));
  const std::vector<std::pair<std::string, std::string>> files = {
      {"a.txt", "Hello, world.\nSecond line.\n"},
      {"b.md", every_byte},
      {"c.txt", ""},
      {"d", "na\xC3\xAFve \xFF\xFE broken \xE2\x82"},
      {"e.txt", large},
      {"f.txt", std::string(1200, 'x')}};
  PackSpec spec = Spec(WriteInputs(files), "text");
  spec.shard_tokens = 3000;
  const PackStats stats = PackDataset(comm_, spec);
  const Packed packed = ReadPacked(comm_, dir_ / "text");
  ASSERT_EQ(packed.docs.size(), files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(DecodeBytes(packed.docs[i]), files[i].second) << files[i].first;
    EXPECT_EQ(packed.docs[i].size(), files[i].second.size()) << files[i].first;
  }
  EXPECT_EQ(stats.input_bytes, packed.table.total_tokens());
  for (const ShardInfo& shard : packed.table.shards) {
    EXPECT_EQ(shard.token_type, TokenType::kUint16) << shard.path;
    EXPECT_EQ(shard.vocabulary->tokenizer, "stoker-bytes-v1") << shard.path;
    EXPECT_EQ(shard.vocabulary->eos_id, 256) << shard.path;
    EXPECT_EQ(shard.vocabulary->bos_id, 257) << shard.path;
    EXPECT_EQ(shard.vocabulary->vocab_size, 258) << shard.path;
    EXPECT_TRUE(shard.tokens <= 3000 || shard.docs == 1) << shard.path;
  }
}

TEST_F(PackTest, ShardsSplitAtShardTokens) {
  const std::vector<uint64_t> lengths = {100, 100, 100, 600, 50, 50};
  std::string content;
  for (uint64_t n : lengths) content += JsonLine(Doc(n, 7));
  const auto inputs = WriteInputs({{"split.jsonl", content}});
  for (const bool with_vocab : {false, true}) {  // buffered, and streamed, long documents
    PackSpec spec = Spec(inputs, with_vocab ? "split-vocab" : "split");
    spec.shard_tokens = 250;
    if (with_vocab) spec.vocab_size = 8;
    PackDataset(comm_, spec);
    const Packed packed = ReadPacked(comm_, dir_ / (with_vocab ? "split-vocab" : "split"));
    const std::vector<std::vector<uint64_t>> expected = {{100, 100}, {100}, {600}, {50, 50}};
    EXPECT_EQ(packed.doc_lengths_by_shard, expected) << "with vocab: " << with_vocab;
    ASSERT_EQ(packed.table.shards.size(), 4u);
    // One input: the last rank packs it.
    EXPECT_EQ(packed.table.shards[3].path,
              fmt::format("data/part-{:05}-00003.h5", comm_.size() - 1));
  }
}

TEST_F(PackTest, StringFieldIsByteTokenized) {
  const std::string content =
      "{\"text\": \"caf\\u00e9 \\n tab\\t\", \"tokens\": [1]}\n{\"text\": \"\"}\n"
      "{\"text\": \"second \\\"quoted\\\"\"}\n";
  PackSpec spec = Spec(WriteInputs({{"s.jsonl", content}}), "strings");
  spec.field = "text";
  PackDataset(comm_, spec);
  const Packed packed = ReadPacked(comm_, dir_ / "strings");
  ASSERT_EQ(packed.docs.size(), 3u);
  EXPECT_EQ(DecodeBytes(packed.docs[0]), "caf\xC3\xA9 \n tab\t");
  EXPECT_EQ(DecodeBytes(packed.docs[1]), "");
  EXPECT_EQ(DecodeBytes(packed.docs[2]), "second \"quoted\"");
  EXPECT_EQ(packed.table.shards[0].vocabulary->tokenizer, "stoker-bytes-v1");
}

TEST_F(PackTest, ProgressReportsEveryInputByte) {
  const auto inputs = WriteInputs({{"p1.txt", std::string(3000, 'a')},
                                   {"p2.jsonl", "{\"tokens\": \"abc\"}\n{\"tokens\": \"d\"}"},
                                   {"p3.txt", "xyz"},
                                   {"p4.txt", std::string(100, 'b')}});
  PackSpec spec = Spec(inputs, "progress");
  uint64_t last_done = 0, last_total = 0, calls = 0;
  spec.on_progress = [&](uint64_t done, uint64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
    ++calls;
  };
  const PackStats stats = PackDataset(comm_, spec);
  EXPECT_GE(calls, 1u);
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(comm_.Sum(last_total), stats.input_bytes);
  uint64_t bytes = 0;
  for (const auto& path : inputs) bytes += fs::file_size(path);
  EXPECT_EQ(stats.input_bytes, bytes);
}

TEST_F(PackTest, BadLinesNameTheFileAndLine) {
  const std::string good = JsonLine({1, 2, 3}) + JsonLine({4, 5});
  const auto bad = [&](const std::string& line) {
    return WriteInputs(
        {{"g1.jsonl", good}, {"g2.jsonl", good}, {"bad.jsonl", good + line}, {"g3.jsonl", good}});
  };
  const auto expect = [&](const std::string& line, const std::vector<std::string>& words,
                          std::optional<uint64_t> vocab = std::nullopt) {
    PackSpec spec = Spec(bad(line), "bad");
    spec.shard_tokens = 2;  // every rank writes shards before the error: all must go
    spec.vocab_size = vocab;
    spec.force = true;
    std::vector<std::string> all = words;
    all.push_back(dir_ / "bad.jsonl:3: ");
    ExpectPackFails(spec, all);
  };
  expect("{\"tokens\": [1, 2\n", {"invalid JSON"});
  expect("{\"tokens\": [1, -4]}\n", {"\"tokens\"[1] = -4 is negative"});
  expect("{\"tokens\": [1, 2.5]}\n", {"\"tokens\"[1] = 2.5 is not an integer token id"});
  expect("{\"tokens\": [\"7\"]}\n", {"\"tokens\"[0] = \"7\" is not an integer token id"});
  expect("{\"tokens\": [1, 9, 100]}\n", {"\"tokens\"[2] = 100 is not below --vocab-size 100"}, 100);
  expect("{\"text\": [1]}\n", {"no field \"tokens\""});
  expect("{\"tokens\": 5}\n", {"field \"tokens\" is number"});
  expect("[1, 2]\n", {"expected a JSON object, found array"});
  expect("{\"tokens\": \"text\"}\n", {"text (byte-tokenized)", "one pack run takes"});
}

TEST_F(PackTest, TextAndTokenIdsDoNotMix) {
  // At more than one rank the two inputs land on different ranks: the ranks must agree.
  const auto inputs = WriteInputs({{"ids.jsonl", JsonLine({1, 2})}, {"words.txt", "hello"}});
  ExpectPackFails(Spec(inputs, "mixed"), {"ids.jsonl:1", "words.txt", "one pack run takes"});
}

TEST_F(PackTest, RefusesAFullFolderUnlessForced) {
  const auto inputs = WriteInputs({{"x1.txt", "one"}, {"x2.txt", "two"}, {"x3.txt", "three"}});
  PackSpec spec = Spec(inputs, "again");
  spec.shard_tokens = 1;
  PackDataset(comm_, spec);
  EXPECT_THROW(PackDataset(comm_, spec), ConfigError);
  spec.inputs = {inputs[2]};
  spec.force = true;
  const PackStats stats = PackDataset(comm_, spec);
  EXPECT_EQ(stats.shards, 1u);
  const Packed packed = ReadPacked(comm_, dir_ / "again");
  ASSERT_EQ(packed.docs.size(), 1u) << "old shards were not removed";
  EXPECT_EQ(DecodeBytes(packed.docs[0]), "three");
}

TEST_F(PackTest, BadOptionsAndMissingInputsFailEveryRank) {
  PackSpec spec = Spec({dir_ / "missing.txt"}, "missing");
  ExpectCollectiveError<ConfigError>([&] { PackDataset(comm_, spec); },
                                     {"missing.txt does not exist"});
  spec.inputs.clear();
  spec.shard_tokens = 0;
  spec.field = "";
  ExpectCollectiveError<ConfigError>(
      [&] { PackDataset(comm_, spec); },
      {"bad pack options:", "no inputs", "--shard-tokens", "--field"});
}

}  // namespace
}  // namespace stoker
