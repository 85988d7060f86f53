#include "loader/batch_reader.h"

#include <algorithm>

#include "base/check.h"
#include "core/token_type.h"

namespace stoker {

BatchReader::BatchReader(ShardPool* pool, int64_t eos_id, std::optional<int64_t> bos_id)
    : pool_(pool), eos_id_(eos_id), bos_id_(bos_id) {}

void BatchReader::Fill(const std::vector<std::vector<Segment>>& rows, uint64_t row_tokens,
                       int64_t* out) {
  pieces_.clear();
  for (size_t r = 0; r < rows.size(); ++r) {
    int64_t* at = out + r * row_tokens;
    for (const Segment& segment : rows[r]) {
      Plan(segment, at);
      at += segment.count;
    }
    STOKER_ASSERT(at == out + (r + 1) * row_tokens, "row {} holds {} tokens", r,
                  at - (out + r * row_tokens));
  }
  ReadPieces();
}

// Framed positions: [BOS] tokens EOS. Writes BOS and EOS now; queues the tokens as a piece.
void BatchReader::Plan(const Segment& segment, int64_t* row_at) {
  const uint64_t lead = bos_id_ ? 1 : 0;
  const uint64_t length = segment.span.length;
  const uint64_t first = segment.first;
  const uint64_t last = segment.first + segment.count;  // exclusive
  if (lead == 1 && first == 0) row_at[0] = *bos_id_;
  if (last == lead + length + 1) row_at[segment.count - 1] = eos_id_;
  const uint64_t token_first = std::max(first, lead) - lead;
  const uint64_t token_last = std::min(last, lead + length) - lead;
  if (token_first >= token_last) return;
  pieces_.push_back({segment.span.file, segment.span.begin + token_first, token_last - token_first,
                     row_at + (token_first + lead - first)});
}

void BatchReader::ReadPieces() {
  std::sort(pieces_.begin(), pieces_.end(), [](const Piece& a, const Piece& b) {
    return a.file != b.file ? a.file < b.file : a.begin < b.begin;
  });
  for (size_t i = 0; i < pieces_.size();) {
    // The run [begin, end) of file covers pieces i .. j-1.
    const uint32_t file = pieces_[i].file;
    const uint64_t begin = pieces_[i].begin;
    uint64_t end = begin + pieces_[i].count;
    size_t j = i + 1;
    while (j < pieces_.size() && pieces_[j].file == file && pieces_[j].begin <= end + kMergeGap) {
      end = std::max(end, pieces_[j].begin + pieces_[j].count);
      ++j;
    }
    ShardReader& reader = pool_->Get(file);
    const TokenType type = reader.shard().token_type;
    const uint64_t width = TokenTypeSize(type);
    scratch_.resize((end - begin) * width);
    reader.ReadTokensRaw(begin, end - begin, scratch_.data());
    ++reads_;
    for (; i < j; ++i) {
      const Piece& p = pieces_[i];
      WidenTokens(type, scratch_.data() + (p.begin - begin) * width, p.count, p.dest);
    }
  }
}

}  // namespace stoker
