// BatchReader: turns planned rows (core/row_planner.h) into tokens.
//
// For one batch it gathers every document piece the rows need, sorts them by file and position,
// merges pieces of one file that lie close together (neighbouring documents, or the two halves of
// a document cut by a row's end) into one read, reads each run in the file's own type and widens
// it into the rows; EOS and BOS are written in place. Files come from a ShardPool.
//
// Owned by one thread (the loader's reading thread); not thread safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/row_planner.h"
#include "loader/shard_pool.h"

namespace stoker {

class BatchReader {
 public:
  // Pieces of one file at most this many tokens apart are read together.
  static constexpr uint64_t kMergeGap = 512;

  BatchReader(ShardPool* pool, int64_t eos_id, std::optional<int64_t> bos_id);

  // Fills `out`, rows.size() rows of `row_tokens` tokens, from the planned rows.
  void Fill(const std::vector<std::vector<Segment>>& rows, uint64_t row_tokens, int64_t* out);

  uint64_t reads() const { return reads_; }

 private:
  struct Piece {
    uint32_t file;
    uint64_t begin;  // token index in the file
    uint64_t count;
    int64_t* dest;
  };
  void Plan(const Segment& segment, int64_t* row_at);
  void ReadPieces();

  ShardPool* pool_;
  int64_t eos_id_;
  std::optional<int64_t> bos_id_;
  std::vector<Piece> pieces_;
  std::vector<char> scratch_;
  uint64_t reads_ = 0;
};

}  // namespace stoker
