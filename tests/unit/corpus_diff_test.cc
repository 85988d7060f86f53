// The difference between a checkpoint's corpus record and the corpus of a resume: files added,
// removed and changed (each field the fingerprint covers), at most `shown` of each kind named,
// and a record identical to the corpus said to differ in its fingerprint only. Content checksums:
// other content at the same counts is named with both; a record without checksums names none.
#include "state/corpus_diff.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tokens/content_checksum.h"

namespace stoker {
namespace {

CorpusRecord Saved() {
  return {.fingerprint = "a",
          .shards = {{"code/part-00003.h5", 9000, 1200, 40000, TokenType::kUint16},
                     {"code/part-00004.h5", 9000, 1200, 40000, TokenType::kUint16},
                     {"web/part-00000.h5", 5000, 100, 2000, TokenType::kUint16},
                     {"web/part-00001.h5", 5000, 100, 2000, TokenType::kUint16}}};
}

TEST(CorpusDiff, NamesTheFilesAddedRemovedAndChanged) {
  CorpusRecord now = Saved();
  now.fingerprint = "b";
  now.shards[0].docs = 1300;                      // code/part-00003.h5
  now.shards[1].token_type = TokenType::kUint32;  // code/part-00004.h5
  now.shards[1].file_bytes = 17000;
  now.shards.erase(now.shards.begin() + 2);  // web/part-00000.h5
  now.shards.push_back({"web/part-00012.h5", 5000, 100, 2000, TokenType::kUint16});
  const CorpusDiff diff = DiffCorpus(Saved(), now);
  EXPECT_EQ(diff.added, std::vector<std::string>{"web/part-00012.h5"});
  EXPECT_EQ(diff.removed, std::vector<std::string>{"web/part-00000.h5"});
  EXPECT_EQ(diff.changed,
            (std::vector<std::string>{
                "code/part-00003.h5: 1200 -> 1300 documents",
                "code/part-00004.h5: 9000 -> 17000 bytes, token type uint16 -> uint32"}));
  EXPECT_EQ(DescribeCorpusDiff(diff),
            "corpus differs from the checkpoint's: 1 file added (web/part-00012.h5), 1 removed "
            "(web/part-00000.h5), 2 changed (code/part-00003.h5: 1200 -> 1300 documents; "
            "code/part-00004.h5: 9000 -> 17000 bytes, token type uint16 -> uint32)");
}

TEST(CorpusDiff, EveryFieldTheFingerprintCoversCounts) {
  CorpusRecord now = Saved();
  now.shards[3].tokens = 2001;
  EXPECT_EQ(DiffCorpus(Saved(), now).changed,
            std::vector<std::string>{"web/part-00001.h5: 2000 -> 2001 tokens"});
  EXPECT_EQ(DescribeCorpusDiff(DiffCorpus(Saved(), now)),
            "corpus differs from the checkpoint's: 0 files added, 0 removed, 1 changed "
            "(web/part-00001.h5: 2000 -> 2001 tokens)");
}

TEST(CorpusDiff, OtherContentAtTheSameCountsIsNamedByItsChecksums) {
  CorpusRecord saved = Saved();
  for (RecordedShard& s : saved.shards) s.checksum = 7;
  CorpusRecord now = saved;
  now.shards[0].checksum = 8;  // other tokens, the same counts
  now.shards[1].checksum = 9;  // ... and a file of another size
  now.shards[1].file_bytes = 9100;
  now.shards[2].checksum = std::nullopt;  // the checksum gone
  now.shards[3].docs = 101;               // other counts: the checksum is not repeated
  now.shards[3].checksum = 10;
  EXPECT_EQ(
      DiffCorpus(saved, now).changed,
      (std::vector<std::string>{"code/part-00003.h5: other content (checksum " + ChecksumText(7) +
                                    " -> " + ChecksumText(8) + ")",
                                "code/part-00004.h5: 9000 -> 9100 bytes, other content (checksum " +
                                    ChecksumText(7) + " -> " + ChecksumText(9) + ")",
                                "web/part-00000.h5: checksum " + ChecksumText(7) + " -> none",
                                "web/part-00001.h5: 100 -> 101 documents"}));
  // A record saved without checksums says nothing of the content.
  EXPECT_TRUE(DiffCorpus(Saved(), saved).empty());
}

TEST(CorpusDiff, OrderOfTheTablesDoesNotMatter) {
  CorpusRecord now = Saved();
  std::swap(now.shards[0], now.shards[3]);  // a table is in dataset order, not path order
  EXPECT_TRUE(DiffCorpus(Saved(), now).empty());
}

TEST(CorpusDiff, NamesAtMostShownFilesOfEachKind) {
  CorpusRecord now = Saved();
  for (int i = 0; i < 25; ++i) {
    now.shards.push_back({fmt::format("new/part-{:05}.h5", i), 1, 1, 1, TokenType::kUint16});
  }
  const CorpusDiff diff = DiffCorpus(Saved(), now);
  ASSERT_EQ(diff.added.size(), 25u);
  const std::string line = DescribeCorpusDiff(diff);
  EXPECT_NE(line.find("25 files added (new/part-00000.h5, "), std::string::npos) << line;
  EXPECT_NE(line.find("new/part-00019.h5, ... and 5 more), 0 removed, 0 changed"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("new/part-00020.h5"), std::string::npos) << line;
  EXPECT_NE(DescribeCorpusDiff(diff, 2).find("(new/part-00000.h5, new/part-00001.h5, ... and 23 "
                                             "more)"),
            std::string::npos);
  const CorpusDiff removed = DiffCorpus(now, Saved());
  EXPECT_EQ(removed.removed.size(), 25u);
  EXPECT_NE(DescribeCorpusDiff(removed, 20).find("25 removed ("), std::string::npos);
}

TEST(CorpusDiff, IdenticalTablesSaySoAlthoughTheFingerprintsDiffer) {
  CorpusRecord now = Saved();
  now.fingerprint = "b";
  const CorpusDiff diff = DiffCorpus(Saved(), now);
  EXPECT_TRUE(diff.empty());
  EXPECT_NE(DescribeCorpusDiff(diff).find("in its fingerprint only: the same files"),
            std::string::npos)
      << DescribeCorpusDiff(diff);
}

}  // namespace
}  // namespace stoker
