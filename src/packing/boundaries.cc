#include "packing/boundaries.h"

#include <algorithm>
#include <cstddef>
#include <limits>

#include "base/check.h"

namespace stoker {

void AppendPieces(const std::vector<Segment>& segments, uint32_t row,
                  std::vector<DocPiece>* pieces) {
  uint64_t offset = 0;
  for (const Segment& s : segments) {
    pieces->push_back({.dataset = s.dataset,
                       .doc = s.doc,
                       .epoch = s.epoch,
                       .first = s.first,
                       .count = s.count,
                       .row = row,
                       .row_offset = static_cast<uint32_t>(offset)});
    offset += s.count;
  }
}

namespace {

// Fills the fields of one row at a time: its inputs, [0, seq_len) of the row, are [at, at +
// seq_len) of the flattened batch.
class RowFields {
 public:
  RowFields(const BoundaryFields& fields, uint64_t seq_len, Boundaries* out)
      : fields_(fields), seq_len_(seq_len), out_(out) {}

  void Add(const DocPiece* begin, const DocPiece* end, uint64_t row) {
    const uint64_t at = row * seq_len_;
    int32_t segment = 0;
    uint64_t expected = 0;
    for (const DocPiece* p = begin; p != end; ++p) {
      // A piece within a row may go on with a document too (first > 0): the rest of a document
      // another rank began, after a resume on another number of ranks (state/rescale.h).
      STOKER_ASSERT(
          p->row_offset == expected && p->count > 0 && p->count <= seq_len_ + 1 - expected,
          "piece of document {} at {} of row {} (count {}), expected at {}", p->doc, p->row_offset,
          row, p->count, expected);
      expected += p->count;
      // The label of the input before a piece's first token is that token: it crosses from
      // one document into another.
      if (fields_.loss_mask && p->row_offset > 0) out_->loss_mask[at + p->row_offset - 1] = 0.0f;
      if (p->row_offset >= seq_len_) continue;  // begins at the row's last token, a label only
      ++segment;
      const uint64_t first = at + p->row_offset;
      const uint64_t last = at + std::min(p->row_offset + p->count, seq_len_);  // exclusive
      if (fields_.position_ids) {
        int64_t position =
            fields_.positions == PositionIds::kContinue ? static_cast<int64_t>(p->first) : 0;
        for (uint64_t i = first; i < last; ++i) out_->position_ids[i] = position++;
      }
      if (fields_.segment_ids) {
        std::fill(out_->segment_ids.begin() + static_cast<ptrdiff_t>(first),
                  out_->segment_ids.begin() + static_cast<ptrdiff_t>(last), segment);
      }
      if (fields_.cu_seqlens) out_->cu_seqlens.push_back(static_cast<int32_t>(first));
    }
    STOKER_ASSERT(expected == seq_len_ + 1, "row {} holds {} tokens, not {}", row, expected,
                  seq_len_ + 1);
  }

 private:
  const BoundaryFields& fields_;
  uint64_t seq_len_;
  Boundaries* out_;
};

}  // namespace

Boundaries ComputeBoundaries(const std::vector<DocPiece>& pieces, uint64_t rows,
                             uint64_t row_tokens, const BoundaryFields& fields) {
  STOKER_ASSERT(row_tokens >= 2, "rows of {} tokens", row_tokens);
  const uint64_t seq_len = row_tokens - 1;
  const uint64_t inputs = rows * seq_len;
  // LoaderConfig::Problems() keeps a batch within 2^31 tokens: offsets fit cu_seqlens' int32.
  STOKER_ASSERT(inputs <= std::numeric_limits<int32_t>::max(), "{} inputs in a batch", inputs);
  Boundaries out;
  if (fields.position_ids) out.position_ids.resize(inputs);
  if (fields.segment_ids) out.segment_ids.resize(inputs);
  if (fields.loss_mask) out.loss_mask.assign(inputs, 1.0f);
  if (fields.cu_seqlens) out.cu_seqlens.reserve(pieces.size() + 1);  // a start per piece at most
  RowFields row_fields(fields, seq_len, &out);
  const DocPiece* begin = pieces.data();
  const DocPiece* const end = pieces.data() + pieces.size();
  for (uint64_t r = 0; r < rows; ++r) {
    const DocPiece* row_end = begin;
    while (row_end != end && row_end->row == r) ++row_end;
    row_fields.Add(begin, row_end, r);
    begin = row_end;
  }
  STOKER_ASSERT(begin == end, "pieces of row {} in a batch of {} rows", begin->row, rows);
  if (fields.cu_seqlens) {
    out.cu_seqlens.push_back(static_cast<int32_t>(inputs));
    for (size_t i = 1; i < out.cu_seqlens.size(); ++i) {
      out.max_seqlen = std::max(out.max_seqlen, out.cu_seqlens[i] - out.cu_seqlens[i - 1]);
    }
  }
  return out;
}

}  // namespace stoker
