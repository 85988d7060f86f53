// Document boundaries from known pieces (packing/boundaries.h): one worked example field by field
// (the one docs/loader.md shows), then planned rows of documents longer and shorter than a row
// and empty ones, BOS on and off, against the token-by-token reference
// (common/boundary_reference.h), also after a rescale; fields only when asked for; pieces that do
// not cover a row. ComputeBoundaries never sees a token value, so a document holding the EOS id
// is nothing to it: mpi LoaderTest.BoundaryFieldsFollowThePiecesEvenWhereADocumentHoldsTheEosId
// checks that on real batches.
#include "packing/boundaries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/boundary_reference.h"
#include "common/fake_corpus.h"
#include "state/rescale.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::ConfigFor;
using testing::FakeCorpus;

constexpr BoundaryFields kAll = BoundaryFields::All();

// Two rows of seq_len 10 (11 tokens), BOS on; framed positions in brackets, | where a row ends:
//   row 0: doc 7 [4 5 6=EOS] doc 2 [0=BOS 1 2 3 4=EOS] doc 9 [0=BOS 1 2 |
//   row 1: doc 9 [3 4 5 6=EOS] doc 4 [0=BOS 1 2 3 4 5=EOS] doc 5 [0=BOS |
// The last token of a row is a label only: doc 5 starts there, so it has no input in row 1.
std::vector<DocPiece> WorkedExample() {
  return {{.doc = 7, .first = 4, .count = 3, .row = 0, .row_offset = 0},
          {.doc = 2, .first = 0, .count = 5, .row = 0, .row_offset = 3},
          {.doc = 9, .first = 0, .count = 3, .row = 0, .row_offset = 8},
          {.doc = 9, .first = 3, .count = 4, .row = 1, .row_offset = 0},
          {.doc = 4, .first = 0, .count = 6, .row = 1, .row_offset = 4},
          {.doc = 5, .first = 0, .count = 1, .row = 1, .row_offset = 10}};
}

// `rows` rows of a planner: their segments, pieces and token owners.
struct Planned {
  std::vector<std::vector<Segment>> rows;
  std::vector<DocPiece> pieces;
  std::vector<testing::RowOwners> owners;
};
Planned Plan(RowPlanner& planner, uint32_t rows) {
  Planned planned;
  planned.rows.resize(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    planner.NextRow(&planned.rows[r]);
    AppendPieces(planned.rows[r], r, &planned.pieces);
    planned.owners.push_back(testing::OwnersOf(planned.rows[r]));
  }
  return planned;
}

// Every field of `planned` in both position modes is the token-by-token reference's.
void ExpectReferenceInBothModes(const Planned& planned, uint64_t row_tokens) {
  for (const PositionIds positions : {PositionIds::kRestartEachRow, PositionIds::kContinue}) {
    const BoundaryFields fields = BoundaryFields::All(positions);
    testing::ExpectFields(
        ComputeBoundaries(planned.pieces, planned.rows.size(), row_tokens, fields),
        testing::ReferenceBoundaries(planned.owners, positions), fields);
  }
}

