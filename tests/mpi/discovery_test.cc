// Collective corpus discovery (DiscoverCorpus): every rank gets the same table at every world size,
// with exactly the content the files hold; the fingerprint depends on the content, not the place
// or the number of ranks; a bad file or a missing root makes every rank throw the same error
// together; hidden folders, stray files and non-.h5 files are not shards. Also FailTogether's
// promise that a file-system error on one rank reaches every rank as an IoError.
//
// Registered at 1, 2 and 4 ranks. EXPECT (not ASSERT) around collectives, so that a failure on one
// rank cannot leave the others waiting.
#include "shard/discovery.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "common/test_support.h"
#include "mpi/comm.h"
#include "order/random.h"
#include "shard/manifest.h"
#include "stoker/corpus.h"
#include "stoker/error.h"
#include "tokens/content_checksum.h"
#include "tokens/token_type.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using stoker::testing::ExpectCollectiveError;
using stoker::testing::ExpectMentions;
using stoker::testing::OnRankZero;
using stoker::testing::SharedTempDir;
using stoker::testing::WriteTestShard;
using stoker::testing::WriteText;

struct FileSpec {
  std::string rel;
  TokenType type;
  ShardAttributes attributes;
  std::vector<std::vector<uint64_t>> docs;
};

// 3 datasets, 23 shards, listed in the order discovery must give: datasets by name, shards by
// relative path compared as bytes ('-' < '.' < '/' < digits), nested folders included.
std::vector<FileSpec> CorpusSpec() {
  const ShardAttributes bpe{.vocab_size = 100000, .eos_id = 2, .bos_id = 1, .tokenizer = "bpe"};
  const ShardAttributes plain;
  std::vector<FileSpec> files = {
      {"books/only.h5", TokenType::kUint32, bpe, {}},  // a dataset of one shard
      {"code/a-b.h5", TokenType::kInt64, plain, {}},
      {"code/a/x/part-0.h5", TokenType::kUint16, {.vocab_size = 65536}, {}},
      {"code/a/x/part-1.h5", TokenType::kInt32, plain, {}},
      {"code/a/x/part-10.h5", TokenType::kUint16, plain, {}},
      {"code/a/y.h5", TokenType::kUint8, {.eos_id = 0}, {}},
      {"code/b/part-0.h5", TokenType::kUint64, plain, {}},
      {"code/b/part-1.h5", TokenType::kInt16, plain, {}},
      {"code/z.h5", TokenType::kInt8, {.tokenizer = "chars"}, {}},
      {"web/2023-extra.h5", TokenType::kUint32, plain, {}},
  };
  for (int i = 0; i < 7; ++i) {
    files.push_back({fmt::format("web/2023/part-{:02}.h5", i), TokenType::kUint16, bpe, {}});
  }
  for (int i = 0; i < 5; ++i) {
    files.push_back({fmt::format("web/2024/part-{:02}.h5", i), TokenType::kUint32, bpe, {}});
  }
  files.push_back({"web/top.h5", TokenType::kUint16, plain, {}});
  for (size_t f = 0; f < files.size(); ++f) {
    CounterRng rng(DeriveKey(7, "discovery-test", f));
    const uint64_t n_docs = 1 + rng.NextBelow(6);
    for (uint64_t d = 0; d < n_docs; ++d) {
      std::vector<uint64_t> doc(rng.NextBelow(60));
      for (auto& id : doc) id = rng.NextBelow(100);
      files[f].docs.push_back(std::move(doc));
    }
  }
  files[0].docs.insert(files[0].docs.begin() + 1, std::vector<uint64_t>{});  // an empty document
  files[12].docs.push_back({});
  return files;
}

void WriteCorpus(const std::string& root, const std::vector<FileSpec>& files) {
  for (size_t i = files.size(); i-- > 0;) {  // reverse order: creation order must not matter
    WriteTestShard(root + "/" + files[i].rel, files[i].docs, files[i].type, files[i].attributes);
  }
}

// Every field of the table, readable, for comparing across ranks.
std::string Serialize(const CorpusTable& table) {
  std::string out = fmt::format("root={} fingerprint={}\n", table.root, table.fingerprint);
  for (const auto& d : table.datasets) {
    out += fmt::format("dataset {} first={} n={} docs={} tokens={}\n", d.name, d.first_shard,
                       d.num_shards, d.docs, d.tokens);
  }
  for (const auto& s : table.shards) {
    out += fmt::format(
        "shard {} ds={} bytes={} docs={} tokens={} type={} signed={} vocab={} eos={} bos={} "
        "tokenizer={} checksum={}\n",
        s.path, s.dataset, s.file_bytes, s.docs, s.tokens, TokenTypeName(s.token_type),
        s.offsets_signed, s.vocabulary->vocab_size.value_or(-1), s.vocabulary->eos_id.value_or(-1),
        s.vocabulary->bos_id.value_or(-1), s.vocabulary->tokenizer.value_or("-"),
        s.checksum ? ChecksumText(*s.checksum) : "-");
  }
  return out;
}

