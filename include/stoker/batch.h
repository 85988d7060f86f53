// A Batch: one rank's rows of tokens for one training step, what they are made of (the document
// pieces) and, when the trainer asks for them, where documents begin and end in each row.
//
// Rows hold row_tokens = seq_len + 1 tokens; a trainer's inputs are a row without its last token
// and its labels the row without its first, so every per-token field below is [rows, seq_len]
// over the inputs. Documents are framed as [BOS] tokens EOS and packed one after another; a
// document cut by a row's end goes on in the next row.
//
// The boundary fields (docs/loader.md, "Document boundaries") are computed by the loader's
// reading thread from the pieces, never from token values, so a document whose text holds the
// EOS id, or a corpus without BOS, changes nothing. Each is computed only when
// LoaderConfig::boundaries asks for it; a batch carries none by default. Plain values; no
// libtorch (stoker/torch.h makes tensors of them without copying).
#pragma once

#include <cstdint>
#include <vector>

namespace stoker {

// A run of one document's tokens within a batch: framed positions [first, first + count) of
// document `doc` (numbered within its dataset) in `epoch`, at tokens [row_offset, row_offset +
// count) of row `row` (a batch holds at most 2^31 tokens: both fit 32 bits).
struct DocPiece {
  uint32_t dataset = 0;
  uint64_t doc = 0;
  uint64_t epoch = 0;
  uint64_t first = 0;
  uint64_t count = 0;
  uint32_t row = 0;
  uint32_t row_offset = 0;
};

// Where position_ids start counting in a document that goes on from the previous row (or, after
// a resume on another number of ranks, the rest of a document another rank began).
enum class PositionIds {
  // At 0 again, where its piece begins: a row's positions are below seq_len, as a model with
  // learned or bounded position embeddings needs, and attention masked at documents never
  // reaches the part of the document in the previous row anyway. The default.
  kRestartEachRow,
  // At the document's own framed position (DocPiece::first): positions may reach the longest
  // document's length.
  kContinue,
};

// Which boundary fields the loader computes for each batch. All off: none, at no cost.
struct BoundaryFields {
  bool position_ids = false;
  PositionIds positions = PositionIds::kRestartEachRow;
  bool cu_seqlens = false;  // and max_seqlen
  bool segment_ids = false;
  bool loss_mask = false;

  // Every field, position ids counted as `positions` says.
  static constexpr BoundaryFields All(PositionIds positions = PositionIds::kRestartEachRow) {
    return {.position_ids = true,
            .positions = positions,
            .cu_seqlens = true,
            .segment_ids = true,
            .loss_mask = true};
  }
  bool Any() const { return position_ids || cu_seqlens || segment_ids || loss_mask; }
  bool operator==(const BoundaryFields&) const = default;
};

// Document boundaries over a batch's inputs (rows x seq_len, row after row). A field is empty
// unless BoundaryFields asked for it.
struct Boundaries {
  // Each input token's position within its document: 0 at the document's first framed token
  // (BOS, if any); where a piece goes on with a document, 0 (kRestartEachRow) or its framed
  // position (kContinue).
  std::vector<int64_t> position_ids;
  // Offsets into the flattened inputs where a sequence starts, for variable-length attention
  // kernels (FlashAttention's cu_seqlens): 0, every row start and every document start within
  // the inputs, in ascending order, and rows x seq_len last. max_seqlen is the longest span.
  std::vector<int32_t> cu_seqlens;
  int32_t max_seqlen = 0;
  // 1 for the tokens of a row's first document piece, 2 for the next, ...: documents are the
  // runs of equal ids, and two tokens may attend to each other when their ids are equal.
  std::vector<int32_t> segment_ids;
  // 1.0 or 0.0 per label, to multiply the per-token loss with: 0.0 where the label is the first
  // token of another document than its input's (the input is the last document's EOS, the label
  // the next one's BOS or first token), 1.0 everywhere else.
  std::vector<float> loss_mask;
};

struct Batch {
  uint64_t step = 0;                     // 1 for the first batch of a run that started from scratch
  uint64_t rows = 0;                     // batch_size
  uint64_t row_tokens = 0;               // seq_len + 1
  std::vector<int64_t> tokens;           // rows * row_tokens token ids, row after row
  std::vector<uint64_t> dataset_tokens;  // per dataset (corpus order): tokens in this batch
  std::vector<DocPiece> pieces;          // what the rows are made of, row after row
  Boundaries boundaries;                 // as LoaderConfig::boundaries asks

  // Context parallelism (a layout with cp > 1, stoker/layout.h): this rank's part of each row,
  // for causal attention balanced over the ranks. A row's inputs are cut into 2 x cp chunks of
  // seq_len / (2 x cp) tokens, and the rank at cp coordinate c takes chunks c and 2 x cp - 1 - c:
  // `inputs` holds them, rows x seq_len / cp tokens, and `labels` the label of each. The
  // per-token boundary fields (position_ids, segment_ids, loss_mask) are then sliced the same
  // way; cu_seqlens and max_seqlen stay those of the whole rows, and `tokens` holds the whole
  // rows. Both empty without context parallelism.
  std::vector<int64_t> inputs;
  std::vector<int64_t> labels;
};

}  // namespace stoker
