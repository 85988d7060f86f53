#include "loader/context_split.h"

#include <cstdint>
#include <vector>

#include "base/check.h"

namespace stoker {

namespace {

// The values of `whole` (rows x seq_len, row after row) at the chunks' positions.
template <typename T>
std::vector<T> Sliced(const std::vector<T>& whole, uint64_t rows, uint64_t seq_len,
                      const std::vector<uint64_t>& chunk_starts, uint64_t chunk) {
  if (whole.empty()) return {};
  std::vector<T> out;
  out.reserve(rows * chunk * chunk_starts.size());
  for (uint64_t r = 0; r < rows; ++r) {
    for (const uint64_t start : chunk_starts) {
      const auto first = whole.begin() + static_cast<std::ptrdiff_t>(r * seq_len + start);
      out.insert(out.end(), first, first + static_cast<std::ptrdiff_t>(chunk));
    }
  }
  return out;
}

}  // namespace

void SplitForContext(int size, int rank, Batch* batch) {
  if (size <= 1) return;
  const uint64_t seq_len = batch->row_tokens - 1;
  const auto parts = static_cast<uint64_t>(2 * size);
  STOKER_ASSERT(seq_len % parts == 0, "seq_len {} is not a multiple of 2 x cp = {}", seq_len,
                parts);
  const uint64_t chunk = seq_len / parts;
  const std::vector<uint64_t> starts = {static_cast<uint64_t>(rank) * chunk,
                                        (parts - 1 - static_cast<uint64_t>(rank)) * chunk};
  batch->inputs.clear();
  batch->labels.clear();
  for (uint64_t r = 0; r < batch->rows; ++r) {
    const int64_t* row = batch->tokens.data() + r * batch->row_tokens;
    for (const uint64_t start : starts) {
      batch->inputs.insert(batch->inputs.end(), row + start, row + start + chunk);
      batch->labels.insert(batch->labels.end(), row + start + 1, row + start + 1 + chunk);
    }
  }
  Boundaries& b = batch->boundaries;
  b.position_ids = Sliced(b.position_ids, batch->rows, seq_len, starts, chunk);
  b.segment_ids = Sliced(b.segment_ids, batch->rows, seq_len, starts, chunk);
  b.loss_mask = Sliced(b.loss_mask, batch->rows, seq_len, starts, chunk);
}

}  // namespace stoker