// Where discovery found each shard's arrays, readable, for comparing across ranks.
std::string Serialize(const std::vector<ArrayLocations>& arrays) {
  std::string out;
  for (const ArrayLocations& a : arrays) {
    out += fmt::format("tok@{}:{} off@{}:{}\n", a.tokens.direct, a.tokens.byte_offset,
                       a.offsets.direct, a.offsets.byte_offset);
  }
  return out;
}

// Collective: the same serialized table on every rank.
void ExpectSameOnEveryRank(const mpi::Comm& comm, const std::string& text) {
  const std::vector<std::string> all = comm.AllGather(text);
  for (int r = 1; r < comm.size(); ++r) {
    EXPECT_EQ(all[r], all[0]) << "rank " << r << " differs from rank 0";
  }
}

// The table the spec describes.
CorpusTable ExpectedTable(const std::string& root, const std::vector<FileSpec>& files) {
  CorpusTable table{.root = root};
  for (size_t i = 0; i < files.size(); ++i) {
    const FileSpec& f = files[i];
    const std::string name = f.rel.substr(0, f.rel.find('/'));
    if (table.datasets.empty() || table.datasets.back().name != name) {
      table.datasets.push_back({.name = name, .first_shard = static_cast<uint32_t>(i)});
    }
    DatasetInfo& d = table.datasets.back();
    ShardInfo s{.path = f.rel, .dataset = static_cast<uint32_t>(table.datasets.size() - 1)};
    s.file_bytes = fs::file_size(root + "/" + f.rel);
    s.docs = f.docs.size();
    for (const auto& doc : f.docs) s.tokens += doc.size();
    s.token_type = f.type;
    s.vocabulary = std::make_shared<const ShardVocabulary>(
        ShardVocabulary{.vocab_size = f.attributes.vocab_size,
                        .eos_id = f.attributes.eos_id,
                        .bos_id = f.attributes.bos_id,
                        .tokenizer = f.attributes.tokenizer});
    s.checksum = testing::ChecksumOf(f.docs, f.type);
    ++d.num_shards;
    d.docs += s.docs;
    d.tokens += s.tokens;
    table.shards.push_back(std::move(s));
  }
  return table;
}

// Reads every shard of `table` back (located at `arrays`) and compares it with the spec.
void ExpectTokensReadBack(const CorpusTable& table, const std::vector<ArrayLocations>& arrays,
                          const std::vector<FileSpec>& files) {
  ASSERT_EQ(arrays.size(), table.shards.size());
  for (size_t i = 0; i < std::min(files.size(), table.shards.size()); ++i) {
    const ShardInfo& s = table.shards[i];
    EXPECT_TRUE(arrays[i].offsets.direct) << s.path;
    EXPECT_EQ(arrays[i].tokens.direct, s.tokens > 0) << s.path;
    EXPECT_EQ(testing::ReadShardDocs(table.root, s), files[i].docs) << s.path;
  }
}

class DiscoveryTest : public ::testing::Test {
 protected:
  mpi::Comm comm_{MPI_COMM_WORLD};
  SharedTempDir dir_{MPI_COMM_WORLD};
};

