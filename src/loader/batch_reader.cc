#include "loader/batch_reader.h"

#include <algorithm>

#include "base/check.h"
#include "tokens/token_type.h"

namespace stoker {

BatchReader::BatchReader(ShardPool* pool, ReadRouter* router, int64_t eos_id,
                         std::optional<int64_t> bos_id)
    : pool_(pool), router_(router), client_(router->Add(this)), eos_id_(eos_id), bos_id_(bos_id) {}

void BatchReader::Add(const std::vector<std::vector<Segment>>& rows, uint64_t row_tokens,
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
  const uint64_t batch = next_batch_++;
  batches_.push_back({batch, 0});
  QueueRuns(batch);
}

// Framed positions: [BOS] tokens EOS. Writes BOS and EOS now; keeps the tokens as a piece.
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

// The batch's pieces, sorted by file and position, as runs of nearby pieces.
void BatchReader::QueueRuns(uint64_t batch) {
  std::sort(pieces_.begin(), pieces_.end(), [](const Piece& a, const Piece& b) {
    return a.file != b.file ? a.file < b.file : a.begin < b.begin;
  });
  for (size_t i = 0; i < pieces_.size();) {
    const uint32_t file = pieces_[i].file;
    const uint64_t begin = pieces_[i].begin;
    uint64_t end = begin + pieces_[i].count;
    size_t j = i + 1;
    while (j < pieces_.size() && pieces_[j].file == file && pieces_[j].begin <= end + kMergeGap) {
      end = std::max(end, pieces_[j].begin + pieces_[j].count);
      ++j;
    }
    if (free_.empty()) {
      free_.push_back(runs_.size());
      runs_.emplace_back();
    }
    const size_t slot = free_.back();
    free_.pop_back();
    Run& run = runs_[slot];
    run.reader = pool_->Share(file);
    run.begin = begin;
    run.count = end - begin;
    run.batch = batch;
    run.pieces.assign(pieces_.begin() + static_cast<ptrdiff_t>(i),
                      pieces_.begin() + static_cast<ptrdiff_t>(j));
    run.bytes.resize(run.count * TokenTypeSize(run.reader->shard().token_type));
    queued_.push_back(slot);
    ++batches_.back().runs_left;
    i = j;
  }
}

void BatchReader::StartReads() {
  while (!queued_.empty() && router_->has_room()) {
    const size_t slot = queued_.front();
    queued_.pop_front();
    Run& run = runs_[slot];
    ++reads_;
    if (auto request = run.reader->TokenRequest(run.begin, run.count, run.bytes.data())) {
      request->tag = slot;
      router_->Submit(client_, *request);
    } else {
      run.reader->ReadTokensRaw(run.begin, run.count, run.bytes.data());  // through HDF5
      Finished(slot, {.bytes = run.bytes.size(), .error = 0});
    }
  }
}

size_t BatchReader::Take(bool wait) {
  while (true) {
    router_->Start();
    const bool incomplete = !batches_.empty() && batches_.front().runs_left > 0;
    STOKER_ASSERT(!wait || !incomplete || router_->queue().in_flight() > 0,
                  "batch {} waits for {} reads, none of them in flight", batches_.front().batch,
                  batches_.front().runs_left);
    router_->Reap(wait && incomplete);
    if (const size_t complete = TakeComplete(); complete > 0 || !wait || batches_.empty())
      return complete;
  }
}

// Widens a finished run into its rows and frees its slot.
void BatchReader::Finished(uint64_t slot, const ReadResult& read) {
  Run& run = runs_[slot];
  run.reader->CheckTokenRead(read, run.begin, run.count);
  const TokenType type = run.reader->shard().token_type;
  const uint64_t width = TokenTypeSize(type);
  for (const Piece& p : run.pieces) {
    WidenTokens(type, run.bytes.data() + (p.begin - run.begin) * width, p.count, p.dest);
  }
  run.reader.reset();
  free_.push_back(slot);
  STOKER_ASSERT(run.batch >= batches_.front().batch, "run of batch {} after batch {}", run.batch,
                batches_.front().batch);
  --batches_[run.batch - batches_.front().batch].runs_left;
}

size_t BatchReader::TakeComplete() {
  size_t complete = 0;
  while (!batches_.empty() && batches_.front().runs_left == 0) {
    batches_.pop_front();
    ++complete;
  }
  return complete;
}

}  // namespace stoker
