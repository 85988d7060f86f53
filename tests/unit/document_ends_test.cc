// DocumentEnds: a piece followed, within its step, by another document's piece must end its
// document; one that stops before is named, and an off-by-one at every end blames the framing.
#include "audit/document_ends.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

// One dataset "d" of documents 0..3, framed lengths 10, 20, 30, 40 (tokens EOS, or BOS tokens
// EOS when `bos`).
AuditCorpus FourDocuments(bool bos) {
  return {.names = {"d"},
          .docs = {4},
          .nonempty = {4},
          .bos = bos,
          .named_docs = {{0, 1, 2, 3}},
          .framed_lengths = {{10, 20, 30, 40}}};
}

TraceRecord Piece(uint64_t step, uint64_t doc, uint64_t first, uint64_t count) {
  return {.step = step, .dataset = 0, .doc = doc, .epoch = 0, .first = first, .count = count};
}

TraceRun OneRank(std::vector<TraceRecord> records) {
  return {.start_step = 0, .world = 1, .ranks = {std::move(records)}};
}

TEST(DocumentEnds, WholeDocumentsAndRowCutsAreClean) {
  const AuditCorpus corpus = FourDocuments(false);
  DocumentEnds ends(corpus);
  // Step 1: documents 0 and 1 whole, then 2 cut by the row's end (the last piece of its step);
  // step 2 goes on with 2 and ends it, then 3.
  ends.Check(OneRank({Piece(1, 0, 0, 10), Piece(1, 1, 0, 20), Piece(1, 2, 0, 5), Piece(2, 2, 5, 25),
                      Piece(2, 3, 0, 40)}),
             0, 2);
  const DocumentEnds::Findings findings = ends.Take();
  EXPECT_FALSE(findings.framing);
  EXPECT_EQ(findings.early_count, 0u);
}

TEST(DocumentEnds, ADocumentCutShortIsNamed) {
  const AuditCorpus corpus = FourDocuments(false);
  DocumentEnds ends(corpus);
  ends.Check(OneRank({Piece(1, 0, 0, 10), Piece(1, 1, 0, 12), Piece(1, 2, 0, 30)}), 0, 1);
  const DocumentEnds::Findings findings = ends.Take();
  ASSERT_EQ(findings.early_count, 1u);
  ASSERT_EQ(findings.early.size(), 1u);
  EXPECT_NE(findings.early[0].find("document 1 epoch 0 stops at framed position 12 of 20"),
            std::string::npos)
      << findings.early[0];
}

TEST(DocumentEnds, StepsOutsideTheRunsShareAreNotChecked) {
  const AuditCorpus corpus = FourDocuments(false);
  DocumentEnds ends(corpus);
  // Document 1 stops early at step 3, which the next run replays (end = 2).
  ends.Check(OneRank({Piece(1, 0, 0, 10), Piece(3, 1, 0, 12), Piece(3, 2, 0, 30)}), 0, 2);
  EXPECT_EQ(ends.Take().early_count, 0u);
}

TEST(DocumentEnds, EveryEndOneShortWithBosBlamesTheFraming) {
  const AuditCorpus corpus = FourDocuments(true);
  DocumentEnds ends(corpus);
  // Recorded without BOS: every document one framed token shorter than the audit expects.
  ends.Check(
      OneRank({Piece(1, 0, 0, 9), Piece(1, 1, 0, 19), Piece(1, 2, 0, 29), Piece(1, 3, 0, 39)}), 0,
      1);
  const DocumentEnds::Findings findings = ends.Take();
  ASSERT_TRUE(findings.framing);
  EXPECT_NE(findings.framing->find("without BOS"), std::string::npos) << *findings.framing;
  EXPECT_TRUE(findings.early.empty());
}

TEST(DocumentEnds, EveryEndOnePastWithoutBosBlamesTheFraming) {
  const AuditCorpus corpus = FourDocuments(false);
  DocumentEnds ends(corpus);
  ends.Check(
      OneRank({Piece(1, 0, 0, 11), Piece(1, 1, 0, 21), Piece(1, 2, 0, 31), Piece(1, 3, 0, 41)}), 0,
      1);
  const DocumentEnds::Findings findings = ends.Take();
  ASSERT_TRUE(findings.framing);
  EXPECT_NE(findings.framing->find("with a BOS"), std::string::npos) << *findings.framing;
}

TEST(DocumentEnds, TwoEndsAreTooFewToBlameTheFraming) {
  const AuditCorpus corpus = FourDocuments(true);
  DocumentEnds ends(corpus);
  ends.Check(OneRank({Piece(1, 0, 0, 9), Piece(1, 1, 0, 19), Piece(1, 2, 0, 30)}), 0, 1);
  const DocumentEnds::Findings findings = ends.Take();
  EXPECT_FALSE(findings.framing);
  EXPECT_EQ(findings.early_count, 2u);
}

}  // namespace
}  // namespace stoker