TEST_F(DiscoveryTest, SameTableOnEveryRankWithTheExpectedContent) {
  const std::vector<FileSpec> files = CorpusSpec();
  const std::string root = dir_ / "corpus";
  OnRankZero(comm_, [&] { WriteCorpus(root, files); });

  std::vector<ArrayLocations> arrays;
  const CorpusTable table = DiscoverCorpus(comm_, root, &arrays);
  ExpectSameOnEveryRank(comm_, Serialize(table) + Serialize(arrays));

  ASSERT_EQ(table.shards.size(), files.size());  // no collective below
  for (size_t i = 0; i < files.size(); ++i) EXPECT_EQ(table.shards[i].path, files[i].rel);
  EXPECT_EQ(table.datasets.size(), 3u);
  CorpusTable expected = ExpectedTable(root, files);
  const std::vector<DatasetInfo> expected_datasets = expected.datasets;
  FinishTable(&expected);  // the fingerprint of the expected content
  EXPECT_EQ(expected.datasets, expected_datasets);
  EXPECT_EQ(Serialize(table), Serialize(expected));
  EXPECT_EQ(table, expected);
  EXPECT_EQ(table.datasets[0].name, "books");
  EXPECT_EQ(table.datasets[0].num_shards, 1u);
  EXPECT_EQ(table.datasets[1].first_shard, 1u);
  EXPECT_EQ(table.datasets[2].first_shard, 9u);
  EXPECT_EQ(table.datasets[2].num_shards, 14u);
  uint64_t docs = 0, tokens = 0;
  for (const auto& f : files) {
    docs += f.docs.size();
    for (const auto& doc : f.docs) tokens += doc.size();
  }
  EXPECT_EQ(table.total_docs(), docs);
  EXPECT_EQ(table.total_tokens(), tokens);
  EXPECT_EQ(table.fingerprint.size(), 32u);
  ExpectTokensReadBack(table, arrays, files);
}

// A manifest written at one world size, in blocks of a shard or two (read one by one), gives at
// another the table and array locations the files give; a copy of the corpus that did not keep
// times (its shards described again) too. Its table, like discovery's from the files, holds a
// vocabulary once for the shards that share it.
TEST_F(DiscoveryTest, AManifestGivesWhatTheFilesGive) {
  const std::vector<FileSpec> files = CorpusSpec();
  const std::string root = dir_ / "corpus";
  OnRankZero(comm_, [&] { WriteCorpus(root, files); });
  std::vector<ArrayLocations> scanned, from_manifest;
  const CorpusTable plain = DiscoverCorpus(comm_, root, &scanned);
  OnRankZero(comm_, [&] {
    EXPECT_EQ(WriteManifest(mpi::Comm(MPI_COMM_SELF), root, /*block_bytes=*/64), plain);
  });
  EXPECT_TRUE(fs::exists(root + "/" + kManifestName));
  const CorpusTable table = DiscoverCorpus(comm_, root, &from_manifest);
  EXPECT_EQ(table, plain);
  EXPECT_EQ(from_manifest, scanned);
  for (const CorpusTable* t : {&plain, &table}) {
    std::set<const ShardVocabulary*> held;
    for (const ShardInfo& shard : t->shards) held.insert(shard.vocabulary.get());
    // bpe (books/only.h5, web/2023/ and web/2024/), one each of code/a/x/part-0.h5,
    // code/a/y.h5 and code/z.h5, and none recorded (every other shard).
    EXPECT_EQ(held.size(), 5u);
  }
  const std::string copy = dir_ / "copy";
  OnRankZero(comm_, [&] { fs::copy(root, copy, fs::copy_options::recursive); });
  const CorpusTable copied = DiscoverCorpus(comm_, copy);
  EXPECT_EQ(copied.shards, plain.shards);
  EXPECT_EQ(copied.fingerprint, plain.fingerprint);
}

TEST_F(DiscoveryTest, FingerprintDependsOnContentNotOnPlaceOrWorldSize) {
  const std::vector<FileSpec> files = CorpusSpec();
  const std::string root = dir_ / "corpus";
  const std::string copy = dir_ / "elsewhere/copy";
  OnRankZero(comm_, [&] {
    WriteCorpus(root, files);
    fs::create_directories(fs::path(copy).parent_path());
    fs::copy(root, copy, fs::copy_options::recursive);
  });
  const CorpusTable world = DiscoverCorpus(comm_, root);
  // The same corpus discovered by this rank alone: what a run at one rank computes.
  const CorpusTable alone = DiscoverCorpus(mpi::Comm(MPI_COMM_SELF), root);
  EXPECT_EQ(world, alone);
  EXPECT_EQ(world.fingerprint, alone.fingerprint);

  const CorpusTable copied = DiscoverCorpus(comm_, copy);
  EXPECT_EQ(copied.fingerprint, world.fingerprint);
  EXPECT_EQ(copied.root, copy);
  EXPECT_EQ(copied.shards, world.shards);
  EXPECT_EQ(copied.datasets, world.datasets);

  // One more token in one shard of the copy: another corpus.
  OnRankZero(comm_, [&] {
    std::vector<std::vector<uint64_t>> docs = files[5].docs;
    docs.back().push_back(3);
    fs::remove(copy + "/" + files[5].rel);
    WriteTestShard(copy + "/" + files[5].rel, docs, files[5].type, files[5].attributes);
  });
  const CorpusTable changed = DiscoverCorpus(comm_, copy);
  ExpectSameOnEveryRank(comm_, Serialize(changed));
  EXPECT_NE(changed.fingerprint, world.fingerprint);
  EXPECT_EQ(changed.shards[5].tokens, world.shards[5].tokens + 1);
  // A renamed shard is another corpus too, even with the same bytes.
  OnRankZero(comm_, [&] { fs::rename(copy + "/web/top.h5", copy + "/web/top2.h5"); });
  const CorpusTable renamed = DiscoverCorpus(comm_, copy);
  EXPECT_NE(renamed.fingerprint, changed.fingerprint);
}

