// The document boundaries of a batch worked out token by token, as a check of
// packing/boundaries.h's piece-by-piece computation: every row token gets its owner (the document
// and framed position it holds), and the fields follow from comparing neighbouring owners.
// Header-only; pure.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "packing/row_planner.h"
#include "stoker/batch.h"

namespace stoker::testing {

struct TokenOwner {
  uint32_t dataset = 0;
  uint64_t doc = 0;
  uint64_t epoch = 0;
  uint64_t framed = 0;  // position in the framed document ([BOS] tokens EOS)
  bool SameDocument(const TokenOwner& o) const {
    return dataset == o.dataset && doc == o.doc && epoch == o.epoch;
  }
};
using RowOwners = std::vector<TokenOwner>;

// The owners of one planned row's tokens.
inline RowOwners OwnersOf(const std::vector<Segment>& row) {
  RowOwners owners;
  for (const Segment& s : row) {
    for (uint64_t f = s.first; f < s.first + s.count; ++f) {
      owners.push_back({s.dataset, s.doc, s.epoch, f});
    }
  }
  return owners;
}

// The owners of a batch's row tokens, from its pieces; a failure when they do not cover every
// token of every row exactly once.
inline std::vector<RowOwners> OwnersOf(const Batch& batch) {
  std::vector<RowOwners> rows(batch.rows, RowOwners(batch.row_tokens));
  std::vector<std::vector<int>> set(batch.rows, std::vector<int>(batch.row_tokens, 0));
  for (const DocPiece& p : batch.pieces) {
    for (uint64_t i = 0; i < p.count; ++i) {
      if (p.row >= batch.rows || p.row_offset + i >= batch.row_tokens) {
        ADD_FAILURE() << "piece of document " << p.doc << " outside the batch: row " << p.row
                      << ", offset " << p.row_offset + i;
        return rows;
      }
      rows[p.row][p.row_offset + i] = {p.dataset, p.doc, p.epoch, p.first + i};
      ++set[p.row][p.row_offset + i];
    }
  }
  for (uint64_t r = 0; r < batch.rows; ++r) {
    for (uint64_t t = 0; t < batch.row_tokens; ++t) {
      EXPECT_EQ(set[r][t], 1) << "pieces covering row " << r << ", token " << t;
    }
  }
  return rows;
}

// Every field, for the inputs of `rows` (each row's tokens but its last).
inline Boundaries ReferenceBoundaries(const std::vector<RowOwners>& rows, PositionIds positions) {
  Boundaries b;
  int32_t at = 0;
  for (const RowOwners& row : rows) {
    const size_t inputs = row.size() - 1;
    int32_t segment = 0;
    int64_t run_start = 0;  // where the current document's run of the row began
    for (size_t t = 0; t < inputs; ++t) {
      const bool starts = t == 0 || !row[t].SameDocument(row[t - 1]);
      if (starts) {
        ++segment;
        run_start = static_cast<int64_t>(t);
        b.cu_seqlens.push_back(at + static_cast<int32_t>(t));
      }
      b.position_ids.push_back(positions == PositionIds::kContinue
                                   ? static_cast<int64_t>(row[t].framed)
                                   : static_cast<int64_t>(t) - run_start);
      b.segment_ids.push_back(segment);
      b.loss_mask.push_back(row[t].SameDocument(row[t + 1]) ? 1.0f : 0.0f);
    }
    at += static_cast<int32_t>(inputs);
  }
  b.cu_seqlens.push_back(at);
  for (size_t i = 1; i < b.cu_seqlens.size(); ++i) {
    b.max_seqlen = std::max(b.max_seqlen, b.cu_seqlens[i] - b.cu_seqlens[i - 1]);
  }
  return b;
}

// `computed` has the fields `fields` asks for, equal to `expected`'s, and no others.
inline void ExpectFields(const Boundaries& computed, const Boundaries& expected,
                         const BoundaryFields& fields) {
  const Boundaries none;
  EXPECT_EQ(computed.position_ids, fields.position_ids ? expected.position_ids : none.position_ids);
  EXPECT_EQ(computed.cu_seqlens, fields.cu_seqlens ? expected.cu_seqlens : none.cu_seqlens);
  EXPECT_EQ(computed.max_seqlen, fields.cu_seqlens ? expected.max_seqlen : 0);
  EXPECT_EQ(computed.segment_ids, fields.segment_ids ? expected.segment_ids : none.segment_ids);
  EXPECT_EQ(computed.loss_mask, fields.loss_mask ? expected.loss_mask : none.loss_mask);
}

}  // namespace stoker::testing