TEST(Boundaries, WorkedExampleFieldByField) {
  const Boundaries b = ComputeBoundaries(WorkedExample(), 2, 11, kAll);
  EXPECT_EQ(b.position_ids, (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 3, 4, 0, 1,  //
                                                  0, 1, 2, 3, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(b.segment_ids, (std::vector<int32_t>{1, 1, 1, 2, 2, 2, 2, 2, 3, 3,  //
                                                 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(b.cu_seqlens, (std::vector<int32_t>{0, 3, 8, 10, 14, 20}));
  EXPECT_EQ(b.max_seqlen, 6);
  EXPECT_EQ(b.loss_mask, (std::vector<float>{1, 1, 0, 1, 1, 1, 1, 0, 1, 1,  //
                                             1, 1, 1, 0, 1, 1, 1, 1, 1, 0}));

  EXPECT_EQ(ComputeBoundaries(WorkedExample(), 2, 11, BoundaryFields::All(PositionIds::kContinue))
                .position_ids,
            (std::vector<int64_t>{4, 5, 6, 0, 1, 2, 3, 4, 0, 1,  //
                                  3, 4, 5, 6, 0, 1, 2, 3, 4, 5}));
}

TEST(Boundaries, OnlyTheFieldsAskedFor) {
  const Boundaries all = ComputeBoundaries(WorkedExample(), 2, 11, kAll);
  for (const BoundaryFields fields :
       {BoundaryFields{}, BoundaryFields{.position_ids = true}, BoundaryFields{.cu_seqlens = true},
        BoundaryFields{.segment_ids = true}, BoundaryFields{.loss_mask = true}}) {
    testing::ExpectFields(ComputeBoundaries(WorkedExample(), 2, 11, fields), all, fields);
  }
}

// Rows of 17 tokens from documents of 1 to 60 tokens (mean 30) and empty ones, over many rows
// of several worlds' ranks, with BOS and without, every field in both position modes.
TEST(Boundaries, PlannedRowsMatchTheTokenByTokenReference) {
  const FakeCorpus corpus = FakeCorpus::Make({400, 150}, 9, 30);
  const std::vector<double> weights = {2, 1};
  constexpr uint64_t kRow = 17, kRows = 5;
  for (const bool bos : {false, true}) {
    for (const uint64_t world : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << "BOS " << bos << ", world " << world);
      PlannerConfig config = ConfigFor(corpus, weights, 12, world, world - 1, kRow);
      config.bos = bos;
      RowPlanner planner(config, InitialRankState(2, 12, world, world - 1), corpus.Locator());
      uint64_t longer = 0, starts = 0;
      for (int batch = 0; batch < 60; ++batch) {
        const Planned planned = Plan(planner, kRows);
        for (const auto& row : planned.rows) {
          for (const Segment& s : row) {
            ASSERT_GT(corpus.lengths[s.dataset][s.doc], 0u) << "a piece of an empty document";
            longer += s.count == kRow ? 1 : 0;
            starts += s.first == 0 && &s != &row.front() ? 1 : 0;
          }
        }
        ExpectReferenceInBothModes(planned, kRow);
      }
      EXPECT_GT(longer, 10u) << "documents filling whole rows";
      EXPECT_GT(starts, 100u) << "documents starting within rows";
    }
  }
}

TEST(Boundaries, PiecesThatDoNotCoverTheRowsAreRefused) {
  std::vector<DocPiece> gap = WorkedExample();
  gap[1].row_offset = 4;
  EXPECT_THROW(ComputeBoundaries(gap, 2, 11, kAll), InternalError);
  std::vector<DocPiece> short_row = WorkedExample();
  short_row.pop_back();
  EXPECT_THROW(ComputeBoundaries(short_row, 2, 11, kAll), InternalError);
  EXPECT_THROW(ComputeBoundaries(WorkedExample(), 3, 11, kAll), InternalError);
  std::vector<DocPiece> too_long = WorkedExample();
  too_long[2].count = 4;  // beyond row 0's end
  EXPECT_THROW(ComputeBoundaries(too_long, 2, 11, kAll), InternalError);
}

// After a resume on another number of ranks a rank may hold several documents other ranks began
// (state/rescale.h): it delivers their rests one after another, so pieces that go on with a
// document also begin within rows. Each is a sequence of its own.
TEST(Boundaries, RestsOfDocumentsWithinRowsAfterARescale) {
  const FakeCorpus corpus = FakeCorpus::Make({300, 200}, 12, 40);
  const std::vector<double> weights = {1, 1};
  constexpr uint64_t kPlannedShards = 12, kRow = 23, kRows = 4;
  std::vector<RescalePart> parts;
  for (uint64_t rank = 0; rank < 3; ++rank) {
    RowPlanner planner(ConfigFor(corpus, weights, kPlannedShards, 3, rank, kRow),
                       InitialRankState(2, kPlannedShards, 3, rank), corpus.Locator());
    std::vector<Segment> row;
    for (uint64_t r = 0; r < 7 + rank; ++r) planner.NextRow(&row);
    for (RescalePart& part : SplitState(planner.state(), rank, kPlannedShards, 1)) {
      parts.push_back(std::move(part));
    }
  }
  const RankState state = AssembleState(parts, 2, kPlannedShards, 1, 0);
  ASSERT_GE(state.lane.open.size(), 2u) << "documents three ranks left unfinished";
  RowPlanner planner(ConfigFor(corpus, weights, kPlannedShards, 1, 0, kRow), state,
                     corpus.Locator());
  const Planned planned = Plan(planner, kRows);
  EXPECT_TRUE(std::any_of(planned.pieces.begin(), planned.pieces.end(), [](const DocPiece& p) {
    return p.row_offset > 0 && p.first > 0;
  })) << "no rest of a document within a row";
  ExpectReferenceInBothModes(planned, kRow);
}

}  // namespace
}  // namespace stoker