TEST_F(DiscoveryTest, BadFileFailsOnEveryRankTogether) {
  // d/f-1.h5 is file 1: described by rank 1 at 2 and 4 ranks, never by rank 0 there.
  // d/f-3.h5 (file 3: rank 1 at 2 ranks, rank 3 at 4) lacks /doc_offsets.
  const std::string root = dir_ / "bad";
  OnRankZero(comm_, [&] {
    for (int i = 0; i < 8; ++i) {
      if (i == 1 || i == 3) continue;
      WriteTestShard(fmt::format("{}/d/f-{}.h5", root, i), {{1, 2, 3}});
    }
    WriteText(root + "/d/f-1.h5", "this is not an HDF5 file\n");
    stoker::testing::RawShard raw;
    raw.tokens = stoker::testing::RawArray{.values = {1, 2}};
    stoker::testing::WriteRawShard(root + "/d/f-3.h5", raw);
  });
  const std::string message = ExpectCollectiveError<DataError>(
      [&] { DiscoverCorpus(comm_, root); },
      {"d/f-1.h5: not an HDF5 file", "d/f-3.h5: /doc_offsets: missing dataset", root});
  ExpectSameOnEveryRank(comm_, message);
}

TEST_F(DiscoveryTest, MissingRootFailsOnEveryRankTogether) {
  const std::string missing = dir_ / "no-such-corpus";
  ExpectSameOnEveryRank(comm_, ExpectCollectiveError<ConfigError>(
                                   [&] { DiscoverCorpus(comm_, missing); }, {missing}));

  OnRankZero(comm_, [&] { WriteText(dir_ / "a-file", "x"); });
  ExpectSameOnEveryRank(
      comm_, ExpectCollectiveError<ConfigError>([&] { DiscoverCorpus(comm_, dir_ / "a-file"); },
                                                {dir_ / "a-file", "is not a folder"}));
}

TEST_F(DiscoveryTest, DatasetWithoutShardsFailsTogether) {
  const std::string root = dir_ / "corpus";
  OnRankZero(comm_, [&] {
    WriteTestShard(root + "/full/a.h5", {{1}});
    WriteText(root + "/empty/readme.txt", "no shards here");
  });
  ExpectSameOnEveryRank(comm_,
                        ExpectCollectiveError<DataError>([&] { DiscoverCorpus(comm_, root); },
                                                         {"empty: dataset folder has no shards"}));
}

TEST_F(DiscoveryTest, HiddenFoldersStrayAndNonShardFilesAreIgnored) {
  const std::string root = dir_ / "corpus";
  OnRankZero(comm_, [&] {
    WriteTestShard(root + "/ds/a.h5", {{1, 2}});
    WriteTestShard(root + "/ds/sub/b.h5", {{3}});
    // None of these is a shard; each would make discovery fail if it were taken for one.
    WriteText(root + "/.cache/ds2/junk.h5", "not HDF5");  // a hidden folder is no dataset
    WriteText(root + "/stray.h5", "not HDF5");            // files in the root are not shards
    WriteText(root + "/README.md", "a corpus");
    WriteText(root + "/ds/notes.txt", "notes");
    WriteText(root + "/ds/a.h5.tmp", "half-written");
    WriteText(root + "/ds/sub/c.hdf5", "another extension");
  });
  const CorpusTable table = DiscoverCorpus(comm_, root);
  ExpectSameOnEveryRank(comm_, Serialize(table));
  ASSERT_EQ(table.datasets.size(), 1u);
  EXPECT_EQ(table.datasets[0].name, "ds");
  ASSERT_EQ(table.shards.size(), 2u);
  EXPECT_EQ(table.shards[0].path, "ds/a.h5");
  EXPECT_EQ(table.shards[1].path, "ds/sub/b.h5");
}

TEST_F(DiscoveryTest, HiddenFoldersInsideADatasetAreIgnored) {
  const std::string root = dir_ / "corpus";
  OnRankZero(comm_, [&] {
    WriteTestShard(root + "/ds/a.h5", {{1, 2}});
    WriteText(root + "/ds/.cache/junk.h5", "not HDF5");
    WriteText(root + "/ds/sub/.partial/x.h5", "not HDF5");
  });
  EXPECT_NO_THROW(DiscoverCorpus(comm_, root));
}

// Every entry under a dataset folder is a shard, a folder to descend, or a problem naming its
// path: an unmounted file system behind a link, a FIFO, a folder named like a shard, a loop or a
// shard reached twice never leave a run training on a subset (or a shard twice) in silence.
TEST_F(DiscoveryTest, EveryEntryIsAShardAFolderOrAProblemNamingIt) {
  const std::string root = dir_ / "corpus";
  OnRankZero(comm_, [&] {
    WriteTestShard(root + "/web/a.h5", {{1, 2}});
    WriteTestShard(root + "/code/b.h5", {{3}});
    fs::create_directory_symlink("/nonexistent/project/books", root + "/books");
    fs::create_symlink("/nonexistent/project/web/c.h5", root + "/web/c.h5");
    STOKER_CHECK(::mkfifo((root + "/web/fifo.h5").c_str(), 0644) == 0, IoError, "mkfifo");
    fs::create_directories(root + "/web/folder.h5");
    fs::create_symlink("/dev/null", root + "/web/null.h5");
    fs::create_directories(root + "/web/sub");
    fs::create_directory_symlink("..", root + "/web/sub/up");
    fs::create_symlink("../a.h5", root + "/web/sub/again.h5");
    fs::create_symlink("loop-b", root + "/code/loop-a");
    fs::create_symlink("loop-a", root + "/code/loop-b");
    WriteText(root + "/web/README", "a note, ignored");
  });
  const std::string message = ExpectCollectiveError<DataError>(
      [&] { DiscoverCorpus(comm_, root); },
      {"books: a symbolic link to /nonexistent/project/books, which does not exist",
       "web/c.h5: a symbolic link to /nonexistent/project/web/c.h5, which does not exist",
       "web/fifo.h5: is a FIFO", "web/null.h5: is a character device",
       "web/folder.h5: is named like a shard (*.h5) but is a folder",
       "web/sub/up: leads back to a folder that contains it",
       "web/sub/again.h5: is the same file as web/a.h5", "code/loop-a: a loop of symbolic links",
       "code/loop-b: a loop of symbolic links"});
  ExpectSameOnEveryRank(comm_, message);
  EXPECT_EQ(message.find("README"), std::string::npos) << message;

  // Without the bad entries, links that do lead somewhere are followed: a dataset folder and a
  // shard kept elsewhere.
  OnRankZero(comm_, [&] {
    for (const char* bad : {"books", "web/c.h5", "web/fifo.h5", "web/null.h5", "web/folder.h5",
                            "web/sub/up", "web/sub/again.h5", "code/loop-a", "code/loop-b"}) {
      fs::remove(root + "/" + bad);
    }
    WriteTestShard(dir_ / "elsewhere/books/c.h5", {{4, 5}});
    WriteTestShard(dir_ / "elsewhere/d.h5", {{6}});
    fs::create_directory_symlink(dir_ / "elsewhere/books", root + "/books");
    fs::create_symlink(dir_ / "elsewhere/d.h5", root + "/web/sub/d.h5");
  });
  const CorpusTable table = DiscoverCorpus(comm_, root);
  ExpectSameOnEveryRank(comm_, Serialize(table));
  std::vector<std::string> paths;
  for (const ShardInfo& shard : table.shards) paths.push_back(shard.path);
  EXPECT_EQ(paths,
            (std::vector<std::string>{"books/c.h5", "code/b.h5", "web/a.h5", "web/sub/d.h5"}));
}

// A folder that cannot be listed (std::filesystem throws) on the last rank alone: every rank
// throws the same IoError, marked collective, instead of a plain Error or a hang.
TEST_F(DiscoveryTest, FileSystemErrorOnOneRankIsIoErrorOnEveryRank) {
  const std::string folder = dir_ / "unlistable";
  const std::string message = ExpectCollectiveError<IoError>(
      [&] {
        mpi::FailTogether(comm_, [&] {
          if (comm_.rank() != comm_.size() - 1) return;
          throw fs::filesystem_error("cannot list", folder,
                                     std::make_error_code(std::errc::permission_denied));
        });
      },
      {"cannot list", folder});
  ExpectSameOnEveryRank(comm_, message);
}

}  // namespace
}  // namespace stoker
